"""Timing libraries side by side: one worker process per library, alternating rounds.

Each library runs in a worker process of its own (they would share XLA's CPU thread pool in
one process), which warms up (compiles) and then, for every line ``N`` on its stdin, times
``N`` generations and prints the seconds per generation. The parent alternates timing rounds
between the workers, so that drift of the machine hits all of them alike.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

from results_table import write_results


def serve(runner: Callable[[int], float], info: Callable[[], dict] | None = None) -> None:
    """The worker's side: ``runner(n)`` returns the seconds ``n`` generations took; ``info()``,
    if given, is measured after the warm-up and sent to the parent as JSON."""
    runner(1)  # warm up: compile
    print("ready", json.dumps(info() if info else {}), flush=True)
    for line in sys.stdin:
        n = int(line)
        print(runner(n) / n, flush=True)


def xla_defaults() -> None:
    """Undo what importing evolax asks of XLA (a CPU vector width, :mod:`evolax.xla_cpu`), so
    that another library runs as its users run it. Call before JAX's first computation."""
    import evolax  # noqa: F401  (imported first: importing it later would ask again)
    from evolax.xla_cpu import VECTOR_WIDTH_FLAG

    flags = os.environ.get("XLA_FLAGS", "").replace(f"{VECTOR_WIDTH_FLAG}=512", "")
    os.environ["XLA_FLAGS"] = flags.strip()


def evolax_timer(trainer, state) -> Callable[[int], float]:
    """``generations(n)`` for an evolax ``Trainer``, continuing from ``state``, placed as a
    user places it (``evolax.place``: the evaluation layout measured once, or cached).

    The trainer is a ``filter_jit`` argument (datasets are not baked into the program), and
    each new ``n`` is compiled by one untimed call before it is timed.
    """
    import equinox as eqx
    import jax

    import evolax

    if hasattr(evolax, "place"):  # an evolax before it (a --baseline) placed itself at init
        trainer = evolax.place(trainer, state)

    run = eqx.filter_jit(lambda trainer, state, n: trainer.run(state, n))  # n: static
    compiled: set[int] = set()

    def generations(n: int) -> float:
        nonlocal state
        if n not in compiled:
            jax.block_until_ready(run(trainer, state, n))
            compiled.add(n)
        start = time.perf_counter()
        state, _ = jax.block_until_ready(run(trainer, state, n))
        return time.perf_counter() - start

    return generations


def baseline(args, workers: dict[str, list[str]], labels: dict[str, str]) -> dict[str, Path]:
    """With ``--baseline TREE``: one more worker, the first evolax worker's, that imports
    evolax from ``TREE/src`` (another checkout: a version timed against this one in the same
    run); its name, ``baseline evolax``, keeps it out of the speed-ups. Returns
    ``time_workers``'s ``elsewhere``."""
    if args.baseline is None:
        return {}
    evolax_worker = next(name for name in workers if name.startswith("evolax"))
    name = f"baseline evolax ({args.baseline.name})"
    workers[name] = workers[evolax_worker]
    labels[name] = f"evolax at {args.baseline}, as the line before"
    return {name: args.baseline.resolve()}


