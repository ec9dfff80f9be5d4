"""int8 weights with one float scale per output channel: symmetric absmax quantisation (the
integer models of EGGROLL, Sarkar et al. 2025; LLM.int8's per-channel weights, Dettmers et
al. 2022).

A matrix ``W`` is held as ``q = clip(round(W / s), -127, 127)`` (int8, rounded half to even)
and ``s = max |W| / 127`` per output channel (float32): ``W ~ q * s``. A matrix used as ``x
@ W`` (``[in, out]``) has a scale per column, ``x @ W = (x @ q) * s``; the embedding
(``[vocab, d]``, read by rows, and the output head when tied) one per row, its token.

:func:`quantize_params` turns the float matrices of a parameter pytree (and the shared matrix
of a :class:`~evolax.seeded.LowRank` view, its low-rank perturbation kept in float) into
:class:`Int8Matrix` nodes; :func:`dequantize_params` turns them back into float arrays.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, Int8

from evolax.compiled import compiled
from evolax.population import unshare
from evolax.seeded import LowRank
from evolax.types import Params

QMAX = 127
"""The largest magnitude of a quantised weight (``-128`` is never used: the range is
symmetric)."""
INV_QMAX = np.float32(1 / QMAX)
"""``1 / 127`` in float32: a scale is ``max |W| * INV_QMAX``, the product XLA computes for a
division by 127 (exactly rounded, so numpy and every backend agree bit for bit)."""


class Int8Matrix(eqx.Module):
    """A matrix ``q * scale`` stored as int8 ``q`` and one float32 scale per channel along
    ``axis``, used as the float matrix it stands for (``x @ m``, ``m[rows]``, ``m.T``).

    Attributes:
        q: the quantised weights, ``i8[m, n]``.
        scale: ``f32[n]`` (``axis == 1``: a scale per column) or ``f32[m]`` (``axis == 0``:
            per row).
        axis: the axis the scales run along.
        dtype: the float dtype the matrix computes in (the model's activations').
    """

    q: Int8[Array, "m n"]
    scale: Float[Array, " k"]
    axis: int = eqx.field(static=True, default=1)
    dtype: str = eqx.field(static=True, default="float32")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.q.shape)

    @property
    def ndim(self) -> int:
        return 2

    @property
    def T(self) -> Int8Matrix:
        return Int8Matrix(self.q.T, self.scale, 1 - self.axis, self.dtype)

    def __rmatmul__(self, x: Float[Array, "... m"]) -> Float[Array, "... n"]:
        """``x @ (q * scale)``: ``(x @ q) * scale`` with a scale per column, ``(x * scale) @
        q`` with one per row, in ``x``'s dtype."""
        q, scale = self.q.astype(x.dtype), _last(self.scale.astype(x.dtype), x.ndim)
        if self.axis == 1:
            return (x @ q) * scale
        return (x * scale) @ q

    def __getitem__(self, index: Int[Array, "..."]) -> Float[Array, "... n"]:
        """Rows ``index`` (an embedding lookup), dequantised."""
        rows = self.q[index].astype(self.dtype)
        scale = self.scale.astype(self.dtype)
        scale = scale[index][..., None] if self.axis == 0 else _last(scale, rows.ndim)
        return rows * scale

    def dense(self) -> Float[Array, "m n"]:
        """``q * scale`` in :attr:`dtype`."""
        scale = self.scale[None, :] if self.axis == 1 else self.scale[:, None]
        return (self.q.astype(jnp.float32) * scale).astype(self.dtype)


def _last(v: Float[Array, " n"], ndim: int) -> Float[Array, "..."]:
    """``v`` along the last of ``ndim`` axes (explicit broadcasting)."""
    return v.reshape((1,) * (ndim - 1) + (-1,))


@compiled
def quantize(w: Float[Array, "m n"], axis: int = 1, dtype: Any = None) -> Int8Matrix:
    """``w`` quantised with one scale per channel along ``axis``: ``scale = max |w| / 127``
    over the other axis (in float32, as ``max |w| * float32(1 / 127)``), ``q =
    clip(round_half_even(w / scale), -127, 127)``; a channel of zeros has scale 0 and ``q =
    0``. ``dtype``: the float dtype the matrix computes in (``w``'s by default). One program
    per shape when called eagerly (reading a checkpoint)."""
    dtype = jnp.dtype(w.dtype if dtype is None else dtype).name
    w32 = w.astype(jnp.float32)
    scale = jnp.max(jnp.abs(w32), axis=1 - axis) * INV_QMAX
    safe = jnp.where(scale > 0, scale, 1.0)
    safe = safe[None, :] if axis == 1 else safe[:, None]
    q = jnp.clip(jnp.round(w32 / safe), -QMAX, QMAX).astype(jnp.int8)
    return Int8Matrix(q, scale, axis, dtype)


def channel_axis(path: tuple) -> int:
    """The axis of a parameter's output channels: the embedding's rows (its tokens), else
    the columns of an ``x @ W`` matrix."""
    return 0 if _name(path[0]) == "embed" else 1


def _name(entry: Any) -> Any:
    return getattr(entry, "key", getattr(entry, "idx", entry))


def _is_node(x: Any) -> bool:
    return isinstance(x, LowRank | Int8Matrix)


def quantize_params(params: Params, dtype: Any) -> Params:
    """``params`` with every matrix as an :class:`Int8Matrix` computing in ``dtype``: a float
    matrix quantised, a :class:`~evolax.seeded.LowRank` view's shared matrix quantised (its
    factors kept: the perturbation applies in float), an :class:`Int8Matrix` kept; vectors
    (norm scales) unchanged."""

    def one(path, x):
        if isinstance(x, Int8Matrix):
            return x
        axis = channel_axis(path)
        if isinstance(x, LowRank):
            w = unshare(x.w)
            w = w if isinstance(w, Int8Matrix) else quantize(w, axis, dtype)
            return LowRank(w, x.a, x.b, x.scale)
        return quantize(x, axis, dtype) if x.ndim == 2 else x

    return jax.tree_util.tree_map_with_path(one, params, is_leaf=_is_node)


def dequantize_params(params: Params) -> Params:
    """``params`` with every :class:`Int8Matrix` as its float matrix ``q * scale``."""
    return jax.tree.map(
        lambda x: x.dense() if isinstance(x, Int8Matrix) else x,
        params,
        is_leaf=lambda x: isinstance(x, Int8Matrix),
    )
