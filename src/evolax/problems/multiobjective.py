"""The ZDT (Zitzler, Deb & Thiele, 2000) and DTLZ (Deb, Thiele, Laumanns & Zitzler, 2002)
multi-objective test problems, minimised as published.

Each maps ``x: f[..., n]`` to objectives ``f[..., m]`` (any leading batch shape); negate them
(:func:`~evolax.problems.to_fitness`) for evolax's maximising algorithms. The domain is
``[0, 1]^n``, except ZDT4's ``x_2 .. x_n`` in ``[-5, 5]``. :func:`pareto_front` samples each
problem's true front, for IGD+ and for plots. A hypervolume reference point sits above the
front's maxima: 1.1 in every objective for ZDT and DTLZ2-4, 0.55 for DTLZ1.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from evolax.pareto.reference_directions import simplex_lattice
from evolax.pareto.sorting import non_dominated_rank
from evolax.validation import check_positive_int

__all__ = [
    "MULTIOBJECTIVE_PROBLEMS",
    "dtlz1",
    "dtlz2",
    "dtlz3",
    "dtlz4",
    "pareto_front",
    "zdt1",
    "zdt2",
    "zdt3",
    "zdt4",
    "zdt6",
]


def _inputs(x: ArrayLike, at_least: int, name: str) -> Array:
    x = jnp.asarray(x)
    x = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    if x.ndim < 1 or x.shape[-1] < at_least:
        raise ValueError(f"{name}: x must have shape (..., n) with n >= {at_least}, got {x.shape}")
    return x


def _zdt(f1: Array, g: Array, h: Array) -> Array:
    return jnp.stack([f1, g * h], axis=-1)


def zdt1(x: Float[ArrayLike, "... n"]) -> Float[Array, "... 2"]:
    """ZDT1: ``f1 = x1``, ``f2 = g (1 - sqrt(f1 / g))``, ``g = 1 + 9 mean(x2..n)``; convex
    front ``f2 = 1 - sqrt(f1)``."""
    x = _inputs(x, 2, "zdt1")
    g = 1.0 + 9.0 * jnp.mean(x[..., 1:], axis=-1)
    return _zdt(x[..., 0], g, 1.0 - jnp.sqrt(x[..., 0] / g))


def zdt2(x: Float[ArrayLike, "... n"]) -> Float[Array, "... 2"]:
    """ZDT2: as ZDT1 with ``h = 1 - (f1 / g)^2``; concave front ``f2 = 1 - f1^2``."""
    x = _inputs(x, 2, "zdt2")
    g = 1.0 + 9.0 * jnp.mean(x[..., 1:], axis=-1)
    return _zdt(x[..., 0], g, 1.0 - (x[..., 0] / g) ** 2)


def zdt3(x: Float[ArrayLike, "... n"]) -> Float[Array, "... 2"]:
    """ZDT3: as ZDT1 with ``h = 1 - sqrt(f1 / g) - (f1 / g) sin(10 pi f1)``; five disconnected
    pieces of front."""
    x = _inputs(x, 2, "zdt3")
    f1 = x[..., 0]
    g = 1.0 + 9.0 * jnp.mean(x[..., 1:], axis=-1)
    return _zdt(f1, g, 1.0 - jnp.sqrt(f1 / g) - f1 / g * jnp.sin(10.0 * jnp.pi * f1))


def zdt4(x: Float[ArrayLike, "... n"]) -> Float[Array, "... 2"]:
    """ZDT4: ZDT1's front under ``g = 1 + 10 (n - 1) + sum_i (x_i^2 - 10 cos(4 pi x_i))`` over
    ``x_2 .. x_n`` in ``[-5, 5]``: ``21^9`` local fronts."""
    x = _inputs(x, 2, "zdt4")
    rest = x[..., 1:]
    g = 1.0 + 10.0 * rest.shape[-1] + jnp.sum(rest**2 - 10.0 * jnp.cos(4.0 * jnp.pi * rest), -1)
    return _zdt(x[..., 0], g, 1.0 - jnp.sqrt(x[..., 0] / g))


def zdt6(x: Float[ArrayLike, "... n"]) -> Float[Array, "... 2"]:
    """ZDT6: ``f1 = 1 - exp(-4 x1) sin^6(6 pi x1)``, ``g = 1 + 9 mean(x2..n)^0.25``,
    ``h = 1 - (f1 / g)^2``: a non-uniform concave front."""
    x = _inputs(x, 2, "zdt6")
    f1 = 1.0 - jnp.exp(-4.0 * x[..., 0]) * jnp.sin(6.0 * jnp.pi * x[..., 0]) ** 6
    g = 1.0 + 9.0 * jnp.mean(x[..., 1:], axis=-1) ** 0.25
    return _zdt(f1, g, 1.0 - (f1 / g) ** 2)


def _dtlz_inputs(x: ArrayLike, n_objectives: int, name: str) -> Array:
    check_positive_int("n_objectives", n_objectives)
    if n_objectives < 2:
        raise ValueError(f"n_objectives must be at least 2, got {n_objectives}")
    return _inputs(x, n_objectives, name)


def _multimodal_g(rest: Array) -> Array:
    """DTLZ1's and DTLZ3's distance function: ``11^k - 1`` local fronts."""
    d = rest - 0.5
    return 100.0 * (rest.shape[-1] + jnp.sum(d * d - jnp.cos(20.0 * jnp.pi * d), axis=-1))


def _spherical(position: Array, g: Array) -> Array:
    """``(1 + g)`` times the point of the unit sphere at angles ``position * pi / 2``."""
    angle = position * (jnp.pi / 2)
    ones = jnp.ones((*position.shape[:-1], 1), position.dtype)
    # f_i = prod_{j < m - i} cos(a_j) * sin(a_{m - i}) (the first objective has no sine)
    # cos(pi / 2) is -4.4e-8 in float32: clipped, objectives on the boundary are 0, not below
    cosine = jnp.maximum(jnp.cos(angle), 0.0)
    cosines = jnp.cumprod(jnp.concatenate([ones, cosine], axis=-1), axis=-1)
    sines = jnp.concatenate([ones, jnp.sin(angle[..., ::-1])], axis=-1)
    return (1.0 + g)[..., None] * cosines[..., ::-1] * sines


def dtlz1(x: Float[ArrayLike, "... n"], n_objectives: int = 3) -> Float[Array, "... m"]:
    """DTLZ1: the linear front ``sum_i f_i = 0.5`` under a multimodal distance function.

    Args:
        x: ``[..., n]`` with ``n >= n_objectives`` (usually ``n_objectives + 4``).
        n_objectives: ``m >= 2``.
    """
    x = _dtlz_inputs(x, n_objectives, "dtlz1")
    position, g = x[..., : n_objectives - 1], _multimodal_g(x[..., n_objectives - 1 :])
    ones = jnp.ones((*x.shape[:-1], 1), x.dtype)
    products = jnp.cumprod(jnp.concatenate([ones, position], axis=-1), axis=-1)[..., ::-1]
    complements = jnp.concatenate([ones, 1.0 - position[..., ::-1]], axis=-1)
    return 0.5 * (1.0 + g)[..., None] * products * complements


def dtlz2(x: Float[ArrayLike, "... n"], n_objectives: int = 3) -> Float[Array, "... m"]:
    """DTLZ2: the spherical front ``sum_i f_i^2 = 1``, ``g = sum (x_i - 0.5)^2`` over the last
    ``n - m + 1`` variables.

    Args:
        x: ``[..., n]`` with ``n >= n_objectives`` (usually ``n_objectives + 9``).
        n_objectives: ``m >= 2``.
    """
    x = _dtlz_inputs(x, n_objectives, "dtlz2")
    rest = x[..., n_objectives - 1 :]
    return _spherical(x[..., : n_objectives - 1], jnp.sum((rest - 0.5) ** 2, axis=-1))


def dtlz3(x: Float[ArrayLike, "... n"], n_objectives: int = 3) -> Float[Array, "... m"]:
    """DTLZ3: DTLZ2's front under DTLZ1's multimodal distance function."""
    x = _dtlz_inputs(x, n_objectives, "dtlz3")
    g = _multimodal_g(x[..., n_objectives - 1 :])
    return _spherical(x[..., : n_objectives - 1], g)


def dtlz4(
    x: Float[ArrayLike, "... n"], n_objectives: int = 3, alpha: float = 100.0
) -> Float[Array, "... m"]:
    """DTLZ4: DTLZ2 with each position variable raised to ``alpha``, which crowds the
    solutions near the front's edges."""
    x = _dtlz_inputs(x, n_objectives, "dtlz4")
    rest = x[..., n_objectives - 1 :]
    position = x[..., : n_objectives - 1] ** alpha
    return _spherical(position, jnp.sum((rest - 0.5) ** 2, axis=-1))


