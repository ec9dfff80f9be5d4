"""What :func:`evolax.train` does between compiled chunks: hooks over the run's progress.

The driver runs a chunk of generations, then every hook's :meth:`Hook.after_chunk` in order;
chunks end at every multiple of each hook's ``interval`` and at the last generation. The
standard hooks log the generations (:class:`LogGenerations`), test the best solution
(:class:`TestBest`) and save checkpoints (:class:`SaveCheckpoints`); pass ``hooks=`` to
``train`` to add your own after them, or to replace them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

import jax
import jax.numpy as jnp
import numpy as np

from evolax.algorithms.base import Algorithm
from evolax.checkpoint import CheckpointStore, flatten_state, unflatten_state
from evolax.layout import Layout
from evolax.logging import Sink, write_json_atomic
from evolax.placement import tester
from evolax.sharding import to_host
from evolax.trainer import Trainer, TrainState
from evolax.validation import check_positive_int

TRAIN_STREAM, TEST_STREAM = 0, 1
T = TypeVar("T")


def held_out_key(seed: int, generation: int) -> jax.Array:
    """Key of the test at ``generation``: a stream training never draws from."""
    return jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), TEST_STREAM), generation)


@dataclasses.dataclass
class Progress:
    """A run as the hooks see it after each chunk (host-side, mutable).

    ``state`` has a leading seed axis when ``seeds`` is a list; ``history`` is the chunk's
    per-generation metrics (``[n]``, or ``[seeds, n]``); ``tests`` each seed's last test
    (``test_mean``, ``test_std``, ``test_min``, ``test_max``: of the objectives' sum, and
    ``test_mean_i`` per objective of a vector reward), ``best_test`` each seed's
    best test mean and ``improved`` whether this chunk's test beat it.
    """

    trainer: Trainer
    n_generations: int
    seeds: list[int] | None
    first_seed: int
    run_dir: Path | None
    store: CheckpointStore | None  # process 0's, with a run_dir
    layout: Layout
    state: TrainState
    best_state: TrainState
    generation: int
    best_test: np.ndarray
    sinks: list[Sink]
    elapsed: float = 0.0  # seconds of the run before this process started it
    wall_time: float = 0.0  # seconds of the run at the end of this chunk
    history: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    chunk: dict[str, float] = dataclasses.field(default_factory=dict)
    tests: list[dict[str, float]] = dataclasses.field(default_factory=list)
    improved: np.ndarray = dataclasses.field(init=False)  # no seed, until a test
    stopping: str | None = None  # the signal that asked the run to stop after this chunk
    config: dict[str, Any] | None = None  # the configuration recorded (config.json)

    def __post_init__(self):
        self.improved = np.zeros(self.n_seeds, bool)

    @property
    def n_seeds(self) -> int:
        return 1 if self.seeds is None else len(self.seeds)

    def last_tests(self) -> list[dict[str, float]]:
        """Each seed's last test; ``{}`` for each before the first."""
        return self.tests or [{} for _ in range(self.n_seeds)]

    def tags(self) -> list[dict[str, int]]:
        """What names each seed's rows: nothing for one seed, its ``seed`` for several."""
        return [{}] if self.seeds is None else [{"seed": s} for s in self.seeds]

    def log(self, row: dict[str, Any]) -> None:
        """Write ``row`` to every sink."""
        for sink in self.sinks:
            sink.write(row)


class Hook:
    """Something done after chunks. ``interval``: generations between the chunk ends it
    needs (``None``: any)."""

    name: ClassVar[str] = "hook"
    interval: int | None = None

    def after_chunk(self, run: Progress) -> None:
        """Called after every chunk, in the order of the hooks."""

    def after_run(self, run: Progress) -> None:
        """Called once at the end of the run (also one asked to stop), after its summary."""


@dataclasses.dataclass
class LogGenerations(Hook):
    """A ``train`` row per generation (its metrics; a chunk's run time is shared evenly) and
    a ``chunk`` row (compile and run seconds, env steps/s); chunks of ``interval`` at most."""

    interval: int = 10
    name: ClassVar[str] = "log"

    def __post_init__(self):
        check_positive_int("log_interval", self.interval)

    def after_chunk(self, run: Progress) -> None:
        n, run_s = int(run.chunk["generations"]), run.chunk["run_s"]
        per_seed = [run.history]
        if run.seeds is not None:
            per_seed = [seed_slice(run.history, j) for j in range(run.n_seeds)]
        start = run.generation - n
        for i in range(n):
            for tag, values in zip(run.tags(), per_seed, strict=True):
                row = {k: float(v[i]) for k, v in values.items()}
                row["wall_time"] = run.wall_time - run_s * (n - 1 - i) / n
                run.log({"kind": "train", "generation": start + i + 1, **tag, **row})
        run.log({"kind": "chunk", **run.chunk, "wall_time": run.wall_time})


@dataclasses.dataclass
class TestBest(Hook):
    """Every ``interval`` generations and at the last, test the best solution on
    ``n_episodes`` held-out episodes (:meth:`Trainer.test` with :func:`held_out_key`):
    a ``test`` row per seed, and ``run.tests``, ``run.best_test``, ``run.improved``."""

    interval: int = 100
    n_episodes: int = 100
    name: ClassVar[str] = "test"
    _test: Any = dataclasses.field(default=None, repr=False)

    def __post_init__(self):
        check_positive_int("test_interval", self.interval)
        check_positive_int("n_test_episodes", self.n_episodes)

    def after_chunk(self, run: Progress) -> None:
        run.improved = np.zeros(run.n_seeds, bool)
        if run.generation % self.interval and run.generation != run.n_generations:
            return
        trainer, n = run.trainer, self.n_episodes
        if self._test is None or self._test[0] is not trainer:  # compiled once per run
            self._test = (trainer, tester(trainer, n, batched=run.seeds is not None))
        seeds = [run.first_seed] if run.seeds is None else run.seeds
        keys = jnp.stack([held_out_key(s, run.generation) for s in seeds])
        scores = to_host(self._test[1](run.state, keys[0] if run.seeds is None else keys))
        scores = scores[None] if run.seeds is None else scores
        run.tests = [_test_row(s) for s in scores]
        for tag, test in zip(run.tags(), run.tests, strict=True):
            row = {"kind": "test", "generation": run.generation, **tag, **test}
            run.log({**row, "wall_time": run.wall_time})
        means = np.array([t["test_mean"] for t in run.tests])
        run.improved = means > run.best_test
        run.best_test = np.maximum(run.best_test, means)


