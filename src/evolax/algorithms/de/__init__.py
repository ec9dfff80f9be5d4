"""Differential evolution: the classic DE and its parameter-adapting successors JADE, SHADE,
CoDE and SaDE. Their operators are in :mod:`evolax.algorithms.de.common`, and the base JADE and
SHADE share in :mod:`evolax.algorithms.de.adaptive`."""

from evolax.algorithms.de.composite_de import CoDE, CoDEState
from evolax.algorithms.de.differential_evolution import DEState, DifferentialEvolution
from evolax.algorithms.de.jade import JADE, JADEState
from evolax.algorithms.de.sade import SaDE, SaDEState
from evolax.algorithms.de.shade import SHADE, SHADEState

__all__ = [
    "CoDE",
    "CoDEState",
    "DEState",
    "DifferentialEvolution",
    "JADE",
    "JADEState",
    "SHADE",
    "SHADEState",
    "SaDE",
    "SaDEState",
]
