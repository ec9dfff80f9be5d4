"""What every metric sink is: a :class:`Sink` of rows; and what the trackers share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from evolax.extras import require

Row = dict[str, Any]


class Sink(Protocol):
    def write(self, row: Row) -> None: ...

    def close(self) -> None: ...


# the trackers :func:`open_logger` opens by name (``run.loggers`` in a configuration)
LOGGERS = ("tensorboard", "wandb", "mlflow")


def check_loggers(names: Sequence[str], where: str = "loggers") -> None:
    """Raise naming ``where`` unless every name is one of :data:`LOGGERS`."""
    if isinstance(names, str):
        raise TypeError(f"{where}: expected a list of names, got the string {names!r}")
    for name in names:
        if name not in LOGGERS:
            raise ValueError(f"{where}: unknown logger {name!r}; choose from {', '.join(LOGGERS)}")


_GROUPS: dict[object, str] = {"train": "train", "test": "test", "chunk": "profile"}


def scalars(row: Row) -> dict[str, float]:
    """A row's numbers as a tracker's scalars: ``train/*``, ``test/*`` and ``profile/*`` (a
    chunk's timings), ``train/seed43/*`` in a run of several seeds; none for other rows."""
    group = _GROUPS.get(row.get("kind"))
    if group is None:
        return {}
    if "seed" in row:
        group = f"{group}/seed{row['seed']}"
    return {
        f"{group}/{name}": float(value)
        for name, value in row.items()
        if name not in ("kind", "generation", "seed")
        and isinstance(value, int | float)
        and not isinstance(value, bool)
    }


# each tracker's package, its name in messages, and the extra that installs it
PACKAGES = {
    "tensorboard": ("tensorboardX", "TensorBoard", "tensorboard"),
    "wandb": ("wandb", "Weights & Biases", "wandb"),
    "mlflow": ("mlflow", "MLflow", "mlflow"),
}


def require_loggers(names: Sequence[str]) -> None:
    """Raise one line unless every tracker ``names`` lists is known and installed (asked
    before any work)."""
    check_loggers(names)
    for name in names:
        needs(*PACKAGES[name])


def needs(module: str, tracker: str, extra: str) -> Any:
    """``module`` imported, or one line naming the extra that installs it."""
    return require(module, extra, f"{tracker} logging")
