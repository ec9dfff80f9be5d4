"""Host-side training driver: compiled chunks, tests, metrics, profiling and checkpoints."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

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
from evolax.hooks import (
    TRAIN_STREAM,
    Hook,
    Progress,
    held_out_key,
    seed_slice,
    standard_hooks,
)
from evolax.layout import FORMS, Choice, EpisodeLoop, Layout
from evolax.logging import (
    JsonLinesSink,
    ProgressBar,
    Sink,
    open_logger,
    require_loggers,
    truncate_rows,
    write_json_atomic,
)
from evolax.placement import Chunks, choose_layout
from evolax.runlock import RunLock
from evolax.sharding import broadcast_from_first_process, to_host
from evolax.trainer import Trainer, TrainState
from evolax.validation import check_positive_int

METRICS, SUMMARY, CONFIG = "metrics.jsonl", "summary.json", "config.json"
LAYOUT = "layout.json"  # the evaluation layout the run was placed on (placement)
FRONT = "pareto_front.json"  # a multi-objective run's last population (WriteOutputs)
ARCHIVE = "archive.json"  # a quality-diversity run's elites (WriteOutputs)


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


def _next_boundary(generation: int, total: int, intervals: tuple[int, ...]) -> int:
    return min([total] + [(generation // i + 1) * i for i in intervals])


def _restore(run: Progress) -> None:
    """With ``resume``: the state, best states, test scores, wall time and layout of the run's
    newest good checkpoint, read by process 0 and handed to the others (none yet: the run
    starts again at generation 0)."""
    store, state = run.store, run.state
    saved_wall, saved_layout = np.zeros(1), _layout_numbers(None)
    leaves = best_leaves = flatten_state(state)
    if store is not None and store.steps():
        restored, saved_meta = store.restore(like=state)
        leaves = flatten_state(restored)
        saved_wall[0] = saved_meta.get("wall_time", 0.0)
        run.best_test[:] = saved_meta.get("best_test_mean", -np.inf)
        # the run's own layout, so it resumes exactly
        saved_layout = _layout_numbers(saved_meta.get("layout"))
        if run.seeds is not None and store.steps(BEST):
            best_leaves = flatten_state(store.restore(like=state, which=BEST)[0])
    shared = (leaves, best_leaves, saved_wall, run.best_test, saved_layout)
    leaves, best_leaves, saved_wall, run.best_test, saved_layout = broadcast_from_first_process(
        shared
    )
    run.state = unflatten_state(state, leaves)
    run.best_state = unflatten_state(state, best_leaves)
    run.elapsed = float(saved_wall[0])
    layout = _numbers_layout(saved_layout)
    if layout is not None:  # else: none, or another machine
        run.layout = layout


def _layout_numbers(record: Any) -> np.ndarray:
    """A recorded layout (:meth:`Layout.read`'s record) as numbers that can be sent to the
    other processes: devices, group, the loop's form, unroll and block; zeros where there
    is none or it is unreadable."""
    numbers = np.zeros(5)
    try:
        layout = Layout.read(record)
    except (AttributeError, KeyError, TypeError, ValueError):
        return numbers
    loop = layout.loop
    numbers[:] = (
        layout.devices,
        layout.pop_chunk,
        FORMS.index(loop.form),
        loop.unroll,
        loop.block or 0,
    )
    return numbers


def _numbers_layout(numbers: np.ndarray) -> Layout | None:
    """The layout :func:`_layout_numbers` encoded; ``None`` for none, or where it needs more
    devices than this machine has."""
    devices, pop_chunk, form, unroll, block = (int(x) for x in numbers)
    if not 0 < devices <= len(jax.devices()):
        return None
    return Layout(devices, pop_chunk, EpisodeLoop(FORMS[form], unroll, block or None))


#: What a resumed run may change: how far it goes, how often it logs, tests and saves, and the
#: host it runs on; none of them changes a generation's arithmetic (a test checks).
RESUMABLE = (
    "run.generations",
    "run.log_interval",
    "run.test_interval",
    "run.checkpoint_interval",
    "run.keep_checkpoints",
    "run.cpu_devices",
    "run.loggers",
    "host",
)


#: Fields the configuration gained after checkpoints began recording it, with the value that
#: means what runs before them did: a checkpoint's configuration without one reads as having it.
ADDED = {"trainer.loop": "auto"}


def with_added(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (a recorded configuration) with the :data:`ADDED` fields it lacks, in the
    sections it has."""
    config = json.loads(json.dumps(config))
    for path, value in ADDED.items():
        section, _, name = path.partition(".")
        if isinstance(config.get(section), dict):
            config[section].setdefault(name, value)
    return config


def config_differences(saved: Any, here: Any, at: str = "") -> list[tuple[str, Any, Any]]:
    """The fields (dotted paths) of two configurations that differ, with their values
    (``saved``'s, ``here``'s; ``None`` where one lacks the field), :data:`RESUMABLE` ones
    left out."""
    if at in RESUMABLE:
        return []
    if isinstance(saved, dict) and isinstance(here, dict):
        return [
            difference
            for key in [*saved, *(k for k in here if k not in saved)]
            for difference in config_differences(
                saved.get(key), here.get(key), f"{at}.{key}" if at else str(key)
            )
        ]
    return [] if saved == here else [(at, saved, here)]


def check_resumable(store: CheckpointStore, config: dict[str, Any] | None) -> None:
    """Before a resume does any work: ``config`` is the configuration the run's newest
    checkpoint was saved with, up to the :data:`RESUMABLE` fields; else a ``ValueError``
    naming every field that differs and both values. (Checkpoints of evolax 0.1.0 record
    none: their state's structure is checked as they are restored.)"""
    saved = store.metadata().get("config")
    if config is None or saved is None:
        return
    differences = config_differences(with_added(saved), json.loads(json.dumps(config)))
    if differences:
        fields = "; ".join(f"{at} {here!r} here, {was!r} saved" for at, was, here in differences)
        raise ValueError(
            f"the configuration no longer matches the checkpoint in {store.run_dir}: {fields} "
            f"(a resumed run may change only {', '.join(RESUMABLE)})"
        )


def _recorded_layout(path: Path | None) -> Choice | None:
    """The layout recorded in the run folder ``path`` (``layout.json``; one without a loop,
    of an earlier version, means the while loop), read by process 0 and handed to the
    others; ``None`` where there is none, or it needs more devices than here."""
    saved = _layout_numbers(None)
    if path is not None and jax.process_index() == 0:
        try:
            saved = _layout_numbers(json.loads((path / LAYOUT).read_text()))
        except (OSError, ValueError):
            pass  # none: a run of an earlier version, whose checkpoints hold it
    layout = _numbers_layout(broadcast_from_first_process(saved))
    if layout is None:
        return None
    return Choice(layout, math.nan, 0.0, (), source="run folder")


def _check_same_folder(path: Path | None) -> None:
    """Every process of a multi-process run was given the same run folder (process 0 writes
    it; one given another would believe its run is elsewhere)."""
    if jax.process_count() == 1:
        return
    from jax.experimental import multihost_utils

    text = "" if path is None else str(path.absolute())
    digest = np.frombuffer(hashlib.sha256(text.encode()).digest(), np.uint8)
    everyone = np.asarray(multihost_utils.process_allgather(digest))
    others = [i for i, d in enumerate(everyone) if not np.array_equal(d, everyone[0])]
    if others:
        raise ValueError(
            f"the processes of this run were given different run folders (process "
            f"{jax.process_index()}: {text or None}; processes {others} differ from process 0): "
            "give every process the same --run-dir"
        )


def _open_sinks(run: Progress, progress: bool, loggers: Sequence[str], config: Any) -> list[Sink]:
    """Process 0's sinks: the progress bar, ``metrics.jsonl`` and the trackers ``loggers``
    (opened first, so that a missing package stops the run before it writes anything)."""
    if jax.process_index() != 0:
        return []
    path = run.run_dir
    trackers: list[Sink] = []
    try:
        for name in dict.fromkeys(loggers):
            trackers.append(open_logger(name, path, config))
    except BaseException:
        for tracker in trackers:
            tracker.close()
        raise
    lines = [JsonLinesSink(path / METRICS)] if path is not None else []
    bar = ProgressBar(run.n_generations, initial=run.generation, enabled=progress)
    return [bar, *lines, *trackers]


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
    loggers: Sequence[str] = (),
    hooks: Sequence[Hook] | None = None,
    sinks: Sequence[Sink] = (),
) -> TrainResult:
    """Train for ``n_generations``: test, log, profile and checkpoint along the way.

    The run goes in phases: restore (with ``resume``), then a loop of compiled
    :meth:`Trainer.run` chunks, each followed by the hooks (log -> test -> checkpoint, see
    :mod:`evolax.hooks`), then the summary. Chunks end at every multiple of the hooks'
    intervals. The standard hooks log a ``train`` row per generation and a ``chunk`` row
    (compile and run seconds, env steps/s), test the best solution on ``n_test_episodes``
    held-out episodes, and save checkpoints of the whole :class:`TrainState` (the last
    ``keep_checkpoints`` and the best by test score). With ``resume``, the run continues from
    ``run_dir``'s newest good checkpoint and ends exactly as an uninterrupted run with the same
    seed would. Only process 0 writes.

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
        tensorboard: also write TensorBoard event files to ``run_dir/tensorboard`` (the
            same as ``"tensorboard"`` in ``loggers``).
        loggers: trackers to log to as well, by name: ``"tensorboard"``, ``"wandb"``
            (Weights & Biases), ``"mlflow"``, each an optional extra
            (:func:`~evolax.logging.open_logger` says where each writes); ``config`` is
            recorded as the run's parameters. A tracker object of your own goes in ``sinks``.
        hooks: what runs after each chunk, in order; ``None``: the standard hooks
            (:func:`~evolax.hooks.standard_hooks` of the four arguments above, which are
            not used when ``hooks`` is given). To add one, pass
            ``[*standard_hooks(...), mine]``.
        sinks: more :class:`~evolax.logging.Sink` s that every row is written to.
    """
    for name, value in [("n_generations", n_generations), ("keep_checkpoints", keep_checkpoints)]:
        check_positive_int(name, value)
    if hooks is None:
        hooks = standard_hooks(log_interval, test_interval, n_test_episodes, checkpoint_interval)
    if resume and run_dir is None:
        raise ValueError("resume needs a run_dir")
    loggers = [*(["tensorboard"] if tensorboard else []), *loggers]
    require_loggers(loggers)  # known and installed? asked before any work
    seeds = None if isinstance(seed, int) else [int(s) for s in seed]
    if seeds is not None and (not seeds or len(set(seeds)) != len(seeds)):
        raise ValueError(f"seed must be an int or distinct ints, got {seed!r}")
    first = cast(int, seed) if seeds is None else seeds[0]
    writer = jax.process_index() == 0
    path = None if run_dir is None else Path(run_dir)
    _check_same_folder(path)
    # one writer per run folder, for the run's life: taken before anything is read or written
    lock = RunLock(path) if path is not None and writer else None
    store = None
    try:
        if path is not None and writer:
            store = CheckpointStore(path, keep=keep_checkpoints)
            store.remove_partial()  # a killed writer's unfinished checkpoint
            if not resume and (store.steps() or (path / METRICS).exists()):
                raise ValueError(
                    f"{path} already holds a run; resume it (evolax train --resume {path}) or "
                    "choose another run folder"
                )
            if resume:
                check_resumable(store, config)
        return _train(
            trainer, n_generations, seeds, first, path, store, config, progress, resume,
            loggers, hooks, sinks,
        )  # fmt: skip
    finally:
        try:
            if store is not None:
                store.close()
                store.remove_partial()  # a save cut short (an error, a second Ctrl-C)
        finally:
            if lock is not None:
                lock.release()


