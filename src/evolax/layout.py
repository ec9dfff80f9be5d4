"""Where a population's evaluation runs, as a value: a :class:`Layout` (how many devices, and
how many individuals each evaluates at once) and the :class:`Choice` that picked it. A
:class:`~evolax.trainer.Trainer` is given a layout; :mod:`evolax.placement` chooses one."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where and in which groups a population is evaluated.

    Attributes:
        devices: devices sharing the evaluation (``1``: no sharding).
        pop_chunk: individuals evaluated at once on each device.
    """

    devices: int
    pop_chunk: int


@dataclasses.dataclass(frozen=True)
class Choice:
    """The layout :func:`choose` picked and what it cost to pick.

    Attributes:
        layout: the fastest layout measured.
        seconds: its estimated evaluation time per generation.
        tuning_seconds: wall time spent compiling and timing candidates.
        timings: every candidate measured, with its estimated time per generation.
        source: ``"measured"``, ``"cost model"`` (its start, where measuring costs too
            much), ``"cache"`` (an earlier process's choice), ``"unmeasured"`` (the most
            devices, whole shares) or ``"explicit"`` (set by the user).
    """

    layout: Layout
    seconds: float
    tuning_seconds: float
    timings: tuple[tuple[Layout, float], ...]
    source: str = "measured"
