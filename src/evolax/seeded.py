"""Populations that exist as seeds: members regenerated from ``(key, index)``, and low-rank
matrices applied inside the forward pass.

An evolution strategy's member ``i`` is ``mean + std * eps_i``. Storing the population costs
``pop * D`` numbers: 400 GB at ``D = 1e8`` and ``pop = 1,000``. Here a population is a
:class:`Seeded` node instead: the mean genome and the generation's key, shared by every member
(:class:`Shared`: no population axis), and one integer per member, its global index. The
noise ``eps_i`` is drawn from ``fold_in(key, index)`` where and when it is needed: by the
rollout for the members it evaluates (:meth:`Seeded.materialize`, group by group), and by the
algorithm's update. Only fitness scalars ever need to cross devices.

A matrix leaf of rank ``r > 0`` is perturbed by ``std * a_i b_i^T / sqrt(r)`` with ``a_i``
``[m, r]`` and ``b_i`` ``[n, r]`` standard normal (EGGROLL, Sarkar et al. 2025,
arXiv:2511.16652): its member is a :class:`LowRank` view whose product ``x @ view`` is
``x @ W + scale (x @ a) b^T``, never forming the ``[m, n]`` sum. Under ``vmap`` over the
members, ``x @ W`` with the shared ``W`` is one matrix product for the whole population, as in
batch inference. Leaves of more than two axes are matrices over all axes but the last (a
convolution kernel ``[k, k, c_in, c_out]`` is ``[k k c_in, c_out]``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PyTree, UInt32

from evolax.population import (
    Members,
    Shared,
    materialize,
    pop_axes,
    unshare,
)
from evolax.types import Population, PRNGKey

HIGHEST = jax.lax.Precision.HIGHEST


class LowRank(eqx.Module):
    """One member's matrix ``W + scale * (a @ b.T)``, never formed.

    ``x @ view`` (the only use a policy makes of a weight matrix) computes ``x @ W + scale
    * (x @ a) @ b.T``. ``W`` may have more than two axes; it is then a matrix over all axes
    but the last, and :meth:`dense` restores its shape.

    Attributes:
        w: the shared matrix, ``[*in, n]`` (a :class:`Shared` inside a population): an
            array, or any matrix-like with ``shape``, ``x @ w``, ``w[rows]``, ``w.T`` and
            ``dense()`` (:class:`evolax.lm.quant.Int8Matrix`).
        a: ``[prod(in), r]``.
        b: ``[n, r]``.
        scale: ``[]``.
    """

    w: Any
    a: Float[Array, "m r"]
    b: Float[Array, "n r"]
    scale: Float[Array, ""]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(unshare(self.w).shape)

    @property
    def dtype(self) -> jnp.dtype:
        return unshare(self.w).dtype

    def __rmatmul__(self, x: Float[Array, "... m"]) -> Float[Array, "... n"]:
        return x @ unshare(self.w) + self.scale * ((x @ self.a) @ self.b.T)

    def rows(self, index: Int[Array, "..."]) -> Float[Array, "... n"]:
        """Rows ``index`` of a two-axis ``W + scale * a @ b.T`` (an embedding lookup):
        ``W[index] + scale * a[index] @ b.T``, never the whole matrix."""
        return unshare(self.w)[index] + self.scale * (self.a[index] @ self.b.T)

    def matmul_transposed(self, x: Float[Array, "... n"]) -> Float[Array, "... m"]:
        """``x @ (W + scale * a @ b.T).T`` of a two-axis view (an output head tied to the
        embeddings): ``x @ W.T + scale * (x @ b) @ a.T``."""
        return x @ unshare(self.w).T + self.scale * ((x @ self.b) @ self.a.T)

    def correction(self, project: Callable[[Array], Array]) -> Array:
        """``scale * project(a as a kernel) @ b.T``: the perturbation's share of a linear map
        ``project`` of the kernel (a convolution, say), where ``project(W + delta) =
        project(W) + correction``."""
        kernel = self.a.reshape(*self.shape[:-1], self.a.shape[-1])
        return self.scale * (project(kernel) @ self.b.T)

    def dense(self) -> Array:
        """``W + scale * a @ b.T`` in ``W``'s shape (for tests and export: ``m * n`` numbers;
        a ``W`` held otherwise than as an array, int8 with scales say, formed by its own
        ``dense()``)."""
        w = unshare(self.w)
        w = w.dense() if callable(getattr(w, "dense", None)) else w
        return w + self.scale * (self.a @ self.b.T).reshape(w.shape)


def is_low_rank(node: object) -> bool:
    """Whether ``node`` is a :class:`LowRank` view."""
    return isinstance(node, LowRank)


def dense(x: Any) -> Array:
    """A :class:`LowRank` view's matrix (:meth:`LowRank.dense`); an array unchanged."""
    return x.dense() if isinstance(x, LowRank) else x