def _train(
    trainer: Trainer,
    n_generations: int,
    seeds: list[int] | None,
    first: int,
    path: Path | None,
    store: CheckpointStore | None,
    config: dict[str, Any] | None,
    progress: bool,
    resume: bool,
    loggers: Sequence[str],
    hooks: Sequence[Hook],
    sinks: Sequence[Sink],
) -> TrainResult:
    """:func:`train` once its arguments are checked and its run folder held."""
    n_seeds = 1 if seeds is None else len(seeds)
    state = initial_state(trainer, first)
    # the evaluation layout: the run folder's own on resume (so it ends exactly as an
    # uninterrupted run), else chosen now, once, and recorded there
    choice = _recorded_layout(path) if resume else None
    if choice is None:
        choice = choose_layout(trainer, state, seeds=n_seeds)
    if seeds is not None:
        state = initial_states(trainer, seeds)
    run = Progress(
        trainer=trainer,
        n_generations=n_generations,
        seeds=seeds,
        first_seed=first,
        run_dir=path,
        store=store,
        layout=choice.layout,
        state=state,
        best_state=state,
        generation=0,
        best_test=np.full(n_seeds, -np.inf),
        sinks=[],
        config=config,
    )
    try:
        # restore
        if resume:
            _restore(run)
        run.generation = int(np.max(to_host(run.state.generation)))  # the seeds share it
        if resume and store is not None:
            truncate_rows(cast(Path, path) / METRICS, run.generation)
        run.sinks = [*_open_sinks(run, progress, loggers, config), *sinks]
        if store is not None and (config is not None or not resume):
            write_json_atomic(cast(Path, path) / CONFIG, config or {})
        if store is not None:
            write_json_atomic(cast(Path, path) / LAYOUT, dataclasses.asdict(run.layout))
        run.trainer = trainer.with_layout(run.layout)
        timing, env_steps_run = _loop(run, hooks)
    finally:
        for sink in run.sinks:
            sink.close()
    return _finish(run, hooks, timing, env_steps_run, choice)


