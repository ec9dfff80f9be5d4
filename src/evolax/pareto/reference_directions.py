"""Das and Dennis's evenly spread weight vectors on the unit simplex (Das & Dennis, 1998): the
reference directions of NSGA-III and MOEA/D, and points of linear and spherical fronts."""

from __future__ import annotations

import itertools

import numpy as np
from jaxtyping import Float

from evolax.validation import check_positive_int

__all__ = ["simplex_lattice"]


def simplex_lattice(n_objectives: int, divisions: int) -> Float[np.ndarray, "k m"]:
    """Every vector of ``n_objectives`` multiples of ``1 / divisions`` that sum to 1:
    ``C(divisions + m - 1, m - 1)`` rows, the first weight descending (NumPy, float64).

    Args:
        n_objectives: ``m``, a positive integer.
        divisions: steps along each edge of the simplex, a positive integer.
    Returns:
        ``[k, m]``.
    """
    check_positive_int("n_objectives", n_objectives)
    check_positive_int("divisions", divisions)
    # stars and bars: m - 1 bars among divisions + m - 1 places
    rows = []
    for bars in itertools.combinations(range(divisions + n_objectives - 1), n_objectives - 1):
        edges = (-1, *bars, divisions + n_objectives - 1)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(n_objectives)])
    return np.asarray(rows, np.float64)[::-1] / divisions
