"""Evolution algorithms (ask/tell, fitness maximised)."""

from evolax.algorithms.base import Algorithm
from evolax.algorithms.open_es import OpenES, OpenESState
from evolax.algorithms.pgpe import PGPE, PGPEState
from evolax.algorithms.shaping import (
    centered_rank,
    cma_weights,
    finite_fitness,
    min_max,
    weight_decay,
    z_score,
)

__all__ = [
    "PGPE",
    "OpenES",
    "OpenESState",
    "Algorithm",
    "PGPEState",
    "centered_rank",
    "cma_weights",
    "finite_fitness",
    "min_max",
    "weight_decay",
    "z_score",
]
