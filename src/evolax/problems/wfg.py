"""The nine WFG test problems (Huband, Hingston, Barone & While, 2006), minimised as published.

Each maps ``z: f[..., n]`` with ``z_i`` in ``[0, 2 i]`` (the paper's domain, ``i = 1 .. n``) to
objectives ``f[..., m]`` (any leading batch shape). The first ``k`` variables are
position-related, the other ``l = n - k`` distance-related; ``k`` defaults to pymoo's choice,
4 for two objectives and ``2 (m - 1)`` otherwise, and must be a multiple of ``m - 1`` (WFG2
and WFG3 need ``l`` even). The objectives are ``f_j = x_m + 2 j h_j(x_1 .. x_{m-1})``:
the distance ``x_m`` is 0 on the front, the shapes ``h`` are the paper's (WFG1: convex and
mixed, WFG2: convex and disconnected, WFG3: linear and degenerate, WFG4-9: concave).
:func:`wfg_front` samples each front from those shapes.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from evolax.pareto.sorting import non_dominated_rank

__all__ = [
    "WFG_PROBLEMS",
    "wfg1",
    "wfg2",
    "wfg3",
    "wfg4",
    "wfg5",
    "wfg6",
    "wfg7",
    "wfg8",
    "wfg9",
    "wfg_front",
    "wfg_position_parameters",
]


def wfg_position_parameters(n_objectives: int) -> int:
    """pymoo's default number of position-related variables ``k``: 4 for two objectives,
    ``2 (m - 1)`` for more."""
    return 4 if n_objectives == 2 else 2 * (n_objectives - 1)


def _setup(
    z: ArrayLike, n_objectives: int, k: int | None, name: str, even_l: bool = False
) -> tuple[Array, int]:
    """``z`` normalised to ``[0, 1]`` (``z_i / 2i``) and ``k``, with the arguments checked."""
    if not isinstance(n_objectives, int) or n_objectives < 2:
        raise ValueError(f"{name}: n_objectives must be an integer >= 2, got {n_objectives!r}")
    k = wfg_position_parameters(n_objectives) if k is None else k
    z = jnp.asarray(z)
    z = z.astype(jnp.promote_types(z.dtype, jnp.float32))
    n = z.shape[-1] if z.ndim else 0
    if k < 1 or k % (n_objectives - 1):
        raise ValueError(f"{name}: k must be a positive multiple of n_objectives - 1, got {k}")
    if z.ndim < 1 or n <= k or (even_l and (n - k) % 2):
        parity = " even" if even_l else ""
        raise ValueError(
            f"{name}: z must have shape (..., n) with n - k > 0{parity} (k = {k}), got {z.shape}"
        )
    return z / _along(2.0 * jnp.arange(1, n + 1, dtype=z.dtype), z), k


def _along(v: Array, like: Array) -> Array:
    """A vector over the last axis, shaped to broadcast against ``like``."""
    return jnp.reshape(v, (1,) * (like.ndim - 1) + (-1,))


# ---- transformations (Huband et al., 2006, Table 2) ---------------------------------------


def _unit(y: Array) -> Array:
    return jnp.clip(y, 0.0, 1.0)


def _shift_linear(y: Array, a: float) -> Array:
    return _unit(jnp.abs(y - a) / jnp.abs(jnp.floor(a - y) + a))


def _shift_deceptive(y: Array, a: float, b: float, c: float) -> Array:
    t1 = jnp.floor(y - a + b) * (1.0 - c + (a - b) / b) / (a - b)
    t2 = jnp.floor(a + b - y) * (1.0 - c + (1.0 - a - b) / b) / (1.0 - a - b)
    return _unit(1.0 + (jnp.abs(y - a) - b) * (t1 + t2 + 1.0 / b))


def _shift_multimodal(y: Array, a: float, b: float, c: float) -> Array:
    t = jnp.abs(y - c) / (2.0 * (jnp.floor(c - y) + c))
    return _unit(
        (1.0 + jnp.cos((4.0 * a + 2.0) * jnp.pi * (0.5 - t)) + 4.0 * b * t * t) / (b + 2.0)
    )


def _bias_flat(y: Array, a: float, b: float, c: float) -> Array:
    """``b_flat``: ``a`` on ``[b, c]``, linear to 0 at 0 and to 1 at 1. Written per piece
    (``a y / b`` below ``b``), not as the paper's ``a + min(0, floor(y - b)) a (b - y) / b -
    ...``, whose cancellation leaves ``~1e-8`` in float32 at ``y = 0``: WFG1 raises it to the
    power 0.02 next, which makes that ``0.7``."""
    low = a * y / b
    high = a + (1.0 - a) * (y - c) / (1.0 - c)
    return _unit(jnp.where(y < b, low, jnp.where(y > c, high, a)))


def _bias_param(
    y: Array, u: Array, a: float = 0.98 / 49.98, b: float = 0.02, c: float = 50.0
) -> Array:
    v = a - (1.0 - 2.0 * u) * jnp.abs(jnp.floor(0.5 - u) + a)
    return _unit(y ** (b + (c - b) * v))


def _mean(y: Array) -> Array:
    return _unit(jnp.mean(y, axis=-1))


def _nonseparable(y: Array, a: int) -> Array:
    """``r_nonsep``: each variable plus its absolute differences to the next ``a - 1``
    (cyclically), normalised to ``[0, 1]``."""
    total = jnp.sum(y, axis=-1)
    for shift in range(1, a):
        total = total + jnp.sum(jnp.abs(y - jnp.roll(y, -shift, axis=-1)), axis=-1)
    half = -(-a // 2)
    return _unit(total / (y.shape[-1] * half * (1.0 + 2.0 * a - 2.0 * half) / a))


def _groups(y: Array, k: int, m: int, reduce: Callable[[Array], Array], distance=None) -> Array:
    """The ``m - 1`` position groups of ``y[..., :k]`` and the distance variables
    (``distance``, default ``y[..., k:]``), each reduced to one value: ``[..., m]``."""
    gap = k // (m - 1)
    rest = y[..., k:] if distance is None else distance
    parts = [reduce(y[..., j * gap : (j + 1) * gap]) for j in range(m - 1)]
    return jnp.stack([*parts, reduce(rest)], axis=-1)


# ---- shapes (Table 1) ---------------------------------------------------------------------


def _shape(products: Array, complements: Array) -> Array:
    """``h_j = prod_{i <= m - j} p_i`` times ``c_{m - j + 1}`` for ``j > 1``: ``[..., m]``
    from ``p``, ``c`` ``[..., m - 1]``."""
    ones = jnp.ones((*products.shape[:-1], 1), products.dtype)
    cumulative = jnp.cumprod(jnp.concatenate([ones, products], axis=-1), axis=-1)[..., ::-1]
    return cumulative * jnp.concatenate([ones, complements[..., ::-1]], axis=-1)


def _concave(x: Array) -> Array:
    angle = 0.5 * jnp.pi * x
    return _unit(_shape(jnp.sin(angle), jnp.cos(angle)))


def _convex(x: Array) -> Array:
    angle = 0.5 * jnp.pi * x
    return _unit(_shape(1.0 - jnp.cos(angle), 1.0 - jnp.sin(angle)))


def _linear(x: Array) -> Array:
    return _unit(_shape(x, 1.0 - x))


def _mixed(x: Array, a: float = 5.0) -> Array:
    return _unit(1.0 - x - jnp.cos(2.0 * a * jnp.pi * x + 0.5 * jnp.pi) / (2.0 * a * jnp.pi))


def _disconnected(x: Array, a: float = 5.0) -> Array:
    return _unit(1.0 - x * jnp.cos(a * jnp.pi * x) ** 2)


def _objectives(
    t: Array, shape: Callable[[Array], Array], degenerate: bool = False, last=None
) -> Array:
    """``f_j = x_m + 2 j h_j``: ``t`` ``[..., m]`` mapped to the shape's variables (WFG3's
    ``A = (1, 0, ..)``: all but the first held at 1/2 on the front), ``last`` replacing
    ``h_m``."""
    m = t.shape[-1]
    distance = t[..., -1:]
    a = jnp.asarray([1.0] + [0.0 if degenerate else 1.0] * (m - 2), t.dtype)
    x = jnp.maximum(distance, _along(a, t)) * (t[..., :-1] - 0.5) + 0.5
    h = shape(x)
    if last is not None:
        h = h.at[..., -1].set(last(x[..., 0]))
    return distance + _along(2.0 * jnp.arange(1, m + 1, dtype=t.dtype), h) * h


# ---- the problems ------------------------------------------------------------------------


def wfg1(z: Float[ArrayLike, "... n"], n_objectives: int = 2, k: int | None = None):
    """WFG1: distance variables shifted and flat-biased, all polynomially biased (0.02),
    weighted sums; convex front with a mixed last objective. Returns ``[..., m]``.

    The distance is 0 only where ``z_i / 2i`` is 0.35 exactly in the working precision: the
    bias ``y^0.02`` makes any residual ``e`` of the shift ``e^0.02`` (float32's ``3e-8``:
    0.71; float64's ``1e-16``: 0.48), so pymoo's own sampled WFG1 front lies above the true
    one, which :func:`wfg_front` samples."""
    y, k = _setup(z, n_objectives, k, "wfg1")
    y = y.at[..., k:].set(_bias_flat(_shift_linear(y[..., k:], 0.35), 0.8, 0.75, 0.85))
    y = _unit(y**0.02)
    w = 2.0 * jnp.arange(1, y.shape[-1] + 1, dtype=y.dtype)
    gap = k // (n_objectives - 1)

    def weighted(lo: int, hi: int) -> Array:
        return _unit(jnp.sum(y[..., lo:hi] * _along(w[lo:hi], y), -1) / jnp.sum(w[lo:hi]))

    parts = [weighted(j * gap, (j + 1) * gap) for j in range(n_objectives - 1)]
    t = jnp.stack([*parts, weighted(k, y.shape[-1])], axis=-1)
    return _objectives(t, _convex, last=_mixed)


def _wfg2_reduction(z, n_objectives, k, name) -> Array:
    """WFG2's and WFG3's transformations: shift, pairwise non-separable, mean."""
    y, k = _setup(z, n_objectives, k, name, even_l=True)
    distance = _shift_linear(y[..., k:], 0.35)
    pairs = distance.reshape(*distance.shape[:-1], -1, 2)
    return _groups(y, k, n_objectives, _mean, distance=_nonseparable(pairs, 2))


def wfg2(z: Float[ArrayLike, "... n"], n_objectives: int = 2, k: int | None = None):
    """WFG2: pairs of distance variables non-separable; convex front with a disconnected last
    objective (``l`` even). Returns ``[..., m]``."""
    t = _wfg2_reduction(z, n_objectives, k, "wfg2")
    return _objectives(t, _convex, last=_disconnected)


def wfg3(z: Float[ArrayLike, "... n"], n_objectives: int = 2, k: int | None = None):
    """WFG3: WFG2's transformations, a linear front degenerate to a line (``A_2.. = 0``;
    ``l`` even). Returns ``[..., m]``."""
    t = _wfg2_reduction(z, n_objectives, k, "wfg3")
    return _objectives(t, _linear, degenerate=True)


def wfg4(z: Float[ArrayLike, "... n"], n_objectives: int = 2, k: int | None = None):
    """WFG4: every variable multimodal (``s_multi(30, 10, 0.35)``); concave front. Returns
    ``[..., m]``."""
    y, k = _setup(z, n_objectives, k, "wfg4")
    return _objectives(
        _groups(_shift_multimodal(y, 30.0, 10.0, 0.35), k, n_objectives, _mean), _concave
    )


def wfg5(z: Float[ArrayLike, "... n"], n_objectives: int = 2, k: int | None = None):
    """WFG5: every variable deceptive (``s_decept(0.35, 0.001, 0.05)``); concave front.
    Returns ``[..., m]``."""
    y, k = _setup(z, n_objectives, k, "wfg5")
    y = _shift_deceptive(y, 0.35, 0.001, 0.05)
    return _objectives(_groups(y, k, n_objectives, _mean), _concave)


def wfg6(z: Float[ArrayLike, "... n"], n_objectives: int = 2, k: int | None = None):
    """WFG6: distance variables shifted, each group non-separable; concave front. Returns
    ``[..., m]``."""
    y, k = _setup(z, n_objectives, k, "wfg6")
    y = y.at[..., k:].set(_shift_linear(y[..., k:], 0.35))
    gap, n = k // (n_objectives - 1), y.shape[-1]
    parts = [_nonseparable(y[..., j * gap : (j + 1) * gap], gap) for j in range(n_objectives - 1)]
    t = jnp.stack([*parts, _nonseparable(y[..., k:], n - k)], axis=-1)
    return _objectives(t, _concave)


def _mean_after(y: Array) -> Array:
    """``[..., n - 1]``: the mean of ``y[..., i + 1:]`` for each ``i < n - 1``."""
    n = y.shape[-1]
    after = jnp.cumsum(y[..., ::-1], axis=-1)[..., ::-1][..., 1:]
    return _unit(after / _along(jnp.arange(n - 1, 0, -1, dtype=y.dtype), y))


def wfg7(z: Float[ArrayLike, "... n"], n_objectives: int = 2, k: int | None = None):
    """WFG7: position variables biased by the mean of the variables after them, distance
    variables shifted; concave front. Returns ``[..., m]``."""
    y, k = _setup(z, n_objectives, k, "wfg7")
    position = _bias_param(y[..., :k], _mean_after(y)[..., :k])
    y = jnp.concatenate([position, _shift_linear(y[..., k:], 0.35)], axis=-1)
    return _objectives(_groups(y, k, n_objectives, _mean), _concave)


def wfg8(z: Float[ArrayLike, "... n"], n_objectives: int = 2, k: int | None = None):
    """WFG8: distance variables biased by the mean of the variables before them, then
    shifted; concave front. Returns ``[..., m]``."""
    y, k = _setup(z, n_objectives, k, "wfg8")
    n = y.shape[-1]
    before = _unit(
        jnp.cumsum(y, axis=-1)[..., k - 1 : n - 1] / _along(jnp.arange(k, n, dtype=y.dtype), y)
    )
    distance = _shift_linear(_bias_param(y[..., k:], before), 0.35)
    y = jnp.concatenate([y[..., :k], distance], axis=-1)
    return _objectives(_groups(y, k, n_objectives, _mean), _concave)


def wfg9(z: Float[ArrayLike, "... n"], n_objectives: int = 2, k: int | None = None):
    """WFG9: every variable but the last biased by the mean of those after it, position
    variables deceptive and distance variables multimodal, each group non-separable; concave
    front. Returns ``[..., m]``."""
    y, k = _setup(z, n_objectives, k, "wfg9")
    y = jnp.concatenate([_bias_param(y[..., :-1], _mean_after(y)), y[..., -1:]], axis=-1)
    y = jnp.concatenate(
        [
            _shift_deceptive(y[..., :k], 0.35, 0.001, 0.05),
            _shift_multimodal(y[..., k:], 30.0, 95.0, 0.35),
        ],
        axis=-1,
    )
    gap, n = k // (n_objectives - 1), y.shape[-1]
    parts = [_nonseparable(y[..., j * gap : (j + 1) * gap], gap) for j in range(n_objectives - 1)]
    t = jnp.stack([*parts, _nonseparable(y[..., k:], n - k)], axis=-1)
    return _objectives(t, _concave)


WFG_PROBLEMS: dict[str, Callable[..., Array]] = {
    f"wfg{i}": f for i, f in enumerate((wfg1, wfg2, wfg3, wfg4, wfg5, wfg6, wfg7, wfg8, wfg9), 1)
}


def wfg_front(name: str, n_points: int = 1000, n_objectives: int = 2) -> np.ndarray:
    """Points of a WFG problem's true Pareto front, sampled as the paper defines it: the
    distance ``x_m = 0`` and the shape variables ``x_1 .. x_{m-1}`` on a grid of ``[0, 1]``
    (WFG3: ``x_1`` only, the rest at 1/2), the objectives ``2 j h_j(x)``, and only the
    non-dominated points kept (WFG2's front is disconnected; elsewhere all are kept).

    Args:
        name: ``"wfg1"`` .. ``"wfg9"``.
        n_points: grid points, at least (before the filter).
        n_objectives: ``m >= 2``.
    Returns:
        ``[p, m]``, minimised, NumPy float64.
    """
    if name not in WFG_PROBLEMS:
        raise ValueError(f"name must be one of {sorted(WFG_PROBLEMS)}, got {name!r}")
    m = n_objectives
    if name == "wfg3" or m == 2:
        x = np.linspace(0.0, 1.0, n_points)[:, None]
        x = np.concatenate([x, np.full((n_points, m - 2), 0.5)], axis=1)
    else:
        side = int(np.ceil(n_points ** (1.0 / (m - 1))))
        axes = np.meshgrid(*[np.linspace(0.0, 1.0, side)] * (m - 1), indexing="ij")
        x = np.stack([a.ravel() for a in axes], axis=1)
    shape, last = {
        "wfg1": (_convex, _mixed),
        "wfg2": (_convex, _disconnected),
        "wfg3": (_linear, None),
    }.get(name, (_concave, None))
    with jax.enable_x64(True):
        h = shape(jnp.asarray(x))
        if last is not None:
            h = h.at[..., -1].set(last(jnp.asarray(x[:, 0])))
        front = np.asarray(h, np.float64) * 2.0 * np.arange(1, m + 1)
        rank = np.asarray(non_dominated_rank(jnp.asarray(-front)))
    return front[rank == 0]
