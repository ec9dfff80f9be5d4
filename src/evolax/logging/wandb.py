"""Weights & Biases runs (the ``wandb`` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evolax.logging.sink import PACKAGES, Row, needs, scalars


class WandbSink:
    """A W&B run: the rows' :func:`~evolax.logging.scalars` at their generation as the step,
    ``config`` as the run's configuration.

    Args:
        name: the run's display name (``None``: W&B's own).
        directory: where W&B writes its files (``directory/wandb``; ``None``: the working
            folder).
        config: the configuration to record (nested mappings as W&B shows them).
        **init: more arguments of ``wandb.init`` (``project``, ``entity``, ``mode``, ``tags``,
            ...); the project is ``$WANDB_PROJECT`` or else ``evolax``, and ``WANDB_MODE=offline``
            keeps the run on disk (``wandb sync`` uploads it later).
    """

    def __init__(
        self,
        name: str | None = None,
        directory: str | Path | None = None,
        config: dict[str, Any] | None = None,
        **init: Any,
    ):
        wandb = needs(*PACKAGES["wandb"])
        if directory is not None:
            Path(directory).mkdir(parents=True, exist_ok=True)
            init.setdefault("dir", str(directory))
        init.setdefault("project", wandb.env.get_project() or "evolax")
        self._run = wandb.init(name=name, config=config, reinit="create_new", **init)

    def write(self, row: Row) -> None:
        values = scalars(row)
        if values:
            self._run.log(values, step=int(row["generation"]))

    def close(self) -> None:
        self._run.finish()