def evojax_timer(sim, solver) -> Callable[[int], float]:
    """``generations(n)`` for EvoJAX: its own ask / ``SimManager.eval_params`` / tell loop."""
    import jax

    def generations(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            scores, _ = sim.eval_params(params=solver.ask(), test=False)
            solver.tell(fitness=scores)
        jax.block_until_ready(solver.best_params)
        return time.perf_counter() - start

    return generations


def time_workers(
    script: str,
    workers: dict[str, list[str]],
    generations: int,
    rounds: int,
    infos: dict[str, dict] | None = None,
    elsewhere: dict[str, Path] | None = None,
    environments: dict[str, dict[str, str]] | None = None,
) -> dict[str, list[float]]:
    """Start ``python script *args`` per worker name; return its seconds/gen of every round
    (and put what each worker's ``serve`` sent in ``infos``, if given). A worker named in
    ``elsewhere`` imports evolax from another checkout's ``src/``, to time one version of
    evolax against another in the same run; one named in ``environments`` starts with those
    variables set too."""
    elsewhere, environments = elsewhere or {}, environments or {}
    processes = {}
    try:
        for name, args in workers.items():  # one at a time: warm-ups do not share the cores
            env = dict(os.environ) | environments.get(name, {})
            if name in elsewhere:
                env["PYTHONPATH"] = str(elsewhere[name] / "src")
            process = processes[name] = subprocess.Popen(
                [sys.executable, script, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            line = _reply(process, lambda line: line.startswith("ready"))
            if line is None:
                process.stdin.close()
                raise RuntimeError(f"{name} worker failed to start (exit {process.wait()})")
            if infos is not None:
                infos[name] = json.loads(line.partition(" ")[2] or "{}")
        times: dict[str, list[float]] = {name: [] for name in workers}
        for _ in range(rounds):
            for name, process in processes.items():
                process.stdin.write(f"{generations}\n")
                process.stdin.flush()
                line = _reply(process, _is_number)
                if line is None:
                    raise RuntimeError(f"{name} worker stopped (exit {process.wait()})")
                times[name].append(float(line))
    finally:
        for process in processes.values():
            if process.stdin:
                process.stdin.close()
            process.wait()
    return times


def _reply(process: subprocess.Popen, wanted: Callable[[str], bool]) -> str | None:
    """The worker's next stdout line that is ``wanted`` (libraries may print other lines
    there, e.g. MuJoCo's import notes); ``None`` at its end."""
    for line in process.stdout:
        if wanted(line.strip()):
            return line.strip()
    return None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def summary(times: dict[str, list[float]]) -> dict[str, float]:
    """Median seconds per generation of each worker."""
    return {name: statistics.median(t) for name, t in times.items()}


def speed_table(rows: list[dict]) -> str:
    """The docs' table of a side-by-side run: one line per worker, its seconds per generation
    (and, where the rows have it, its speed-up over the baseline library)."""
    if not all("speedup" in row for row in rows):
        lines = ["| library | s / generation |", "|---|---|"]
        lines += [f"| {row['library']} | {row['seconds_per_generation']:.3f} |" for row in rows]
        return "\n".join(lines)
    lines = ["| library | s / generation | speed-up over the baseline |", "|---|---|---|"]
    lines += [
        f"| {row['library']} | {row['seconds_per_generation']:.3f} | {row['speedup']:.1f}x |"
        for row in rows
    ]
    return "\n".join(lines)


def report(
    out: Path,
    benchmark: str,
    config: dict,
    times: dict[str, list[float]],
    generations: int,
    labels: dict[str, str],
    baseline_workers: list[str] | None = None,
    baseline: str = "evojax",
) -> float:
    """Write the result to ``out`` (JSON) and its table (``speed_table``, ``labels[worker]`` for
    each worker's line) beside it as ``.md``, print the table; return evolax's speed-up over the
    ``baseline`` library.

    Worker names start with the library's name; each library counts with its fastest worker
    (the baseline: of ``baseline_workers``, when given).
    """
    per_gen = summary(times)
    evolax_best = min(t for name, t in per_gen.items() if name.startswith("evolax"))
    counted = baseline_workers or [name for name in per_gen if name.startswith(baseline)]
    baseline_best = min(per_gen[name] for name in counted)
    ratio = baseline_best / evolax_best
    rows = [
        {
            "worker": name,
            "library": labels[name],
            "seconds_per_generation": seconds,
            "speedup": baseline_best / seconds,
        }
        for name, seconds in per_gen.items()
    ]
    write_results(
        out,
        benchmark,
        rows,
        speed_table,
        config=config,
        generations_per_round=generations,
        rounds=len(next(iter(times.values()))),
        seconds_per_generation=per_gen,
        all_rounds=times,
        **{f"speedup_evolax_over_{baseline}": ratio},
        speedup_over_each_worker={name: t / evolax_best for name, t in per_gen.items()},
        versions={name: version(name) for name in ("evolax", baseline, "jax")},
    )
    print(speed_table(rows))
    import jax  # the parent's backend after the workers are done: the one they ran on

    device = jax.default_backend()
    where = f"{os.cpu_count()} CPU cores" if device == "cpu" else jax.devices()[0].device_kind
    print(f"\nevolax is {ratio:.1f}x {baseline}'s throughput ({where})")
    for name, seconds in per_gen.items():
        if name.startswith(baseline) and name not in counted:
            print(f"({seconds / evolax_best:.1f}x {name})")
    return ratio
