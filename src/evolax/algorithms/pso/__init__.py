"""Particle swarms: PSO, CLPSO, and the competitive (CSO) and social-learning (SL-PSO)
swarms; the swarm's state, its start and the personal bests are in
:mod:`evolax.algorithms.pso.common`.

``evolax.algorithms.pso`` was PSO's own module before the family packages: its names (the
velocity rules, topologies and personal-best update) are exported here too, so that imports
of that module keep working."""

from evolax.algorithms.pso.clpso import CLPSO, CLPSOState
from evolax.algorithms.pso.common import SwarmState, update_personal_bests
from evolax.algorithms.pso.cso import CSO, CSOState
from evolax.algorithms.pso.pso import (
    PSO,
    TOPOLOGIES,
    VELOCITY_RULES,
    PSOState,
    constriction_coefficient,
    pso_velocity,
    ring_neighbour_best,
)
from evolax.algorithms.pso.sl_pso import SLPSO, SLPSOState

__all__ = [
    "CLPSO",
    "CLPSOState",
    "CSO",
    "CSOState",
    "PSO",
    "PSOState",
    "SLPSO",
    "SLPSOState",
    "TOPOLOGIES",
    "VELOCITY_RULES",
    "SwarmState",
    "constriction_coefficient",
    "pso_velocity",
    "ring_neighbour_best",
    "update_personal_bests",
]
