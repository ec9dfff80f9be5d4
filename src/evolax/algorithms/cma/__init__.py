"""The CMA family: Gaussian searches that adapt a covariance (or a factor of it), on the shared
base of :mod:`evolax.algorithms.cma.cma_family` (CMA-ES, Sep-CMA-ES) or beside it (MA-ES,
LM-MA-ES, Rm-ES, CR-FM-NES); the Stein variational CMA-ES; the IPOP and BIPOP restarts; and the
iAMaLGaM Gaussian EDAs (:mod:`evolax.algorithms.cma.amalgam`, full and diagonal)."""

from evolax.algorithms.cma.cma_es import CMAES, CMAESState
from evolax.algorithms.cma.cma_family import CMAFamily, CMAState
from evolax.algorithms.cma.cr_fm_nes import CRFMNES, CRFMNESState
from evolax.algorithms.cma.iamalgam_full import IAMaLGaMFull, IAMaLGaMFullState
from evolax.algorithms.cma.iamalgam_univariate import IAMaLGaMUnivariate, IAMaLGaMUnivariateState
from evolax.algorithms.cma.lm_ma_es import LMMAES, LMMAESState
from evolax.algorithms.cma.ma_es import MAES, MAESState
from evolax.algorithms.cma.restarts import RestartRecord, RestartResult, bipop, ipop
from evolax.algorithms.cma.rm_es import RmES, RmESState
from evolax.algorithms.cma.sep_cma_es import SepCMAES, SepCMAESState
from evolax.algorithms.cma.sv_cma_es import SVCMAES, SVCMAESState

__all__ = [
    "CMAES",
    "CMAESState",
    "CMAFamily",
    "CMAState",
    "CRFMNES",
    "CRFMNESState",
    "IAMaLGaMFull",
    "IAMaLGaMFullState",
    "IAMaLGaMUnivariate",
    "IAMaLGaMUnivariateState",
    "LMMAES",
    "LMMAESState",
    "MAES",
    "MAESState",
    "RestartRecord",
    "RestartResult",
    "RmES",
    "RmESState",
    "SVCMAES",
    "SVCMAESState",
    "SepCMAES",
    "SepCMAESState",
    "bipop",
    "ipop",
]
