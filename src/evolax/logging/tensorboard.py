"""TensorBoard event files (the ``tensorboard`` extra: tensorboardX)."""

from __future__ import annotations

from pathlib import Path

from evolax.logging.sink import PACKAGES, Row, needs, scalars


class TensorBoardSink:
    """Event files in ``logdir``: the rows' :func:`~evolax.logging.scalars` per generation."""

    def __init__(self, logdir: str | Path):
        tensorboardx = needs(*PACKAGES["tensorboard"])
        self._writer = tensorboardx.SummaryWriter(str(logdir))

    def write(self, row: Row) -> None:
        for name, value in scalars(row).items():
            self._writer.add_scalar(name, value, row["generation"])

    def close(self) -> None:
        self._writer.close()
