"""Benchmark functions: COCO's 24 noiseless BBOB functions and classic test functions."""

from evolax.problems.bbob import (
    BBOB_DIMENSIONS,
    BBOB_FUNCTION_NAMES,
    BBOBProblem,
    bbob_problem,
    bbob_suite,
)
from evolax.problems.classic import ellipsoid, rastrigin, rosenbrock, shifted, sphere, to_fitness

__all__ = [
    "BBOB_DIMENSIONS",
    "BBOB_FUNCTION_NAMES",
    "BBOBProblem",
    "bbob_problem",
    "bbob_suite",
    "ellipsoid",
    "rastrigin",
    "rosenbrock",
    "shifted",
    "sphere",
    "to_fitness",
]
