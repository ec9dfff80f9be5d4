"""Host-side training driver: compiled chunks of generations, periodic tests, metrics on disk."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
from tqdm.auto import tqdm

from evolax.trainer import Trainer, TrainState
from evolax.validation import check_positive_int

TRAIN_STREAM, TEST_STREAM = 0, 1


@dataclasses.dataclass
class TrainResult:
    """What :func:`train` returns: the final state and the run's summary."""

    state: TrainState
    summary: dict[str, Any]


def _floats(tree: dict[str, Any], index: int | None = None) -> dict[str, float]:
    return {k: float(np.asarray(v)[index] if index is not None else v) for k, v in tree.items()}


class _JsonLines:
    """Appends one JSON object per line to ``path`` (or discards them when ``path`` is None)."""

    def __init__(self, path: Path | None):
        self._file = None if path is None else path.open("a", encoding="utf-8")

    def write(self, row: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(row) + "\n")
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def train(
    trainer: Trainer,
    n_generations: int,
    *,
    seed: int = 0,
    log_interval: int = 10,
    test_interval: int = 100,
    n_test_episodes: int = 100,
    run_dir: str | Path | None = None,
    config: dict[str, Any] | None = None,
    progress: bool = True,
) -> TrainResult:
    """Train for ``n_generations``, testing the best solution every ``test_interval``.

    The generations run as compiled :meth:`Trainer.run` chunks of up to ``log_interval``
    (cut short at test generations; each distinct chunk length compiles once); between
    chunks the driver writes metrics, tests the current best on ``n_test_episodes`` held-out
    episodes (seeds from a stream the training never uses) and updates the progress bar.

    Args:
        trainer: the composed algorithm, policy and task.
        n_generations: generations to run, positive.
        seed: seed of the run (training and test streams are derived from it).
        log_interval: generations per compiled chunk (and per progress update).
        test_interval: generations between tests; a final test always runs.
        n_test_episodes: episodes per test.
        run_dir: folder for ``config.json``, ``metrics.jsonl`` and ``summary.json`` (none if None).
        config: the resolved configuration to record in ``config.json``.
        progress: show a progress bar.
    """
    for name, value in [
        ("n_generations", n_generations),
        ("log_interval", log_interval),
        ("test_interval", test_interval),
        ("n_test_episodes", n_test_episodes),
    ]:
        check_positive_int(name, value)

    root = jax.random.key(seed)
    state = trainer.init(jax.random.fold_in(root, TRAIN_STREAM))
    test_root = jax.random.fold_in(root, TEST_STREAM)
    run_chunk = jax.jit(trainer.run, static_argnums=1)
    test = jax.jit(trainer.test, static_argnums=2)

    path = None if run_dir is None else Path(run_dir)
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        (path / "config.json").write_text(json.dumps(config or {}, indent=2, sort_keys=True))
    metrics_log = _JsonLines(None if path is None else path / "metrics.jsonl")

    bar = tqdm(total=n_generations, disable=not progress, unit="gen", dynamic_ncols=True)
    start = time.perf_counter()
    tests: list[tuple[int, float]] = []
    last_test: dict[str, float] = {}
    generation = 0
    try:
        while generation < n_generations:
            next_test = (generation // test_interval + 1) * test_interval
            chunk = min(log_interval, n_generations - generation, next_test - generation)
            state, history = run_chunk(state, chunk)
            history = jax.device_get(history)
            wall = time.perf_counter() - start
            for i in range(chunk):
                row = {"kind": "train", "generation": generation + i + 1, **_floats(history, i)}
                metrics_log.write({**row, "wall_time": wall})
            generation += chunk
            if generation % test_interval == 0 or generation == n_generations:
                scores = np.asarray(
                    test(state, jax.random.fold_in(test_root, generation), n_test_episodes)
                )
                last_test = {
                    "test_mean": float(scores.mean()),
                    "test_std": float(scores.std()),
                    "test_min": float(scores.min()),
                    "test_max": float(scores.max()),
                }
                tests.append((generation, last_test["test_mean"]))
                metrics_log.write(
                    {"kind": "test", "generation": generation, **last_test, "wall_time": wall}
                )
            bar.update(chunk)
            bar.set_postfix(
                best=f"{history['fitness_max'][-1]:.1f}",
                mean=f"{history['fitness_mean'][-1]:.1f}",
                test=f"{last_test['test_mean']:.1f}" if last_test else "-",
            )
    finally:
        bar.close()
        metrics_log.close()

    wall = time.perf_counter() - start
    best_generation, best_test = max(tests, key=lambda t: t[1])
    summary = {
        "generations": generation,
        "wall_time_s": wall,
        "generations_per_s": generation / wall,
        "env_steps": float(state.env_steps),
        "env_steps_per_s": float(state.env_steps) / wall,
        "final_test_mean": last_test["test_mean"],
        "final_test_std": last_test["test_std"],
        "best_test_mean": best_test,
        "best_test_generation": best_generation,
        "tests": [{"generation": g, "test_mean": m} for g, m in tests],
    }
    if path is not None:
        (path / "summary.json").write_text(json.dumps(summary, indent=2))
    return TrainResult(state=state, summary=summary)
