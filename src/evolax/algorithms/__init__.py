"""Evolution algorithms (ask/tell, fitness maximised)."""

from evolax.algorithms.ars import ARS, ARSState
from evolax.algorithms.asebo import ASEBO, ASEBOState
from evolax.algorithms.base import (
    Algorithm,
    DistributionAlgorithm,
    DistributionState,
    GradientES,
    GradientESState,
    PopulationAlgorithm,
    PopulationState,
    State,
    flatten_population,
    mirrored,
    unflatten_population,
)
from evolax.algorithms.clpso import CLPSO, CLPSOState
from evolax.algorithms.cma_es import CMAES, CMAESState
from evolax.algorithms.cma_family import CMAFamily, CMAState
from evolax.algorithms.cma_me import CMAMAE, CMAME, CMAMEState, EmitterState
from evolax.algorithms.composite_de import CoDE, CoDEState
from evolax.algorithms.cr_fm_nes import CRFMNES, CRFMNESState
from evolax.algorithms.cso import CSO, CSOState
from evolax.algorithms.differential_evolution import DEState, DifferentialEvolution
from evolax.algorithms.diffusion_evolution import DiffusionEvolution, DiffusionEvolutionState
from evolax.algorithms.esmc import ESMC, ESMCState
from evolax.algorithms.gesmr_ga import GESMRGA, GESMRGAState
from evolax.algorithms.gradientless_descent import GradientlessDescent, GradientlessDescentState
from evolax.algorithms.guided_es import GuidedES, GuidedESState
from evolax.algorithms.hill_climbing import HillClimbing, HillClimbingState
from evolax.algorithms.iamalgam_full import IAMaLGaMFull, IAMaLGaMFullState
from evolax.algorithms.iamalgam_univariate import IAMaLGaMUnivariate, IAMaLGaMUnivariateState
from evolax.algorithms.jade import JADE, JADEState
from evolax.algorithms.les import LES, LESState
from evolax.algorithms.lga import LGA, LGAState
from evolax.algorithms.lm_ma_es import LMMAES, LMMAESState
from evolax.algorithms.low_rank_es import LowRankES
from evolax.algorithms.ma_es import MAES, MAESState
from evolax.algorithms.map_elites import (
    ArchiveMAPElites,
    CVTMAPElites,
    MAPElites,
    MAPElitesState,
    QDState,
    archive_metrics,
)
from evolax.algorithms.me_es import MEES, MEESState
from evolax.algorithms.moead import MOEAD, MOEADState
from evolax.algorithms.mr15_ga import MR15GA, MR15GAState
from evolax.algorithms.neat import NEAT, NEATState
from evolax.algorithms.noise import gaussian
from evolax.algorithms.noise_reuse_es import NoiseReuseES, NoiseReuseESState
from evolax.algorithms.nsga2 import NSGA2, NSGA2State
from evolax.algorithms.nsga3 import NSGA3, NSGA3State
from evolax.algorithms.open_es import OpenES, OpenESState
from evolax.algorithms.persistent_es import PersistentES, PersistentESState
from evolax.algorithms.pgpe import PGPE, PGPEState
from evolax.algorithms.pso import PSO, PSOState
from evolax.algorithms.random_search import RandomSearch, RandomSearchState
from evolax.algorithms.restarts import RestartRecord, RestartResult, bipop, ipop
from evolax.algorithms.rm_es import RmES, RmESState
from evolax.algorithms.sade import SaDE, SaDEState
from evolax.algorithms.samr_ga import SAMRGA, SAMRGAState
from evolax.algorithms.sep_cma_es import SepCMAES, SepCMAESState
from evolax.algorithms.shade import SHADE, SHADEState
from evolax.algorithms.shaping import (
    centered_rank,
    chain,
    cma_weights,
    finite_fitness,
    min_max,
    nes_utilities,
    rank_utilities,
    raw,
    weight_decay,
    z_score,
)
from evolax.algorithms.simple_es import SimpleES, SimpleESState
from evolax.algorithms.simple_ga import SimpleGA, SimpleGAState
from evolax.algorithms.simulated_annealing import SimulatedAnnealing, SimulatedAnnealingState
from evolax.algorithms.sl_pso import SLPSO, SLPSOState
from evolax.algorithms.sms_emoa import SMSEMOA, SMSEMOAState
from evolax.algorithms.snes import SNES, SNESState
from evolax.algorithms.sv_cma_es import SVCMAES, SVCMAESState
from evolax.algorithms.sv_open_es import SVOpenES, SVOpenESState
from evolax.algorithms.xnes import XNES, XNESState

