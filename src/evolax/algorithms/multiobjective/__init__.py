"""Multi-objective genetic algorithms: NSGA-II, NSGA-III, MOEA/D and SMS-EMOA, on the shared
pieces of :mod:`evolax.algorithms.multiobjective.common` (``FrontState``, ``RealCoded``,
dominance tournaments) and Deb's real-coded variation
(:mod:`evolax.algorithms.multiobjective.real_coded`).

``evolax.algorithms.multiobjective`` was the shared module itself before the family packages:
its names are exported here too, so that imports of that module keep working."""

from evolax.algorithms.multiobjective.common import FrontState, RealCoded, dominance_tournament
from evolax.algorithms.multiobjective.moead import MOEAD, MOEADState
from evolax.algorithms.multiobjective.nsga2 import NSGA2, NSGA2State
from evolax.algorithms.multiobjective.nsga3 import NSGA3, NSGA3State
from evolax.algorithms.multiobjective.real_coded import (
    polynomial_mutation,
    simulated_binary_crossover,
)
from evolax.algorithms.multiobjective.sms_emoa import SMSEMOA, SMSEMOAState

__all__ = [
    "FrontState",
    "MOEAD",
    "MOEADState",
    "NSGA2",
    "NSGA2State",
    "NSGA3",
    "NSGA3State",
    "RealCoded",
    "SMSEMOA",
    "SMSEMOAState",
    "dominance_tournament",
    "polynomial_mutation",
    "simulated_binary_crossover",
]
