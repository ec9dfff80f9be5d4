"""What the quality-diversity algorithms share: a state that holds an archive of elites, the
archive's metrics, and the archive a run writes (``archive.json``)."""

from __future__ import annotations

from typing import Any

import chex
import numpy as np

from evolax.algorithms.base import Output, State
from evolax.qd import Archive, ArchiveState, GridArchive, qd_metrics
from evolax.types import Metrics

#: what sums up a QD run (its summary's ``final_coverage`` and ``final_qd_score``)
QD_SUMMARY = ("coverage", "qd_score")


@chex.dataclass(frozen=True, kw_only=True)
class QDState(State):
    """The state of a quality-diversity algorithm: its archive of elites.

    Attributes:
        archive: the elites, :class:`~evolax.qd.ArchiveState` (``genomes [cells, D]``,
            ``fitness [cells]``, ``-inf`` in empty cells, ``descriptors [cells, n_desc]``).
    """

    archive: ArchiveState


def archive_metrics(state: QDState, qd_offset: float = 0.0) -> Metrics:
    """Coverage (fraction of cells filled), QD-score (sum over filled cells of
    ``fitness - qd_offset``) and the best elite's fitness (``archive_max``)."""
    return qd_metrics(state.archive, qd_offset)


def archive_output(archive: Archive, elites: ArchiveState) -> dict[str, Output]:
    """The ``archive`` record of a run: each occupied cell's fitness and descriptor, the
    number of cells and, for a grid, its shape and bounds."""
    fitness = np.asarray(elites.fitness, np.float64)
    descriptors = np.asarray(elites.descriptors, np.float64)
    occupied = np.isfinite(fitness)
    shared: dict[str, Any] = {"n_cells": fitness.shape[0]}
    if isinstance(archive, GridArchive):
        shared["grid_shape"] = list(archive.grid_shape)
        shared["descriptor_low"] = list(archive.descriptor_low)
        shared["descriptor_high"] = list(archive.descriptor_high)
    elites_ = {"fitness": fitness[occupied].tolist(), "descriptors": descriptors[occupied].tolist()}
    return {"archive": Output(per_seed={"elites": elites_}, shared=shared)}