def _test_row(scores: np.ndarray) -> dict[str, float]:
    """One seed's test statistics from its returns, ``[episodes]`` or ``[episodes, m]``: of
    each episode's total over the objectives, and each objective's mean."""
    per_objective = scores.reshape(len(scores), -1)
    total = per_objective.sum(axis=1)
    row = {
        "test_mean": float(total.mean()),
        "test_std": float(total.std()),
        "test_min": float(total.min()),
        "test_max": float(total.max()),
    }
    if scores.ndim > 1:
        row.update({f"test_mean_{i}": float(v) for i, v in enumerate(per_objective.mean(0))})
    return row


@dataclasses.dataclass
class SaveCheckpoints(Hook):
    """Save the whole state every ``interval`` generations, at the last, and when the run is
    asked to stop; and the best by test score when a test improved it (each seed's best, for
    several). Checkpoints hold what resuming needs (wall time, layout, best test)."""

    interval: int = 100
    name: ClassVar[str] = "checkpoint"

    def __post_init__(self):
        check_positive_int("checkpoint_interval", self.interval)

    def after_chunk(self, run: Progress) -> None:
        store, improved = run.store, run.improved
        if store is None:
            return
        due = run.generation % self.interval == 0 or run.generation == run.n_generations
        periodic = due or run.stopping is not None  # nothing is lost on a stop
        if not (periodic or improved.any()):
            return
        meta: dict[str, Any] = {
            "wall_time": run.wall_time,
            "layout": dataclasses.asdict(run.layout),
        }
        if run.config is not None:  # what a resume checks its configuration against
            meta["config"] = run.config
        last = run.last_tests()
        if run.seeds is None:
            meta.update(best_test_mean=float(run.best_test[0]), **last[0])
            store.save(run.state, meta, latest=periodic, best=bool(improved[0]))
            return
        meta.update(seeds=run.seeds, best_test_mean=run.best_test.tolist())
        meta["test_mean"] = [t.get("test_mean") for t in last]
        run.best_state = where_seeds(improved, run.state, run.best_state)
        if periodic:
            store.save(run.state, meta, latest=True)
        if improved.any():
            store.save(run.best_state, meta, latest=False, best=True)


@dataclasses.dataclass
class WriteOutputs(Hook):
    """At the end of a run, what its algorithm declares (:meth:`Algorithm.outputs
    <evolax.algorithms.Algorithm.outputs>`: a multi-objective population's front, a QD
    archive) as ``NAME.json`` in the run folder, for ``evolax plot``: with the generation, and
    in a run of several seeds each seed's values in a list (and the ``seeds``)."""

    name: ClassVar[str] = "outputs"

    def after_run(self, run: Progress) -> None:
        declares = type(run.trainer.algorithm).outputs is not Algorithm.outputs
        if run.store is None or not declares:  # no copy of a large state for nothing
            return
        algo_state = to_host(run.state.algo_state)
        states = (
            [algo_state]
            if run.seeds is None
            else [seed_slice(algo_state, j) for j in range(run.n_seeds)]
        )
        outputs = [run.trainer.algorithm.outputs(state) for state in states]
        for name, first in outputs[0].items():
            record: dict[str, Any] = {"generation": run.generation, **first.shared}
            if run.seeds is None:
                record.update(first.per_seed)
            else:
                record.update({k: [o[name].per_seed[k] for o in outputs] for k in first.per_seed})
                record["seeds"] = run.seeds
            write_json_atomic(cast(Path, run.run_dir) / f"{name}.json", record)


def seed_slice(tree: T, index: int) -> T:
    """One seed's part (``index`` along the leading seed axis) of a batched state (or of
    batched metrics)."""
    return cast(T, jax.tree.map(lambda leaf: leaf[index], tree))


def where_seeds(mask: np.ndarray, new: TrainState, old: TrainState) -> TrainState:
    """Per seed (leading axis), ``new`` where ``mask`` else ``old``."""
    picked = [
        np.where(mask.reshape(-1, *[1] * (a.ndim - 1)), a, b)
        for a, b in zip(flatten_state(new), flatten_state(old), strict=True)
    ]
    return unflatten_state(new, picked)


def standard_hooks(
    log_interval: int = 10,
    test_interval: int = 100,
    n_test_episodes: int = 100,
    checkpoint_interval: int = 100,
) -> list[Hook]:
    """The hooks :func:`evolax.train` runs unless given others: log, test, checkpoint, and
    the algorithm's outputs at the end."""
    return [
        LogGenerations(log_interval),
        TestBest(test_interval, n_test_episodes),
        SaveCheckpoints(checkpoint_interval),
        WriteOutputs(),
    ]


__all__ = [
    "Hook",
    "LogGenerations",
    "Progress",
    "SaveCheckpoints",
    "TestBest",
    "WriteOutputs",
    "held_out_key",
    "standard_hooks",
]