Problem = Callable[..., Float[Array, "... m"]]
MULTIOBJECTIVE_PROBLEMS: dict[str, Problem] = {
    "zdt1": zdt1,
    "zdt2": zdt2,
    "zdt3": zdt3,
    "zdt4": zdt4,
    "zdt6": zdt6,
    "dtlz1": dtlz1,
    "dtlz2": dtlz2,
    "dtlz3": dtlz3,
    "dtlz4": dtlz4,
}


def pareto_front(name: str, n_points: int = 1000, n_objectives: int = 2) -> np.ndarray:
    """Points of a problem's true Pareto front (minimised objectives, NumPy float64).

    ZDT fronts are ``n_points`` evenly spaced in ``f1`` (ZDT3: the non-dominated part of its
    curve, so fewer); DTLZ fronts are the points of a simplex lattice (:func:`~evolax.pareto.
    simplex_lattice`) with the fewest divisions giving at least ``n_points``, on the plane
    (DTLZ1) or projected onto the sphere (DTLZ2-4).

    Args:
        name: a key of :data:`MULTIOBJECTIVE_PROBLEMS`.
        n_points: how many points, at least (ZDT3: before filtering).
        n_objectives: ``m`` for DTLZ (ZDT has 2).
    Returns:
        ``[k, m]``.
    """
    if name not in MULTIOBJECTIVE_PROBLEMS:
        raise ValueError(f"name must be one of {sorted(MULTIOBJECTIVE_PROBLEMS)}, got {name!r}")
    check_positive_int("n_points", n_points)
    if name in ("zdt1", "zdt4"):
        f1 = np.linspace(0.0, 1.0, n_points)
        return np.stack([f1, 1.0 - np.sqrt(f1)], axis=-1)
    if name in ("zdt2", "zdt6"):
        low = 0.0 if name == "zdt2" else 0.2807753191  # ZDT6's smallest f1
        f1 = np.linspace(low, 1.0, n_points)
        return np.stack([f1, 1.0 - f1**2], axis=-1)
    if name == "zdt3":
        f1 = np.linspace(0.0, 0.8518328654, n_points)
        curve = np.stack([f1, 1.0 - np.sqrt(f1) - f1 * np.sin(10.0 * np.pi * f1)], axis=-1)
        rank = np.asarray(non_dominated_rank(jnp.asarray(-curve)))
        return curve[rank == 0]
    divisions = 1
    while len(simplex_lattice(n_objectives, divisions)) < n_points:
        divisions += 1
    weights = simplex_lattice(n_objectives, divisions)
    if name == "dtlz1":
        return 0.5 * weights
    return weights / np.linalg.norm(weights, axis=-1, keepdims=True)
