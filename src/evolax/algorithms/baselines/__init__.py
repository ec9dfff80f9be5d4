"""Baselines and stand-alone searches: random search, stochastic hill climbing, simulated
annealing, gradientless descent and diffusion evolution; the elitist climb that hill climbing
and gradientless descent share is in :mod:`evolax.algorithms.baselines.common`."""

from evolax.algorithms.baselines.diffusion_evolution import (
    DiffusionEvolution,
    DiffusionEvolutionState,
)
from evolax.algorithms.baselines.gradientless_descent import (
    GradientlessDescent,
    GradientlessDescentState,
)
from evolax.algorithms.baselines.hill_climbing import HillClimbing, HillClimbingState
from evolax.algorithms.baselines.random_search import RandomSearch, RandomSearchState
from evolax.algorithms.baselines.simulated_annealing import (
    SimulatedAnnealing,
    SimulatedAnnealingState,
)

__all__ = [
    "DiffusionEvolution",
    "DiffusionEvolutionState",
    "GradientlessDescent",
    "GradientlessDescentState",
    "HillClimbing",
    "HillClimbingState",
    "RandomSearch",
    "RandomSearchState",
    "SimulatedAnnealing",
    "SimulatedAnnealingState",
]
