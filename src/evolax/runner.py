"""Host-side training driver: compiled chunks, tests, metrics, profiling and checkpoints."""

from __future__ import annotations

import dataclasses
import functools
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from evolax.checkpoint import (
    BEST,
    CheckpointError,
    CheckpointStore,
    flatten_state,
    unflatten_state,
)
from evolax.layout import Layout
from evolax.logging import (
    JsonLinesSink,
    ProgressBar,
    Sink,
    TensorBoardSink,
    truncate_rows,
    write_json_atomic,
)
from evolax.sharding import broadcast_from_first_process, to_host
from evolax.trainer import Trainer, TrainState
from evolax.validation import check_positive_int

TRAIN_STREAM, TEST_STREAM = 0, 1
T = TypeVar("T")
METRICS, SUMMARY, CONFIG = "metrics.jsonl", "summary.json", "config.json"


@dataclasses.dataclass
class TrainResult:
    """What :func:`train` returns: the final state and the run's summary."""

    state: TrainState
    summary: dict[str, Any]


class TrainingInterrupted(KeyboardInterrupt):
    """:func:`train` stopped on SIGINT or SIGTERM, after checkpointing its last chunk.

    Attributes:
        result: the state and summary at the generation it stopped at.
        run_dir: the run folder (``None`` if the run wrote none); ``train(..., resume=True)``
            (``evolax train --resume RUN_DIR``) continues it exactly.
    """

    def __init__(self, result: TrainResult, run_dir: Path | None, signal_name: str):
        self.result, self.run_dir = result, run_dir
        generation = result.summary["generations"]
        saved = f", saved; resume with: evolax train --resume {run_dir}" if run_dir else ""
        super().__init__(f"stopped at generation {generation} on {signal_name}{saved}")


class _StopRequests:
    """Once installed, the first SIGINT or SIGTERM only asks the run to stop after its current
    chunk; a second one stops it at once (``KeyboardInterrupt``)."""

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():  # else: signals not ours
            for number in (signal.SIGINT, signal.SIGTERM):
                self._previous[number] = signal.signal(number, self._handle)

    def _handle(self, number: int, frame: Any) -> None:
        if self.signal_name is not None:  # asked twice: stop now
            raise KeyboardInterrupt
        self.signal_name = signal.Signals(number).name

    def restore(self) -> None:
        """Put back the handlers :meth:`install` replaced."""
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def requested(self) -> str | None:
        """The signal that asked to stop, agreed by every process (process 0's word)."""
        if jax.process_count() == 1:
            return self.signal_name
        stop = broadcast_from_first_process(np.array(self.signal_name is not None))
        return (self.signal_name or "SIGTERM") if bool(stop) else None


def initial_state(trainer: Trainer, seed: int) -> TrainState:
    """The state a run with ``seed`` starts from (the training key stream of the seed)."""
    return trainer.init(jax.random.fold_in(jax.random.key(seed), TRAIN_STREAM))


def initial_states(trainer: Trainer, seeds: int | Sequence[int]) -> TrainState:
    """:func:`initial_state` of one seed, or those of several stacked on a leading seed axis
    (each seed's state as its own run would start it)."""
    if isinstance(seeds, int):
        return initial_state(trainer, seeds)
    states = [initial_state(trainer, seed) for seed in seeds]
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)


def seed_slice(tree: T, index: int) -> T:
    """One seed's part (``index`` along the leading seed axis) of a batched state (or of
    batched metrics)."""
    return cast(T, jax.tree.map(lambda leaf: leaf[index], tree))


def held_out_key(seed: int, generation: int) -> jax.Array:
    """Key of the test at ``generation``: a stream training never draws from."""
    return jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), TEST_STREAM), generation)


class _Chunks:
    """Ahead-of-time compiled ``Trainer.run`` per chunk length (``vmap``-ped over a leading
    seed axis when ``batched``), with compile and run times.

    The trainer's arrays (a task's dataset, say) are passed as arguments, not baked into the
    program as constants.
    """

    def __init__(self, trainer: Trainer, batched: bool = False):
        self._arrays, static = eqx.partition(trainer, eqx.is_array)

        def run(arrays, state, n):
            run_one = functools.partial(eqx.combine(arrays, static).run, n_generations=n)
            return jax.vmap(run_one)(state) if batched else run_one(state)

        self._run = jax.jit(run, static_argnums=2)
        self._compiled: dict[int, Any] = {}

    def __call__(self, state: TrainState, n: int) -> tuple[TrainState, dict, float, float]:
        start = time.perf_counter()
        if n not in self._compiled:
            self._compiled[n] = self._run.lower(self._arrays, state, n).compile()
        compiled = time.perf_counter()
        state, history = jax.block_until_ready(self._compiled[n](self._arrays, state))
        return state, to_host(history), compiled - start, time.perf_counter() - compiled