class Seeded(Members):
    """A population held as seeds: ``pop`` members around a shared mean genome.

    Member ``i`` (its global ``index``) draws all its noise in one call, from
    ``fold_in(key, i mod half)``: with antithetic pairs (``half > 0``) members ``i`` and
    ``i + half`` share their noise with opposite signs, as ``[mean + std eps_1..half, mean -
    std eps_1..half]``. Each leaf takes its slice of the draw: at full rank (``rank == 0``,
    or a leaf of fewer than two axes) the member's leaf is ``mean + std * sign * eps`` with
    ``eps ~ N(0, I)`` of the leaf's shape; at rank ``r`` a :class:`LowRank` view of ``mean +
    std * sign * a b^T / sqrt(r)``.

    Attributes:
        mean: the mean genome, a pytree (:class:`Shared`).
        key: the generation's noise key (:class:`Shared`).
        std: the noise scale: ``[]``; a pytree like the mean of ``[]`` leaves (one scale per
            leaf, any rank); or, at full rank, of leaf-shaped spreads (one per coordinate)
            (:class:`Shared`).
        index: the members' global indices, ``i32[pop]`` (the whole population's are ``0 ..
            pop - 1`` in order).
        rank: the perturbation's rank (``0``: full).
        half: half the population size for antithetic pairs, ``0`` without them.
        paired: the members are ``k`` first members of antithetic pairs followed by their
            ``k`` partners in the same order, as the whole population is (a group of
            :meth:`groups`): :meth:`materialize` draws each pair's noise once.
    """

    mean: Shared
    key: Shared
    std: Shared
    index: Int[Array, " pop"]
    rank: int = eqx.field(static=True, default=0)
    half: int = eqx.field(static=True, default=0)
    paired: bool = eqx.field(static=True, default=False)

    def slices(self) -> list[tuple[int, tuple[int, ...]]]:
        """Per leaf of the mean (in ``jax.tree.leaves`` order): where its noise starts in a
        member's draw, and the noise's shape (the leaf's, or ``(m + n, r)``)."""
        out, start = [], 0
        for leaf in jax.tree.leaves(unshare(self.mean)):
            shape = tuple(leaf.shape)
            if self.rank > 0 and len(shape) >= 2:
                shape = (math.prod(shape[:-1]) + shape[-1], self.rank)
            out.append((start, shape))
            start += math.prod(shape)
        return out

    @property
    def noise_size(self) -> int:
        """Numbers a member draws."""
        start, shape = self.slices()[-1]
        return start + math.prod(shape)

    def materialize(self) -> PyTree:
        """Drawn for the members it holds: the genome's pytree with leaves ``[pop, *shape]``
        at full rank and :class:`LowRank` views with ``[pop, ...]`` factors at low rank
        (their ``W`` shared). Whole antithetic pairs (the whole population, or a group of
        :meth:`groups`) draw each pair's noise once, for both members."""
        lead = self.index.shape  # [pop], or [teams, agents] for a multi-agent rollout
        whole = self.half and lead == (2 * self.half,)
        if (self.paired or whole) and lead[0] % 2 == 0:
            eps, sign = jax.vmap(noise, in_axes=(None, 0))(self, self.index[: lead[0] // 2])
            eps, sign = jnp.concatenate([eps, eps]), jnp.concatenate([sign, -sign])
            return _leaves(self, eps, sign)
        eps, sign = jax.vmap(noise, in_axes=(None, 0))(self, self.index.ravel())
        return _leaves(self, eps.reshape(*lead, -1), sign.reshape(lead))

    def groups(self, chunk: int) -> tuple[Seeded, Callable[[Array], Array]] | None:
        """Groups of ``chunk`` members that hold whole antithetic pairs: group ``g`` is
        members ``g k .. (g + 1) k - 1`` and their partners ``half + g k ..`` (``k = chunk /
        2``), each group :attr:`paired`. ``None`` (consecutive groups) without antithetic
        pairs, for an odd ``chunk``, or for a part of the population (one device's share)."""
        size = self.index.shape[0]
        if not (self.half and self.index.shape == (2 * self.half,) and chunk % 2 == 0):
            return None
        n, k = size // chunk, chunk // 2
        index = self.index.reshape(2, n, k).swapaxes(0, 1).reshape(n, chunk)

        def restore(x: Array) -> Array:
            return x.reshape(n, 2, k, *x.shape[2:]).swapaxes(0, 1).reshape(size, *x.shape[2:])

        return dataclasses.replace(self, index=index, paired=True), restore


def seeded_population(
    mean: PyTree, key: PRNGKey, std: PyTree, pop_size: int, rank: int, antithetic: bool
) -> Seeded:
    """``pop_size`` members around ``mean`` held as seeds, of the given ``rank`` (``0``:
    full) and with or without antithetic pairs; ``std``: ``[]``, or a pytree like ``mean``
    of ``[]`` leaves (one scale per leaf) or, at full rank only, of leaf-shaped spreads."""
    if rank and any(jnp.ndim(s) for s in jax.tree.leaves(std)):
        raise ValueError(
            "a low-rank population takes one std ([]) or one per leaf, not one per coordinate"
        )
    index = jnp.arange(pop_size, dtype=jnp.int32)
    half = pop_size // 2 if antithetic else 0
    return Seeded(Shared(mean), Shared(key), Shared(std), index, rank, half)


def is_seeded(node: object) -> bool:
    """Whether ``node`` is a :class:`Seeded` population."""
    return isinstance(node, Seeded)


def draw(population: Seeded, noise_index: Int[Array, ""]) -> Float[Array, " n"]:
    """The noise of noise index ``noise_index`` (before the antithetic sign): ``[noise_size]``,
    ``jax.random.normal(fold_in(key, noise_index), [noise_size])`` (:func:`normal`)."""
    dtype = jax.tree.leaves(unshare(population.mean))[0].dtype
    key = jax.random.fold_in(unshare(population.key), noise_index)
    return normal(key, population.noise_size, dtype)


_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(
    k0: Array, k1: Array, x0: UInt32[Array, "*s"], x1: UInt32[Array, "*s"]
) -> tuple[UInt32[Array, "*s"], UInt32[Array, "*s"]]:
    """Threefry-2x32 with 20 rounds (Salmon et al. 2011, "Parallel random numbers: as easy
    as 1, 2, 3") of the counters ``(x0, x1)`` under the key ``(k0, k1)``, written out round by
    round: XLA fuses it into one loop. (JAX's CPU lowering of its Threefry loops over the
    rounds, each pass over whole arrays: 7 to 9 times slower on a 2-core Xeon,
    ``benchmarks/seeded_noise_speed.py``.)"""
    ks = (k0, k1, k0 ^ k1 ^ jnp.uint32(0x1BD11BDA))
    x0, x1 = x0 + k0, x1 + k1
    for j in range(5):
        for r in _ROTATIONS[j % 2]:
            x0 = x0 + x1
            x1 = x0 ^ ((x1 << jnp.uint32(r)) | (x1 >> jnp.uint32(32 - r)))
        x0 = x0 + ks[(j + 1) % 3]
        x1 = x1 + ks[(j + 2) % 3] + jnp.uint32(j + 1)
    return x0, x1


def _unrolled_normal(key: PRNGKey, size: int, dtype: Any) -> Array:
    """``jax.random.normal(key, (size,), dtype)`` of a Threefry key, bit for bit: JAX's bits
    (``y0 ^ y1`` of counters ``(0, i)``), its uniform on ``[nextafter(-1, 0), 1)`` and
    ``sqrt(2) erfinv``, with the hash of :func:`threefry2x32`."""
    k = jax.random.key_data(key)
    count = jax.lax.iota(jnp.uint32, size)
    y0, y1 = threefry2x32(k[0], k[1], jnp.zeros_like(count), count)
    info = jnp.finfo(dtype)
    uint = {8: jnp.uint8, 16: jnp.uint16, 32: jnp.uint32}
    width = 8 if info.nmant < 8 else info.bits  # JAX's: 8 random bits for bfloat16
    bits = (y0 ^ y1).astype(uint[width]).astype(uint[info.bits])
    one = np.array(1.0, dtype).view(uint[info.bits])
    floats = jax.lax.bitcast_convert_type((bits >> (width - info.nmant)) | one, dtype)
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    u = jnp.maximum(lo, (floats - np.array(1.0, dtype)) * (np.array(1.0, dtype) - lo) + lo)
    return jax.lax.erf_inv(u) * np.array(np.sqrt(2), dtype)


def normal(key: PRNGKey, size: int, dtype: Any = jnp.float32) -> Float[Array, " size"]:
    """``jax.random.normal(key, (size,), dtype)``, the same numbers; on the CPU, for a
    Threefry key (JAX's default, partitionable bits) and a float of at most 32 bits, drawn
    by :func:`threefry2x32`'s unrolled rounds: 4 to 5 times faster on a loaded 2-core Xeon
    (``benchmarks/seeded_noise_speed.py``; a 1e8-parameter model's members draw 2e5 numbers
    each, twice a generation)."""
    dtype = jnp.dtype(dtype)
    if not jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.wrap_key_data(key)
    fast = (
        str(jax.random.key_impl(key)) == "threefry2x32"
        and getattr(jax.config, "jax_threefry_partitionable", False)
        and jnp.issubdtype(dtype, jnp.floating)
        and jnp.finfo(dtype).bits <= 32
        and 0 < size < 2**32
    )
    if not fast:
        return jax.random.normal(key, (size,), dtype)
    return jax.lax.platform_dependent(
        key,
        cpu=lambda k: _unrolled_normal(k, size, dtype),
        default=lambda k: jax.random.normal(k, (size,), dtype),
    )


def noise(population: Seeded, index: Int[Array, ""]) -> tuple[Float[Array, " n"], Array]:
    """Member ``index``'s draw and its sign (``-1`` for the second of an antithetic pair)."""
    if population.half:
        sign = jnp.where(index < population.half, 1.0, -1.0)
        return draw(population, index % population.half), sign
    return draw(population, index), jnp.ones([])


def _leaves(population: Seeded, eps: Float[Array, "*pop n"], sign: Float[Array, "*pop"]):
    """The members' genome pytree from their draws ``eps`` and signs ``sign`` (one member,
    or leading population axes on both)."""
    leaves, treedef = jax.tree.flatten(unshare(population.mean))
    lead, before = sign.shape, (1,) * sign.ndim
    out = []
    for leaf, std, (start, shape) in zip(
        leaves, std_leaves(population), population.slices(), strict=True
    ):
        part = eps[..., start : start + math.prod(shape)].reshape(*lead, *shape)
        if shape == tuple(leaf.shape):  # full rank
            spread = jnp.broadcast_to(std, leaf.shape).reshape(*before, *leaf.shape)
            scale = sign.reshape(*lead, *(1,) * leaf.ndim) * spread
            out.append(leaf.reshape(*before, *leaf.shape) + scale.astype(leaf.dtype) * part)
        else:
            rows = shape[0] - leaf.shape[-1]
            a, b = part[..., :rows, :], part[..., rows:, :]
            scale = (std * sign / math.sqrt(population.rank)).astype(leaf.dtype)
            out.append(LowRank(Shared(leaf), a, b, scale))
    return jax.tree.unflatten(treedef, out)


def std_leaves(population: Seeded) -> list[Array]:
    """The noise scale of each leaf of the mean: one ``[]`` scale for all, or the leaf's own
    (``std`` a pytree like the mean: a ``[]`` scale per leaf, or a per-coordinate spread)."""
    std, leaves = unshare(population.std), jax.tree.leaves(unshare(population.mean))
    if not isinstance(std, (list, tuple, dict)) and jnp.ndim(std) == 0:
        return [jnp.asarray(std)] * len(leaves)
    return jax.tree.leaves(std)


def member(population: Seeded, index: Int[Array, ""]) -> PyTree:
    """Member ``index``: the genome's pytree of arrays and :class:`LowRank` views."""
    return _leaves(population, *noise(population, index))


def noise_sums(
    population: Seeded,
    weights: Float[Array, " n"],
    square_weights: Float[Array, " n"] | None = None,
    block: int | None = None,
) -> tuple[PyTree, PyTree | None]:
    """``sum_j weights_j E_j`` over the noise of indices ``j = 0 .. n-1`` (the unsigned
    ``eps_j``, or ``a_j b_j^T / sqrt(r)`` at low rank), a pytree like the mean, and, given
    ``square_weights`` (full rank only), ``sum_j square_weights_j eps_j^2``; drawing at most
    ``block`` members' noise at once (``None``: all ``n``; it must divide ``n``).

    At low rank each matrix's sum is ``A^T diag(w) B`` over the stacked factors: one matrix
    product, never an ``[n, m, n_out]`` array."""
    leaves, treedef = jax.tree.flatten(unshare(population.mean))
    n = weights.shape[0]
    block = n if block is None else block
    if n % block:
        raise ValueError(f"block={block} must divide the {n} members the update sums over")
    if square_weights is not None and population.rank:
        raise ValueError("sums of squared noise need a full-rank population (rank 0)")

    def part(w: Array, w2: Array | None, index: Int[Array, " block"]):
        eps = jax.vmap(draw, in_axes=(None, 0))(population, index)
        sums, squares = [], []
        for leaf, (start, shape) in zip(leaves, population.slices(), strict=True):
            noise_ = eps[:, start : start + math.prod(shape)]
            if shape == tuple(leaf.shape):
                sums.append(jnp.dot(w, noise_, precision=HIGHEST).reshape(leaf.shape))
                if w2 is not None:
                    squares.append(jnp.dot(w2, noise_**2, precision=HIGHEST).reshape(leaf.shape))
            else:
                rows = shape[0] - leaf.shape[-1]
                noise_ = noise_.reshape(block, *shape)
                a, b = noise_[:, :rows], noise_[:, rows:]
                total = jnp.einsum("j,jmr,jnr->mn", w, a, b, precision=HIGHEST)
                sums.append((total / math.sqrt(population.rank)).reshape(leaf.shape))
        unflatten = functools.partial(jax.tree.unflatten, treedef)
        return unflatten(sums), None if w2 is None else unflatten(squares)

    index = jnp.arange(n, dtype=jnp.int32)
    if block == n:
        return part(weights, square_weights, index)
    groups = (
        weights.reshape(-1, block),
        None if square_weights is None else square_weights.reshape(-1, block),
        index.reshape(-1, block),
    )
    zero = jax.tree.map(jnp.zeros_like, unshare(population.mean))
    start = (zero, None if square_weights is None else zero)

    def add(total, group):
        return jax.tree.map(jnp.add, total, part(*group)), None

    return jax.lax.scan(add, start, groups)[0]


def densify(population: Population) -> Population:
    """``population`` as plain arrays ``[pop, *shape]`` (its :class:`Seeded` leaves drawn,
    its :class:`LowRank` views formed): ``pop * D`` numbers, for tests and export."""

    def form(x):
        if not is_low_rank(x):
            return x
        return jax.vmap(LowRank.dense, in_axes=(pop_axes(x),))(x)

    return jax.tree.map(form, materialize(population), is_leaf=is_low_rank)