def _loop(run: Progress, hooks: Sequence[Hook]) -> tuple[dict[str, float], float]:
    """Chunks of generations, each followed by the hooks, until ``n_generations`` or a stop
    request (SIGINT, SIGTERM); returns the seconds spent per phase and the env steps run."""
    chunks = Chunks(run.trainer, batched=run.seeds is not None)
    timing = {"compile_s": 0.0, "run_s": 0.0, **{f"{h.name}_s": 0.0 for h in hooks}}
    intervals = tuple(h.interval for h in hooks if h.interval is not None)
    env_steps_run, start = 0.0, time.perf_counter()
    stops = _StopRequests()
    try:
        stops.install()
        while run.generation < run.n_generations and run.stopping is None:
            n = _next_boundary(run.generation, run.n_generations, intervals) - run.generation
            run.state, history, compile_s, run_s = chunks(run.state, n)
            timing["compile_s"] += compile_s
            timing["run_s"] += run_s
            steps = float(np.sum(history["env_steps"]))
            env_steps_run += steps
            run.generation += n
            run.history = history
            run.wall_time = run.elapsed + time.perf_counter() - start
            run.chunk = {
                "generation": run.generation,
                "generations": n,
                "compile_s": compile_s,
                "run_s": run_s,
                "env_steps_per_s": steps / run_s,
            }
            run.stopping = stops.requested()
            for hook in hooks:
                tick = time.perf_counter()
                hook.after_chunk(run)
                timing[f"{hook.name}_s"] += time.perf_counter() - tick
    finally:
        stops.restore()
    run.wall_time = run.elapsed + time.perf_counter() - start
    return timing, env_steps_run