def _next_boundary(generation: int, total: int, intervals: tuple[int, ...]) -> int:
    return min([total] + [(generation // i + 1) * i for i in intervals])


def train(
    trainer: Trainer,
    n_generations: int,
    *,
    seed: int | Sequence[int] = 0,
    log_interval: int = 10,
    test_interval: int = 100,
    n_test_episodes: int = 100,
    run_dir: str | Path | None = None,
    config: dict[str, Any] | None = None,
    progress: bool = True,
    checkpoint_interval: int = 100,
    keep_checkpoints: int = 3,
    resume: bool = False,
    tensorboard: bool = False,
) -> TrainResult:
    """Train for ``n_generations``: test, log, profile and checkpoint along the way.

    Generations run as compiled :meth:`Trainer.run` chunks that end at every multiple of
    ``log_interval``, ``test_interval`` and ``checkpoint_interval``. Between chunks the driver
    logs a ``train`` row per generation and a ``chunk`` row (compile and run seconds,
    env steps/s), tests the best solution on ``n_test_episodes`` held-out episodes, and saves
    checkpoints of the whole :class:`TrainState` (the last ``keep_checkpoints`` and the best by
    test score). With ``resume``, the run continues from ``run_dir``'s newest good checkpoint
    and ends exactly as an uninterrupted run with the same seed would. Only process 0 writes.

    Args:
        trainer: the composed algorithm, policy and task.
        n_generations: the generation to train up to, positive.
        seed: seed of the run (training and test key streams derive from it); a list of
            seeds trains them all as one ``vmap``-ped program (each seed as its own run would
            go, up to float rounding), with a leading seed axis on the state, a metrics row
            per seed (with a ``seed`` field), each seed's best state in ``best/``, and a
            summary with the median and interquartile range over seeds.
        log_interval: generations per chunk at most.
        test_interval: generations between tests; the last generation is always tested.
        n_test_episodes: episodes per test.
        run_dir: folder for ``config.json``, ``metrics.jsonl``, ``summary.json``,
            ``checkpoints/``, ``best/`` (and ``tensorboard/``); ``None`` writes nothing.
        config: the resolved configuration recorded in ``config.json``.
        progress: show the console progress bar.
        checkpoint_interval: generations between checkpoints; the last is always saved.
        keep_checkpoints: how many recent checkpoints to keep besides the best.
        resume: continue the run in ``run_dir``.
        tensorboard: also write TensorBoard event files to ``run_dir/tensorboard``.
    """
    for name, value in [
        ("n_generations", n_generations),
        ("log_interval", log_interval),
        ("test_interval", test_interval),
        ("n_test_episodes", n_test_episodes),
        ("checkpoint_interval", checkpoint_interval),
        ("keep_checkpoints", keep_checkpoints),
    ]:
        check_positive_int(name, value)
    if resume and run_dir is None:
        raise ValueError("resume needs a run_dir")
    writer = jax.process_index() == 0
    path = None if run_dir is None else Path(run_dir)

    seeds = None if isinstance(seed, int) else [int(s) for s in seed]
    if seeds is not None and (not seeds or len(set(seeds)) != len(seeds)):
        raise ValueError(f"seed must be an int or distinct ints, got {seed!r}")
    n_seeds = 1 if seeds is None else len(seeds)
    first = cast(int, seed) if seeds is None else seeds[0]
    state = initial_state(trainer, first)  # chooses the evaluation layout, if automatic
    choice = trainer.chosen_layout(state, seeds=n_seeds)
    layout = choice.layout
    if seeds is not None:
        state = initial_states(trainer, seeds)
    best_test, elapsed = np.full(n_seeds, -np.inf), 0.0
    store = None
    if path is not None and writer:
        store = CheckpointStore(path, keep=keep_checkpoints)
        if not resume and (store.steps() or (path / METRICS).exists()):
            raise ValueError(
                f"{path} already holds a run; resume it (evolax train --resume {path}) or "
                "choose another run folder"
            )
    best_state = state  # of each seed, its best-scoring state (several seeds)
    if resume:  # process 0 reads the checkpoints and hands them to the others
        saved_wall, saved_layout = np.zeros(1), np.zeros(2)
        leaves = best_leaves = flatten_state(state)
        if store is not None and store.steps():  # none yet: it starts again at generation 0
            restored, saved_meta = store.restore(like=state)
            leaves = flatten_state(restored)
            saved = saved_meta.get("layout", {})  # the run's own layout, so it resumes exactly
            saved_wall[0] = saved_meta.get("wall_time", 0.0)
            best_test[:] = saved_meta.get("best_test_mean", -np.inf)
            saved_layout[:] = saved.get("devices", 0), saved.get("pop_chunk", 0)
            if seeds is not None and store.steps(BEST):
                best_leaves = flatten_state(store.restore(like=state, which=BEST)[0])
        shared = (leaves, best_leaves, saved_wall, best_test, saved_layout)
        leaves, best_leaves, saved_wall, best_test, saved_layout = broadcast_from_first_process(
            shared
        )
        state = unflatten_state(state, leaves)
        best_state = unflatten_state(state, best_leaves)
        elapsed = float(saved_wall[0])
        if 0 < saved_layout[0] <= len(jax.devices()):  # else: another machine
            layout = Layout(int(saved_layout[0]), int(saved_layout[1]))
    generation = int(np.max(to_host(state.generation)))  # the seeds of a batch share it
    if resume and store is not None:
        truncate_rows(cast(Path, path) / METRICS, generation)
    sinks: list[Sink] = []
    if writer and path is not None and tensorboard:  # first: a missing tensorboardX stops
        sinks.append(TensorBoardSink(path / "tensorboard"))  # the run before it writes
    if store is not None and (config is not None or not resume):
        write_json_atomic(cast(Path, path) / CONFIG, config or {})

    trainer = trainer.with_layout(layout)
    if writer:
        sinks.insert(0, ProgressBar(n_generations, initial=generation, enabled=progress))
        if path is not None:
            sinks.insert(1, JsonLinesSink(path / METRICS))

    def log(row: dict[str, Any]) -> None:
        for sink in sinks:
            sink.write(row)

    # one seed: rows as ever; several: a row per seed, which names it
    tags = [{}] if seeds is None else [{"seed": s} for s in seeds]
    chunks = _Chunks(trainer, batched=seeds is not None)

    def test_seeds(state: TrainState, keys: jax.Array, n: int) -> jax.Array:
        """Each seed's state on its own held-out episodes."""
        return jax.vmap(lambda s, k: trainer.test(s, k, n))(state, keys)

    test = eqx.filter_jit(trainer.test if seeds is None else test_seeds)
    timing = {"compile_s": 0.0, "run_s": 0.0, "test_s": 0.0, "checkpoint_s": 0.0, "log_s": 0.0}
    env_steps_run = 0.0
    last_tests: list[dict[str, float]] = [{} for _ in range(n_seeds)]
    start = time.perf_counter()
    stopped_by = None
    stops = _StopRequests()
    try:
        stops.install()
        while generation < n_generations:
            intervals = (log_interval, test_interval, checkpoint_interval)
            n = _next_boundary(generation, n_generations, intervals) - generation
            state, history, compile_s, run_s = chunks(state, n)
            timing["compile_s"] += compile_s
            timing["run_s"] += run_s
            steps = float(np.sum(history["env_steps"]))
            env_steps_run += steps
            wall_now = elapsed + time.perf_counter() - start
            tick = time.perf_counter()
            per_seed = (
                [history] if seeds is None else [seed_slice(history, j) for j in range(n_seeds)]
            )
            for i in range(n):  # generations of a chunk share its run time evenly
                for tag, values in zip(tags, per_seed, strict=True):
                    row = {k: float(v[i]) for k, v in values.items()}
                    row["wall_time"] = wall_now - run_s * (n - 1 - i) / n
                    log({"kind": "train", "generation": generation + i + 1, **tag, **row})
            generation += n
            log(
                {
                    "kind": "chunk",
                    "generation": generation,
                    "generations": n,
                    "compile_s": compile_s,
                    "run_s": run_s,
                    "env_steps_per_s": steps / run_s,
                    "wall_time": wall_now,
                }
            )
            timing["log_s"] += time.perf_counter() - tick

            improved = np.zeros(n_seeds, bool)
            if generation % test_interval == 0 or generation == n_generations:
                tick = time.perf_counter()
                if seeds is None:
                    scores = to_host(test(state, held_out_key(first, generation), n_test_episodes))
                    scores = scores[None]
                else:
                    keys = jnp.stack([held_out_key(s, generation) for s in seeds])
                    scores = to_host(test(state, keys, n_test_episodes))
                for j, (tag, row_scores) in enumerate(zip(tags, scores, strict=True)):
                    last_tests[j] = {
                        "test_mean": float(row_scores.mean()),
                        "test_std": float(row_scores.std()),
                        "test_min": float(row_scores.min()),
                        "test_max": float(row_scores.max()),
                    }
                    test_row = {"generation": generation, **tag, **last_tests[j]}
                    log({"kind": "test", **test_row, "wall_time": wall_now})
                means = np.array([t["test_mean"] for t in last_tests])
                improved = means > best_test
                best_test = np.maximum(best_test, means)
                timing["test_s"] += time.perf_counter() - tick

            stopped_by = stops.requested()
            periodic = generation % checkpoint_interval == 0 or generation == n_generations
            periodic = periodic or stopped_by is not None  # nothing is lost on a stop
            if store is not None and (periodic or improved.any()):
                tick = time.perf_counter()
                meta: dict[str, Any] = {
                    "wall_time": elapsed + time.perf_counter() - start,
                    "layout": dataclasses.asdict(layout),
                }
                if seeds is None:
                    meta.update(best_test_mean=float(best_test[0]), **last_tests[0])
                    store.save(state, meta, latest=periodic, best=bool(improved[0]))
                else:  # the latest states, and each seed's best state so far
                    meta.update(seeds=seeds, best_test_mean=best_test.tolist())
                    meta["test_mean"] = [t.get("test_mean") for t in last_tests]
                    best_state = _where_seeds(improved, state, best_state)
                    if periodic:
                        store.save(state, meta, latest=True)
                    if improved.any():
                        store.save(best_state, meta, latest=False, best=True)
                timing["checkpoint_s"] += time.perf_counter() - tick
            if stopped_by is not None:
                break
    finally:
        stops.restore()
        for sink in sinks:
            sink.close()
        if store is not None:
            store.close()

    wall = time.perf_counter() - start
    best = [None if b == -np.inf else float(b) for b in best_test]
    summary: dict[str, Any] = {
        "generations": generation,
        "wall_time_s": wall,
        "total_wall_time_s": elapsed + wall,
        **timing,
        "generations_per_s": generation / (elapsed + wall),
        "env_steps": float(np.sum(to_host(state.env_steps))),
        "env_steps_per_s": env_steps_run / max(timing["run_s"], 1e-9),
        "layout": dataclasses.asdict(layout),
        "layout_source": choice.source,
        "layout_tuning_s": choice.tuning_seconds,
        "interrupted": stopped_by,
    }
    if seeds is None:
        summary["final_test_mean"] = last_tests[0].get("test_mean")
        summary["final_test_std"] = last_tests[0].get("test_std")
        summary["best_test_mean"] = best[0]
    else:
        finals = [t.get("test_mean") for t in last_tests]
        summary["seeds"] = seeds
        summary["per_seed"] = [
            {"seed": s, "final_test_mean": f, "best_test_mean": b}
            for s, f, b in zip(seeds, finals, best, strict=True)
        ]
        summary.update(_spread("final_test", finals))
        summary.update(_spread("best_test", best))
    if store is not None:
        write_json_atomic(cast(Path, path) / SUMMARY, summary)
    result = TrainResult(state=state, summary=summary)
    if stopped_by is not None:
        raise TrainingInterrupted(result, path, stopped_by)
    return result


def _where_seeds(mask: np.ndarray, new: TrainState, old: TrainState) -> TrainState:
    """Per seed (leading axis), ``new`` where ``mask`` else ``old``."""
    picked = [
        np.where(mask.reshape(-1, *[1] * (a.ndim - 1)), a, b)
        for a, b in zip(flatten_state(new), flatten_state(old), strict=True)
    ]
    return unflatten_state(new, picked)


def _spread(name: str, values: list[float | None]) -> dict[str, float | None]:
    """Median and interquartile range of the seeds' ``values`` (``None``: untested)."""
    known = [v for v in values if v is not None]
    if not known:
        return {f"{name}_median": None, f"{name}_q25": None, f"{name}_q75": None}
    q25, median, q75 = np.percentile(known, [25, 50, 75])
    return {f"{name}_median": median, f"{name}_q25": q25, f"{name}_q75": q75}


__all__ = [
    "CheckpointError",
    "TrainResult",
    "TrainingInterrupted",
    "held_out_key",
    "initial_state",
    "initial_states",
    "seed_slice",
    "train",
]
