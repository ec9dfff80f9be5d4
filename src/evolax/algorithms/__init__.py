"""Evolution algorithms (ask/tell, fitness maximised)."""

from evolax.algorithms.base import Algorithm
from evolax.algorithms.pgpe import PGPE, PGPEState
from evolax.algorithms.shaping import centered_rank

__all__ = ["Algorithm", "PGPE", "PGPEState", "centered_rank"]
