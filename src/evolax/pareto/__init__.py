"""Pareto tools for multi-objective search, every objective maximised: non-dominated sorting,
crowding distance, hypervolume and IGD+."""

from evolax.pareto.hypervolume import hypervolume
from evolax.pareto.igd import igd_plus
from evolax.pareto.sorting import crowding_distance, dominates, finite_rows, non_dominated_rank

__all__ = [
    "crowding_distance",
    "dominates",
    "finite_rows",
    "hypervolume",
    "igd_plus",
    "non_dominated_rank",
]
