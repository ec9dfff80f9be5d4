"""Non-dominated sorting and crowding distance, for maximised objective vectors.

A point ``a`` dominates ``b`` when it is at least as good in every objective and better in one:
``all(a >= b) and any(a > b)``. A row with a non-finite entry counts as ``-inf`` in every
objective (evolax's fitness rule), so it lands in the last front.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from evolax.validation import check_positive_int

__all__ = ["crowding_distance", "dominates", "finite_rows", "non_dominated_rank"]


def dominates(a: Float[Array, "... m"], b: Float[Array, "... m"]) -> Bool[Array, "..."]:
    """Whether ``a`` dominates ``b`` (maximisation), broadcast over leading axes."""
    return jnp.all(a >= b, axis=-1) & jnp.any(a > b, axis=-1)


def finite_rows(objectives: Float[Array, "n m"]) -> Float[Array, "n m"]:
    """``objectives`` with every row that holds a non-finite entry set to ``-inf``."""
    finite = jnp.all(jnp.isfinite(objectives), axis=-1, keepdims=True)
    return jnp.where(finite, objectives, -jnp.inf)


def _check(objectives) -> None:
    if jnp.ndim(objectives) != 2 or jnp.shape(objectives)[1] < 1:
        raise ValueError(f"objectives must have shape (n, m), got {tuple(jnp.shape(objectives))}")


def non_dominated_rank(objectives: Float[Array, "n m"], block_size: int = 512) -> Int[Array, " n"]:
    """The Pareto front of each point: 0 for the non-dominated ones, ``k`` for those dominated
    only by points of fronts below ``k`` (Deb et al., 2002).

    The rank of a point is the length of the longest chain of points dominating it. Sorted
    lexicographically, best first, every point comes after all that dominate it, so one pass
    over blocks of ``block_size`` sorted points settles the ranks: a block takes the ranks of
    the blocks before it, then resolves the points inside it in order. The dominance matrix is
    never built whole: memory is ``O(block_size^2)`` and work ``O(n^2 m / 2)``, so a
    population of 100,000 sorts in a few seconds on a CPU.

    Args:
        objectives: ``[n, m]``, maximised.
        block_size: points compared at once, a positive integer.
    Returns:
        ``int32[n]``.
    """
    _check(objectives)
    check_positive_int("block_size", block_size)
    f = finite_rows(jnp.asarray(objectives))
    n, m = f.shape
    block = min(block_size, n)
    n_blocks = -(-n // block)
    # best first: -f[:, 0] is the primary key; a dominator is lexicographically larger
    order = jnp.lexsort(tuple(-f[:, k] for k in reversed(range(m))))
    padded = jnp.full((n_blocks * block, m), -jnp.inf, f.dtype).at[:n].set(f[order])
    blocks = padded.reshape(n_blocks, block, m)

    def dominated_by(rows, cols):  # [block, block]: cols[j] dominates rows[i]
        return dominates(cols[None, :, :], rows[:, None, :])

    def settle(b, ranks):  # ranks: [n_blocks, block], -1 where not yet known
        rows = blocks[b]

        def earlier(c, base):
            below = jnp.where(dominated_by(rows, blocks[c]), ranks[c][None, :] + 1, 0)
            return jnp.maximum(base, jnp.max(below, axis=1))

        base = jax.lax.fori_loop(0, b, earlier, jnp.zeros(block, jnp.int32))
        inside = dominated_by(rows, rows)  # only earlier points of the block can dominate

        def resolve(i, own):
            return own.at[i].set(jnp.maximum(own[i], jnp.max(jnp.where(inside[i], own + 1, 0))))

        return ranks.at[b].set(jax.lax.fori_loop(0, block, resolve, base))

    ranks = jax.lax.fori_loop(
        0, n_blocks, settle, jnp.full((n_blocks, block), -1, jnp.int32)
    ).reshape(-1)[:n]
    return jnp.zeros(n, jnp.int32).at[order].set(ranks)


def crowding_distance(
    objectives: Float[Array, "n m"], rank: Int[Array, " n"]
) -> Float[Array, " n"]:
    """Each point's crowding distance within its front (Deb et al., 2002): the sum over
    objectives of the gap between its two neighbours, divided by the front's range. The two
    ends of a front in any objective get ``inf``; a front whose range in an objective is 0 adds
    0 for it; rows with a non-finite entry get 0.

    Args:
        objectives: ``[n, m]``, maximised.
        rank: each point's front, ``int[n]`` (:func:`non_dominated_rank`).
    Returns:
        ``[n]``.
    """
    _check(objectives)
    f = finite_rows(jnp.asarray(objectives))
    n, m = f.shape
    if jnp.shape(rank) != (n,):
        raise ValueError(f"rank must have shape ({n},), got {tuple(jnp.shape(rank))}")
    finite = jnp.isfinite(f[:, 0])
    rank = jnp.where(finite, rank, n)  # non-finite rows: a front of their own
    distance = jnp.zeros(n, f.dtype)
    for k in range(m):
        order = jnp.lexsort((f[:, k], rank))
        value, front = f[order, k], rank[order]
        high = jax.ops.segment_max(jnp.where(finite, f[:, k], -jnp.inf), rank, n + 1)[front]
        low = jax.ops.segment_min(jnp.where(finite, f[:, k], jnp.inf), rank, n + 1)[front]
        span = high - low
        nxt = jnp.concatenate([value[1:], value[-1:]])
        prv = jnp.concatenate([value[:1], value[:-1]])
        inner = (jnp.concatenate([front[1:], front[-1:] + 1]) == front) & (
            jnp.concatenate([front[:1] - 1, front[:-1]]) == front
        )
        gap = jnp.where(span > 0, (nxt - prv) / jnp.where(span > 0, span, 1.0), 0.0)
        gap = jnp.where(inner, gap, jnp.where(span > 0, jnp.inf, 0.0))
        distance = distance.at[order].add(gap)
    return jnp.where(finite, distance, 0.0)
