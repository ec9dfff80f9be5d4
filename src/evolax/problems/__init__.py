"""Benchmark functions: COCO's 24 noiseless BBOB functions, classic test functions and an
unrolled system for truncated estimators (influence balancing), and the QD literature's
linear-projection benchmark."""

from evolax.problems.bbob import (
    BBOB_DIMENSIONS,
    BBOB_FUNCTION_NAMES,
    BBOBProblem,
    bbob_problem,
    bbob_suite,
)
from evolax.problems.classic import ellipsoid, rastrigin, rosenbrock, shifted, sphere, to_fitness
from evolax.problems.linear_projection import linear_projection_bound, sphere_linear_projection
from evolax.problems.unrolled import InfluenceBalancing

__all__ = [
    "BBOB_DIMENSIONS",
    "BBOB_FUNCTION_NAMES",
    "BBOBProblem",
    "InfluenceBalancing",
    "bbob_problem",
    "bbob_suite",
    "linear_projection_bound",
    "ellipsoid",
    "rastrigin",
    "rosenbrock",
    "shifted",
    "sphere",
    "sphere_linear_projection",
    "to_fitness",
]
