"""What the quality-diversity algorithms share: a state that holds an archive of elites, the
archive's metrics, and the archive a run writes (``archive.json``)."""

from __future__ import annotations

from typing import Any

import chex
import numpy as np
from jaxtyping import Array, Float

from evolax.algorithms.base import Output, State, normal
from evolax.qd import Archive, ArchiveState, GridArchive, qd_metrics
from evolax.types import Metrics, PRNGKey

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


def iso_line(
    iso_key: PRNGKey,
    line_key: PRNGKey,
    x: Float[Array, "pop dim"],
    y: Float[Array, "pop dim"],
    mutation_std: float | Float[Array, ""],
    line_std: float | Float[Array, ""],
) -> tuple[Float[Array, "pop dim"], Float[Array, "pop dim"]]:
    """Iso+line variation (Vassiliades and Mouret 2018) of parents ``x`` towards ``y``:
    ``x + mutation_std * N(0, I) + line_std * N(0, 1) * (y - x)``, one line draw per child.
    Returns the children and the isotropic draw (a first generation reuses it)."""
    iso = normal(iso_key, x.shape, x)
    line = normal(line_key, (x.shape[0], 1), x)
    return x + mutation_std * iso + line_std * line * (y - x), iso
