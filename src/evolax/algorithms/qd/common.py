"""What the quality-diversity algorithms share: a state that holds an archive of elites, and
the archive's metrics."""

from __future__ import annotations

import chex

from evolax.algorithms.base import State
from evolax.qd import ArchiveState, qd_metrics
from evolax.types import Metrics


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
