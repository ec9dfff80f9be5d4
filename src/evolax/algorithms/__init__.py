"""Evolution algorithms (ask/tell, fitness maximised)."""

from evolax.algorithms.base import Algorithm
from evolax.algorithms.open_es import OpenES, OpenESState
from evolax.algorithms.pgpe import PGPE, PGPEState
from evolax.algorithms.shaping import (
    centered_rank,
    cma_weights,
    finite_fitness,
    min_max,
    nes_utilities,
    weight_decay,
    z_score,
)
from evolax.algorithms.snes import SNES, SNESState

__all__ = [
    "PGPE",
    "OpenES",
    "OpenESState",
    "SNES",
    "SNESState",
    "Algorithm",
    "PGPEState",
    "centered_rank",
    "cma_weights",
    "finite_fitness",
    "min_max",
    "nes_utilities",
    "weight_decay",
    "z_score",
]