def _finish(
    run: Progress,
    hooks: Sequence[Hook],
    timing: dict[str, float],
    env_steps_run: float,
    choice: Any,
) -> TrainResult:
    """The summary (written to ``summary.json``), then the hooks' end of the run; raises
    :class:`TrainingInterrupted` after both if the run was asked to stop."""
    wall = run.wall_time - run.elapsed
    best = [None if b == -np.inf else float(b) for b in run.best_test]
    last = run.last_tests()
    summary: dict[str, Any] = {
        "generations": run.generation,
        "wall_time_s": wall,
        "total_wall_time_s": run.wall_time,
        **timing,
        "generations_per_s": run.generation / run.wall_time,
        "env_steps": float(np.sum(to_host(run.state.env_steps))),
        "env_steps_per_s": env_steps_run / max(timing["run_s"], 1e-9),
        "layout": dataclasses.asdict(run.layout),
        "layout_source": choice.source,
        "layout_tuning_s": choice.tuning_seconds,
        "interrupted": run.stopping,
    }
    ends = _last_population_metrics(run)
    if run.seeds is None:
        summary["final_test_mean"] = last[0].get("test_mean")
        summary["final_test_std"] = last[0].get("test_std")
        summary["best_test_mean"] = best[0]
        summary.update({f"final_{k}": v[0] for k, v in ends.items()})
    else:
        finals = [t.get("test_mean") for t in last]
        summary["seeds"] = run.seeds
        summary["per_seed"] = [
            {"seed": s, "final_test_mean": f, "best_test_mean": b}
            | {f"final_{k}": v[j] for k, v in ends.items()}
            for j, (s, f, b) in enumerate(zip(run.seeds, finals, best, strict=True))
        ]
        summary.update(_spread("final_test", finals))
        summary.update(_spread("best_test", best))
        for k, v in ends.items():
            summary.update(_spread(f"final_{k}", list(v)))
    if run.store is not None:
        write_json_atomic(cast(Path, run.run_dir) / SUMMARY, summary)
    for hook in hooks:
        hook.after_run(run)
    result = TrainResult(state=run.state, summary=summary)
    if run.stopping is not None:
        raise TrainingInterrupted(result, run.run_dir, run.stopping)
    return result


def _last_population_metrics(run: Progress) -> dict[str, list[float]]:
    """What the run ended with by the metrics its algorithm declares sum it up
    (``summary_metrics``: a QD archive's ``coverage``, a front's ``hypervolume``): each
    seed's value at the last generation trained in this process."""
    names = run.trainer.algorithm.summary_metrics
    history = {k: np.asarray(run.history[k]) for k in names if k in run.history}
    return {k: [float(x) for x in np.reshape(v[..., -1], -1)] for k, v in history.items() if v.size}


def _spread(name: str, values: list[float | None]) -> dict[str, float | None]:
    """Median and interquartile range of the seeds' ``values`` (``None``: untested)."""
    known = [v for v in values if v is not None]
    if not known:
        return {f"{name}_median": None, f"{name}_q25": None, f"{name}_q75": None}
    q25, median, q75 = np.percentile(known, [25, 50, 75])
    return {f"{name}_median": median, f"{name}_q25": q25, f"{name}_q75": q75}


__all__ = [
    "CheckpointError",
    "Hook",
    "TrainResult",
    "TrainingInterrupted",
    "held_out_key",
    "initial_state",
    "initial_states",
    "seed_slice",
    "train",
]
