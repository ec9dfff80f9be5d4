"""The ZDT (Zitzler, Deb & Thiele, 2000), DTLZ (Deb, Thiele, Laumanns & Zitzler, 2002) and
WFG (Huband et al., 2006; :mod:`evolax.problems.wfg`) multi-objective test problems, minimised
as published.

Each maps ``x: f[..., n]`` to objectives ``f[..., m]`` (any leading batch shape); negate them
(:func:`~evolax.problems.to_fitness`) for evolax's maximising algorithms. The domain is
``[0, 1]^n``, except ZDT4's ``x_2 .. x_n`` in ``[-5, 5]`` and WFG's ``z_i`` in ``[0, 2i]``
(:data:`DOMAINS` gives the bounds). :func:`pareto_front` samples each problem's true front,
for IGD+ and for plots.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from evolax.pareto.reference_directions import simplex_lattice
from evolax.pareto.sorting import non_dominated_rank
from evolax.problems.wfg import WFG_PROBLEMS, wfg_front
from evolax.validation import check_positive_int

__all__ = [
    "MULTIOBJECTIVE_PROBLEMS",
    "dtlz1",
    "dtlz2",
    "dtlz3",
    "dtlz4",
    "dtlz5",
    "dtlz6",
    "dtlz7",
    "domain",
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


def _degenerate_position(x: Array, g: Array, n_objectives: int) -> Array:
    """DTLZ5's and DTLZ6's angles over ``pi / 2``: ``x_1``, then ``(1 + 2 g x_i) / (2 (1 +
    g))``, which all tend to 1/2 (a curve) as ``g`` goes to 0."""
    position = x[..., : n_objectives - 1]
    bent = (1.0 + 2.0 * g[..., None] * position[..., 1:]) / (2.0 * (1.0 + g[..., None]))
    return jnp.concatenate([position[..., :1], bent], axis=-1)


def dtlz5(x: Float[ArrayLike, "... n"], n_objectives: int = 3) -> Float[Array, "... m"]:
    """DTLZ5: DTLZ2's sphere with every angle but the first pulled toward ``pi / 4`` as ``g``
    falls, so the front is a curve (degenerate for ``m >= 3``)."""
    x = _dtlz_inputs(x, n_objectives, "dtlz5")
    g = jnp.sum((x[..., n_objectives - 1 :] - 0.5) ** 2, axis=-1)
    return _spherical(_degenerate_position(x, g, n_objectives), g)


def dtlz6(x: Float[ArrayLike, "... n"], n_objectives: int = 3) -> Float[Array, "... m"]:
    """DTLZ6: DTLZ5 with the harder distance function ``g = sum x_i^0.1`` (0 at ``x_i = 0``)."""
    x = _dtlz_inputs(x, n_objectives, "dtlz6")
    g = jnp.sum(x[..., n_objectives - 1 :] ** 0.1, axis=-1)
    return _spherical(_degenerate_position(x, g, n_objectives), g)


def dtlz7(x: Float[ArrayLike, "... n"], n_objectives: int = 3) -> Float[Array, "... m"]:
    """DTLZ7: ``f_i = x_i`` for ``i < m`` and ``f_m = (1 + g) (m - sum_i f_i / (1 + g) (1 +
    sin(3 pi f_i)))``, ``g = 1 + 9 mean(x_m..n)``: ``2^(m-1)`` disconnected pieces of front."""
    x = _dtlz_inputs(x, n_objectives, "dtlz7")
    f = x[..., : n_objectives - 1]
    g = 1.0 + 9.0 * jnp.mean(x[..., n_objectives - 1 :], axis=-1)
    h = n_objectives - jnp.sum(f / (1.0 + g[..., None]) * (1.0 + jnp.sin(3.0 * jnp.pi * f)), -1)
    return jnp.concatenate([f, ((1.0 + g) * h)[..., None]], axis=-1)


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
    "dtlz5": dtlz5,
    "dtlz6": dtlz6,
    "dtlz7": dtlz7,
    **WFG_PROBLEMS,
}


def domain(name: str, n_var: int) -> tuple[np.ndarray, np.ndarray]:
    """The box a problem is defined on: lower and upper bounds, ``[n_var]`` each."""
    if name not in MULTIOBJECTIVE_PROBLEMS:
        raise ValueError(f"name must be one of {sorted(MULTIOBJECTIVE_PROBLEMS)}, got {name!r}")
    lower, upper = np.zeros(n_var), np.ones(n_var)
    if name == "zdt4":
        lower[1:], upper[1:] = -5.0, 5.0
    elif name.startswith("wfg"):
        upper = 2.0 * np.arange(1, n_var + 1, dtype=np.float64)
    return lower, upper


def pareto_front(name: str, n_points: int = 1000, n_objectives: int = 2) -> np.ndarray:
    """Points of a problem's true Pareto front (minimised objectives, NumPy float64).

    ZDT fronts are ``n_points`` evenly spaced in ``f1`` (ZDT3: the non-dominated part of its
    curve, so fewer); DTLZ1-4 fronts are the points of a simplex lattice (:func:`~evolax.pareto.
    simplex_lattice`) with the fewest divisions giving at least ``n_points``, on the plane
    (DTLZ1) or projected onto the sphere (DTLZ2-4); DTLZ5-6's is the curve of the sphere at
    ``n_points`` first angles evenly spaced, the others ``pi / 4``; DTLZ7's, a grid of ``f_1 ..
    f_{m-1}`` in ``[0, 1]`` with ``g = 1``, its non-dominated points; WFG's, :func:`~evolax.
    problems.wfg.wfg_front`.

    Args:
        name: a key of :data:`MULTIOBJECTIVE_PROBLEMS`.
        n_points: how many points, at least (ZDT3, DTLZ7 and WFG: before filtering).
        n_objectives: ``m`` for DTLZ and WFG (ZDT has 2).
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
    if name.startswith("wfg"):
        return wfg_front(name, n_points, n_objectives)
    if name in ("dtlz5", "dtlz6"):
        angle = np.linspace(0.0, np.pi / 2, n_points)[:, None]
        angles = np.concatenate([angle, np.full((n_points, n_objectives - 2), np.pi / 4)], 1)
        ones = np.ones((n_points, 1))
        cosines = np.cumprod(np.concatenate([ones, np.cos(angles)], 1), 1)[:, ::-1]
        return cosines * np.concatenate([ones, np.sin(angles[:, ::-1])], 1)
    if name == "dtlz7":
        side = int(np.ceil(n_points ** (1.0 / (n_objectives - 1))))
        axes = np.meshgrid(*[np.linspace(0.0, 1.0, side)] * (n_objectives - 1), indexing="ij")
        f = np.stack([a.ravel() for a in axes], axis=1)
        last = 2.0 * n_objectives - np.sum(f * (1.0 + np.sin(3.0 * np.pi * f)), axis=1)
        points = np.concatenate([f, last[:, None]], axis=1)
        with jax.enable_x64(True):
            rank = np.asarray(non_dominated_rank(jnp.asarray(-points)))
        return points[rank == 0]
    divisions = 1
    while len(simplex_lattice(n_objectives, divisions)) < n_points:
        divisions += 1
    weights = simplex_lattice(n_objectives, divisions)
    if name == "dtlz1":
        return 0.5 * weights
    return weights / np.linalg.norm(weights, axis=-1, keepdims=True)
