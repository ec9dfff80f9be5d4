"""Worker processes that step a task's environments, and the pools kept per task.

A :class:`WorkerPool` splits each group of environments evenly over its workers; ``submit``
sends a group's actions and returns at once, ``collect`` waits for that group's results, so
the caller computes one group's actions while the workers step another. A worker that dies,
hangs past ``timeout`` or whose environment raises stops the evaluation with a
:class:`HostError` naming it; the pool is then closed, and the next evaluation starts a new
one.
"""

from __future__ import annotations

import atexit
import itertools
import os
import subprocess
import sys
import time
from collections.abc import Callable, Hashable
from multiprocessing.connection import Connection
from typing import Any, Protocol

import numpy as np

from evolax.host.envs import GymnasiumSpec
from evolax.sharding import cpu_cores

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
"""The script each worker process runs."""

POLL_S = 0.5
"""How often a waiting pool checks that its workers are alive, in seconds."""


class HostError(RuntimeError):
    """A host environment or worker failed; the evaluation it served cannot finish."""


class Pool(Protocol):
    """What the host rollout needs of a pool of workers (local processes or Ray actors)."""

    n_workers: int

    @property
    def closed(self) -> bool: ...
    def reset(self, group: int, seeds: np.ndarray) -> np.ndarray: ...
    def submit(self, group: int, actions: np.ndarray) -> None: ...
    def collect(self, group: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def close(self) -> None: ...


def shares(n: int, n_workers: int) -> list[slice]:
    """The consecutive slices of ``n`` environments that each worker holds (the first
    ``n % n_workers`` one more; workers without environments get none)."""
    bounds = np.cumsum([0] + [n // n_workers + (i < n % n_workers) for i in range(n_workers)])
    return [slice(int(a), int(b)) for a, b in itertools.pairwise(bounds) if b > a]


class WorkerPool:
    """``n_workers`` processes, each with its share of every group's environments.

    Each worker is a new Python running :mod:`evolax.host.worker` as a script (not a
    ``fork`` of this process, whose JAX threads make forking unsafe, nor a ``spawn``, which
    would import the caller's ``__main__`` again), talking over two pipes.

    Args:
        spec: how each worker makes its environments.
        n_workers: worker processes, positive.
        timeout: seconds to wait for one group's results before calling the worker hung.
    """

    def __init__(self, spec: GymnasiumSpec, n_workers: int, timeout: float):
        self.spec, self.n_workers, self.timeout = spec, n_workers, timeout
        self.workers: list[tuple[subprocess.Popen, Connection, Connection]] = []
        self.groups: dict[int, list[slice]] = {}
        for _ in range(n_workers):
            theirs_in, ours_out = os.pipe()
            ours_in, theirs_out = os.pipe()
            process = subprocess.Popen(
                [sys.executable, WORKER, str(theirs_in), str(theirs_out)],
                pass_fds=(theirs_in, theirs_out),
                stdin=subprocess.DEVNULL,
            )
            os.close(theirs_in)
            os.close(theirs_out)
            send = Connection(ours_out, readable=False)
            self.workers.append((process, Connection(ours_in, writable=False), send))
            send.send((spec.env_id, spec.kwargs))

    def _fail(self, message: str) -> HostError:
        self.close()
        return HostError(message)

    def _receive(self, worker: int) -> Any:
        process, receive, _ = self.workers[worker]
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                if receive.poll(POLL_S):
                    status, result = receive.recv()
                    break
            except (EOFError, OSError):
                try:
                    process.wait(POLL_S)
                except subprocess.TimeoutExpired:
                    pass
            if process.poll() is not None:
                raise self._fail(
                    f"host worker {worker} (pid {process.pid}) of {self.spec.env_id} died "
                    f"(exit code {process.returncode}); its episodes are lost and the run "
                    "stops here (resume it from its last checkpoint)"
                )
            if time.monotonic() > deadline:
                raise self._fail(
                    f"host worker {worker} (pid {process.pid}) of {self.spec.env_id} sent "
                    f"nothing for {self.timeout:g} s (the task's timeout); the run stops here"
                )
        if status == "error":
            raise self._fail(f"host worker {worker}: {result}")
        return result

    def _send(self, worker: int, message: tuple) -> None:
        try:
            self.workers[worker][2].send(message)
        except (BrokenPipeError, OSError):
            self._receive(worker)  # raises the worker's death
            raise

    def reset(self, group: int, seeds: np.ndarray) -> np.ndarray:
        """Start ``group``'s episodes, one per seed; returns ``f32[len(seeds), obs_dim]``."""
        parts = self.groups[group] = shares(len(seeds), self.n_workers)
        for worker, part in enumerate(parts):
            self._send(worker, ("reset", group, seeds[part]))
        return np.concatenate([self._receive(worker) for worker in range(len(parts))])

    def submit(self, group: int, actions: np.ndarray) -> None:
        """Send ``group``'s actions (one per environment, in ``reset``'s order)."""
        for worker, part in enumerate(self.groups[group]):
            self._send(worker, ("step", group, actions[part]))

    def collect(self, group: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Wait for ``group``'s step: ``(obs f32[n, obs_dim], reward f64[n], done bool[n])``."""
        results = [self._receive(worker) for worker in range(len(self.groups[group]))]
        obs, reward, done = zip(*results, strict=True)
        return np.concatenate(obs), np.concatenate(reward), np.concatenate(done)

    def close(self) -> None:
        """Stop the workers (at once if they do not stop within a second)."""
        for _, _, send in self.workers:
            try:
                send.send(None)
            except (BrokenPipeError, OSError):
                pass
        for process, receive, send in self.workers:
            try:
                process.wait(1.0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            receive.close()
            send.close()
        self.workers = []

    @property
    def closed(self) -> bool:
        return not self.workers


_POOLS: dict[Hashable, Pool] = {}


def get_pool(key: Hashable, start: Callable[[], Pool]) -> Pool:
    """The pool kept under ``key``, started with ``start()`` the first time (and again after
    it failed or was closed)."""
    pool = _POOLS.get(key)
    if pool is None or pool.closed:
        pool = _POOLS[key] = start()
    return pool


def close_pools() -> None:
    """Stop every host worker this process started (also done when Python exits)."""
    for pool in list(_POOLS.values()):
        pool.close()
    _POOLS.clear()


def default_workers() -> int:
    """The cores this process may use."""
    return cpu_cores()


atexit.register(close_pools)
