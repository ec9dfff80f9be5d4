"""Genetic algorithms on SimpleGA's generation (truncation selection, Gaussian mutation,
elitism) and its mutation-rate adaptations: SimpleGA, SAMR-GA, GESMR-GA and the 1/5-rule
MR15-GA. Their shared pieces (the generation, its first population, the size checks and the
mutation-std helpers) are in :mod:`evolax.algorithms.ga.common`."""

from evolax.algorithms.ga.gesmr_ga import GESMRGA, GESMRGAState
from evolax.algorithms.ga.mr15_ga import MR15GA, MR15GAState
from evolax.algorithms.ga.samr_ga import SAMRGA, SAMRGAState
from evolax.algorithms.ga.simple_ga import SimpleGA, SimpleGAState

__all__ = [
    "GESMRGA",
    "GESMRGAState",
    "MR15GA",
    "MR15GAState",
    "SAMRGA",
    "SAMRGAState",
    "SimpleGA",
    "SimpleGAState",
]
