"""Evolution strategies that estimate a search gradient or recombine around a mean: OpenES,
SimpleES, PGPE, ARS, SNES, xNES, ASEBO, guided ES, the truncated-unroll PES and NRES, ESMC,
the low-rank (EGGROLL) ES and the Stein variational OpenES. Their shared pieces (OpenES's
settings and noise weights, sampling in a subspace, the truncated-unroll base) are in
:mod:`evolax.algorithms.es.common`."""

from evolax.algorithms.es.ars import ARS, ARSState
from evolax.algorithms.es.asebo import ASEBO, ASEBOState
from evolax.algorithms.es.esmc import ESMC, ESMCState
from evolax.algorithms.es.guided_es import GuidedES, GuidedESState
from evolax.algorithms.es.low_rank_es import LowRankES
from evolax.algorithms.es.noise_reuse_es import NoiseReuseES, NoiseReuseESState
from evolax.algorithms.es.open_es import OpenES, OpenESState
from evolax.algorithms.es.persistent_es import PersistentES, PersistentESState
from evolax.algorithms.es.pgpe import PGPE, PGPEState
from evolax.algorithms.es.simple_es import SimpleES, SimpleESState
from evolax.algorithms.es.snes import SNES, SNESState
from evolax.algorithms.es.sv_open_es import SVOpenES, SVOpenESState
from evolax.algorithms.es.xnes import XNES, XNESState

__all__ = [
    "ARS",
    "ARSState",
    "ASEBO",
    "ASEBOState",
    "ESMC",
    "ESMCState",
    "GuidedES",
    "GuidedESState",
    "LowRankES",
    "NoiseReuseES",
    "NoiseReuseESState",
    "OpenES",
    "OpenESState",
    "PGPE",
    "PGPEState",
    "PersistentES",
    "PersistentESState",
    "SNES",
    "SNESState",
    "SVOpenES",
    "SVOpenESState",
    "SimpleES",
    "SimpleESState",
    "XNES",
    "XNESState",
]
