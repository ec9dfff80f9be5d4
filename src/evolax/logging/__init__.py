"""Metric sinks: console progress bar, JSON-lines file, and the trackers (TensorBoard,
Weights & Biases, MLflow: one module each, each an optional extra, opened by :func:`open_logger`).

Every sink takes rows: flat dicts with a ``"kind"`` (``"train"`` per generation, ``"test"`` per
test, ``"chunk"`` per compiled chunk with its timings), a ``"generation"`` and, in a run of
several seeds, a ``"seed"``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from evolax.logging.mlflow import MlflowSink
from evolax.logging.sink import LOGGERS, Row, Sink, check_loggers, require_loggers, scalars
from evolax.logging.tensorboard import TensorBoardSink
from evolax.logging.wandb import WandbSink

__all__ = [
    "LOGGERS",
    "JsonLinesSink",
    "MlflowSink",
    "ProgressBar",
    "Row",
    "Sink",
    "TensorBoardSink",
    "WandbSink",
    "open_logger",
    "read_rows",
    "require_loggers",
    "scalars",
    "truncate_rows",
    "write_json_atomic",
]


def open_logger(
    name: str, run_dir: Path | None = None, config: dict[str, Any] | None = None
) -> Sink:
    """The tracker ``name`` (one of :data:`LOGGERS`) for the run in ``run_dir``, recording
    ``config`` (the resolved configuration) where the tracker keeps parameters.

    ``tensorboard`` writes event files to ``run_dir/tensorboard``; ``wandb`` starts a W&B run
    named after the run folder (its files in ``run_dir/wandb``; project ``$WANDB_PROJECT`` or
    ``evolax``; ``WANDB_MODE=offline`` keeps it local); ``mlflow`` starts an MLflow run named
    after the run folder at ``$MLFLOW_TRACKING_URI`` in experiment ``$MLFLOW_EXPERIMENT_NAME``
    (or ``evolax``).
    """
    check_loggers([name])
    label = None if run_dir is None else Path(run_dir).name
    if name == "tensorboard":
        if run_dir is None:
            raise ValueError("loggers: tensorboard writes into the run folder; give a run_dir")
        return TensorBoardSink(Path(run_dir) / "tensorboard")
    if name == "wandb":
        return WandbSink(name=label, directory=run_dir, config=config)
    return MlflowSink(name=label, config=config)


class JsonLinesSink:
    """Appends each row as one JSON line to ``path`` (flushed, so a crash loses nothing)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="utf-8")

    def write(self, row: Row) -> None:
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_rows(path: str | Path) -> list[Row]:
    """All rows of a JSON-lines metrics file (a torn last line from a crash is skipped)."""
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a plain open() would not
    os.replace(tmp, path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json_atomic(path: str | Path, value: Any) -> None:
    """Write ``value`` as indented JSON; readers see the old file or the new one, never half."""
    _write_atomic(Path(path), json.dumps(value, indent=2, sort_keys=True) + "\n")


def truncate_rows(path: str | Path, generation: int) -> None:
    """Atomically drop the rows after ``generation`` (a resumed run writes them again)."""
    path = Path(path)
    if path.exists():
        kept = [row for row in read_rows(path) if row.get("generation", 0) <= generation]
        _write_atomic(path, "".join(json.dumps(row) + "\n" for row in kept))


class ProgressBar:
    """A console bar: generation, generations/s and ETA, best/mean/min fitness, last test."""

    def __init__(self, total: int, initial: int = 0, enabled: bool = True):
        self._bar = tqdm(
            total=total, initial=initial, disable=not enabled, unit="gen", dynamic_ncols=True
        )
        self._fields: dict[str, str] = {"test": "-"}
        self._generation = initial

    def write(self, row: Row) -> None:
        if row.get("kind") == "train":
            self._fields.update(
                best=f"{row['fitness_max']:.1f}",
                mean=f"{row['fitness_mean']:.1f}",
                min=f"{row['fitness_min']:.1f}",
            )
            self._bar.update(row["generation"] - self._generation)
            self._generation = row["generation"]
        elif row.get("kind") == "test":
            self._fields["test"] = f"{row['test_mean']:.1f}"
        else:
            return
        self._bar.set_postfix(self._fields, refresh=False)

    def close(self) -> None:
        self._bar.close()
