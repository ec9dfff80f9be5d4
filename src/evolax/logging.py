"""Metric sinks: console progress bar, JSON-lines file, TensorBoard event files.

Every sink takes rows: flat dicts with a ``"kind"`` (``"train"`` per generation, ``"test"`` per
test, ``"chunk"`` per compiled chunk with its timings) and a ``"generation"``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol

from tqdm.auto import tqdm

Row = dict[str, Any]


class Sink(Protocol):
    def write(self, row: Row) -> None: ...

    def close(self) -> None: ...


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


def summary_writer() -> type:
    """tensorboardX's ``SummaryWriter``, or an ``ImportError`` that says how to install it
    (:func:`evolax.train` asks before any work)."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError as error:
        raise ImportError(
            "TensorBoard logging needs tensorboardX: pip install 'evolax[tensorboard]'"
        ) from error
    return SummaryWriter


class TensorBoardSink:
    """Scalars ``train/*``, ``test/*`` and ``profile/*`` per generation (needs tensorboardX)."""

    def __init__(self, logdir: str | Path):
        self._writer = summary_writer()(str(logdir))

    def write(self, row: Row) -> None:
        groups: dict[object, str] = {"train": "train", "test": "test", "chunk": "profile"}
        group = groups.get(row.get("kind"))
        if group is None:
            return
        for name, value in row.items():
            if name not in ("kind", "generation") and isinstance(value, (int, float)):
                self._writer.add_scalar(f"{group}/{name}", value, row["generation"])

    def close(self) -> None:
        self._writer.close()


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
