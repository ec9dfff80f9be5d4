"""Timing libraries side by side: one worker process per library, alternating rounds.

Each library runs in a worker process of its own (they would share XLA's CPU thread pool in
one process), which warms up (compiles) and then, for every line ``N`` on its stdin, times
``N`` generations and prints the seconds per generation. The parent alternates timing rounds
between the workers, so that drift of the machine hits all of them alike.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Callable


def serve(runner: Callable[[int], float]) -> None:
    """The worker's side: ``runner(n)`` returns the seconds ``n`` generations took."""
    runner(1)  # warm up: compile
    print("ready", flush=True)
    for line in sys.stdin:
        n = int(line)
        print(runner(n) / n, flush=True)


def time_workers(
    script: str, workers: dict[str, list[str]], generations: int, rounds: int
) -> dict[str, list[float]]:
    """Start ``python script *args`` per worker name; return its seconds/gen of every round."""
    processes = {
        name: subprocess.Popen(
            [sys.executable, script, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name, args in workers.items()
    }
    try:
        for name, process in processes.items():
            if process.stdout.readline().strip() != "ready":
                raise RuntimeError(f"{name} worker failed to start (exit {process.wait()})")
        times: dict[str, list[float]] = {name: [] for name in workers}
        for _ in range(rounds):
            for name, process in processes.items():
                process.stdin.write(f"{generations}\n")
                process.stdin.flush()
                times[name].append(float(process.stdout.readline()))
    finally:
        for process in processes.values():
            if process.stdin:
                process.stdin.close()
            process.wait()
    return times


def summary(times: dict[str, list[float]]) -> dict[str, float]:
    """Median seconds per generation of each worker."""
    return {name: statistics.median(t) for name, t in times.items()}


def machine() -> dict[str, object]:
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "backend": "cpu"}