__all__ = [
    "NEAT",
    "NEATState",
    "LES",
    "LESState",
    "LGA",
    "LGAState",
    "CoDE",
    "CoDEState",
    "SaDE",
    "SaDEState",
    "CLPSO",
    "CLPSOState",
    "CSO",
    "CSOState",
    "SLPSO",
    "SLPSOState",
    "JADE",
    "JADEState",
    "SHADE",
    "SHADEState",
    "SVCMAES",
    "SVCMAESState",
    "SVOpenES",
    "SVOpenESState",
    "DiffusionEvolution",
    "DiffusionEvolutionState",
    "IAMaLGaMFull",
    "IAMaLGaMFullState",
    "IAMaLGaMUnivariate",
    "IAMaLGaMUnivariateState",
    "PersistentES",
    "PersistentESState",
    "NoiseReuseES",
    "NoiseReuseESState",
    "GuidedES",
    "GuidedESState",
    "ESMC",
    "ESMCState",
    "ASEBO",
    "ASEBOState",
    "MR15GA",
    "MR15GAState",
    "SAMRGA",
    "SAMRGAState",
    "GESMRGA",
    "GESMRGAState",
    "SimpleES",
    "SimpleESState",
    "MAES",
    "MAESState",
    "RmES",
    "RmESState",
    "RandomSearch",
    "RandomSearchState",
    "HillClimbing",
    "HillClimbingState",
    "SimulatedAnnealing",
    "SimulatedAnnealingState",
    "GradientlessDescent",
    "GradientlessDescentState",
    "ARS",
    "ARSState",
    "Algorithm",
    "CMAES",
    "CMAESState",
    "CMAFamily",
    "CMAState",
    "CRFMNES",
    "CRFMNESState",
    "DEState",
    "DistributionAlgorithm",
    "DistributionState",
    "GradientES",
    "GradientESState",
    "DifferentialEvolution",
    "LMMAES",
    "LMMAESState",
    "ArchiveMAPElites",
    "CMAMAE",
    "CMAME",
    "CMAMEState",
    "EmitterState",
    "CVTMAPElites",
    "MAPElites",
    "MEES",
    "MEESState",
    "MAPElitesState",
    "QDState",
    "MOEAD",
    "MOEADState",
    "NSGA2",
    "NSGA2State",
    "NSGA3",
    "NSGA3State",
    "LowRankES",
    "OpenES",
    "OpenESState",
    "PGPE",
    "PGPEState",
    "PopulationAlgorithm",
    "PopulationState",
    "PSO",
    "PSOState",
    "RestartRecord",
    "RestartResult",
    "SMSEMOA",
    "SMSEMOAState",
    "SNES",
    "SNESState",
    "SepCMAES",
    "SepCMAESState",
    "State",
    "SimpleGA",
    "SimpleGAState",
    "XNES",
    "XNESState",
    "archive_metrics",
    "bipop",
    "centered_rank",
    "chain",
    "cma_weights",
    "finite_fitness",
    "flatten_population",
    "gaussian",
    "ipop",
    "min_max",
    "mirrored",
    "nes_utilities",
    "rank_utilities",
    "raw",
    "unflatten_population",
    "weight_decay",
    "z_score",
]

REGISTRY = {
    "pgpe": PGPE,
    "open_es": OpenES,
    "low_rank_es": LowRankES,
    "ars": ARS,
    "snes": SNES,
    "xnes": XNES,
    "cma_es": CMAES,
    "sep_cma_es": SepCMAES,
    "lm_ma_es": LMMAES,
    "cr_fm_nes": CRFMNES,
    "simple_ga": SimpleGA,
    "de": DifferentialEvolution,
    "pso": PSO,
    "map_elites": MAPElites,
    "cvt_map_elites": CVTMAPElites,
    "cma_mae": CMAMAE,
    "simple_es": SimpleES,
    "ma_es": MAES,
    "rm_es": RmES,
    "random_search": RandomSearch,
    "hill_climbing": HillClimbing,
    "simulated_annealing": SimulatedAnnealing,
    "gradientless_descent": GradientlessDescent,
    "mr15_ga": MR15GA,
    "samr_ga": SAMRGA,
    "gesmr_ga": GESMRGA,
    "esmc": ESMC,
    "asebo": ASEBO,
    "persistent_es": PersistentES,
    "noise_reuse_es": NoiseReuseES,
    "iamalgam_full": IAMaLGaMFull,
    "iamalgam_univariate": IAMaLGaMUnivariate,
    "sv_cma_es": SVCMAES,
    "sv_open_es": SVOpenES,
    "diffusion_evolution": DiffusionEvolution,
    "jade": JADE,
    "shade": SHADE,
    "clpso": CLPSO,
    "cso": CSO,
    "sl_pso": SLPSO,
    "code": CoDE,
    "sade": SaDE,
    "les": LES,
    "lga": LGA,
    "neat": NEAT,
}
"""Algorithms by the short name a configuration gives (``algorithm.name``)."""

SHAPINGS = {
    f.__name__: f
    for f in (
        centered_rank,
        cma_weights,
        finite_fitness,
        min_max,
        nes_utilities,
        raw,
        z_score,
        weight_decay,
    )
}
"""Fitness shapings by name (``algorithm.fitness_shaping``)."""
