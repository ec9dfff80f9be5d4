"""Quality diversity: MAP-Elites over any archive (and its grid and CVT forms), the CMA-ES
emitters of CMA-ME and CMA-MAE, ME-ES, multi-task MAP-Elites, Dominated Novelty Search (no
grid) and MOME (a Pareto front per cell), on the state of
:mod:`evolax.algorithms.qd.common`. The archives themselves are in :mod:`evolax.qd`."""

from evolax.algorithms.qd.cma_me import CMAMAE, CMAME, CMAMEState, EmitterState
from evolax.algorithms.qd.common import QDState, archive_metrics
from evolax.algorithms.qd.dns import DNSState, DominatedNoveltySearch, competition_fitness
from evolax.algorithms.qd.map_elites import (
    ArchiveMAPElites,
    CVTMAPElites,
    MAPElites,
    MAPElitesState,
)
from evolax.algorithms.qd.me_es import MEES, MEESState
from evolax.algorithms.qd.mome import MOME, MOMEState, insert_into_fronts, moqd_metrics
from evolax.algorithms.qd.mt_map_elites import MTMAPElites, MTMAPElitesState

__all__ = [
    "CMAMAE",
    "CMAME",
    "CMAMEState",
    "DNSState",
    "DominatedNoveltySearch",
    "EmitterState",
    "ArchiveMAPElites",
    "CVTMAPElites",
    "MAPElites",
    "MAPElitesState",
    "MEES",
    "MEESState",
    "MOME",
    "MOMEState",
    "MTMAPElites",
    "MTMAPElitesState",
    "QDState",
    "archive_metrics",
    "competition_fitness",
    "insert_into_fronts",
    "moqd_metrics",
]
