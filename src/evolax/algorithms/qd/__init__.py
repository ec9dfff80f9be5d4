"""Quality diversity: MAP-Elites over any archive (and its grid and CVT forms), the CMA-ES
emitters of CMA-ME and CMA-MAE, and ME-ES, on the state of
:mod:`evolax.algorithms.qd.common`. The archives themselves are in :mod:`evolax.qd`."""

from evolax.algorithms.qd.cma_me import CMAMAE, CMAME, CMAMEState, EmitterState
from evolax.algorithms.qd.common import QDState, archive_metrics
from evolax.algorithms.qd.map_elites import (
    ArchiveMAPElites,
    CVTMAPElites,
    MAPElites,
    MAPElitesState,
)
from evolax.algorithms.qd.me_es import MEES, MEESState

__all__ = [
    "CMAMAE",
    "CMAME",
    "CMAMEState",
    "EmitterState",
    "ArchiveMAPElites",
    "CVTMAPElites",
    "MAPElites",
    "MAPElitesState",
    "MEES",
    "MEESState",
    "QDState",
    "archive_metrics",
]
