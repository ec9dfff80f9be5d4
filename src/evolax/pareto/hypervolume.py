"""Hypervolume: the volume a set of maximised objective vectors dominates above a reference
point (Zitzler & Thiele, 1998). Exact for 2 and 3 objectives, a Monte Carlo estimate above."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from evolax.pareto.sorting import finite_rows
from evolax.types import PRNGKey
from evolax.validation import check_positive_int

__all__ = ["hypervolume"]


def hypervolume(
    points: Float[Array, "n m"],
    reference: Float[Array, " m"],
    key: PRNGKey | None = None,
    *,
    n_samples: int = 100_000,
    batch_size: int = 256,
) -> Float[Array, ""]:
    """The volume of the union of the boxes ``[reference, p]`` over the points ``p`` (each
    objective maximised). Points not above ``reference`` in every objective add nothing, nor
    do rows with a non-finite entry.

    For ``m <= 3`` the value is exact: in 2-D a sweep over the points sorted by the first
    objective, in 3-D a sum of 2-D slices between consecutive values of the third (``O(n^2)``
    work, ``batch_size`` slices at once). For ``m > 3`` it is a Monte Carlo estimate from
    ``n_samples`` uniform points in the box the points span, which needs ``key``.

    Args:
        points: ``[n, m]``.
        reference: ``[m]``, below the points that count.
        key: PRNG key, for ``m > 3`` only.
        n_samples: Monte Carlo samples (``m > 3``).
        batch_size: 3-D slices, or Monte Carlo samples / 64, handled at once.
    Returns:
        ``[]``.
    """
    if jnp.ndim(points) != 2:
        raise ValueError(f"points must have shape (n, m), got {tuple(jnp.shape(points))}")
    n, m = jnp.shape(points)
    if jnp.shape(reference) != (m,):
        raise ValueError(f"reference must have shape ({m},), got {tuple(jnp.shape(reference))}")
    check_positive_int("n_samples", n_samples)
    check_positive_int("batch_size", batch_size)
    reference = jnp.asarray(reference, jnp.result_type(points, jnp.float32))
    # a point's box is empty in any objective where it is not above the reference
    p = jnp.maximum(finite_rows(jnp.asarray(points, reference.dtype)), reference[None])
    if m == 1:
        return jnp.max(p[:, 0]) - reference[0]
    if m == 2:
        return _area(p, reference, jnp.ones(n, bool))
    if m == 3:
        return _volume_3d(p, reference, batch_size)
    if key is None:
        raise ValueError(f"hypervolume of {m} > 3 objectives is a Monte Carlo estimate: pass key")
    return _monte_carlo(key, p, reference, n_samples, batch_size * 64)


def _area(p: Float[Array, "n 2"], reference: Float[Array, " 2"], mask: Bool[Array, " n"]):
    """The 2-D hypervolume of the points where ``mask`` holds."""
    y = jnp.where(mask, p[:, 1], reference[1])
    order = jnp.argsort(-p[:, 0])
    x, y = p[order, 0], y[order]
    # each point adds the strip above the highest point to its right (larger first objective)
    below = jnp.concatenate([reference[1:2], jax.lax.cummax(y)[:-1]])
    return jnp.sum((x - reference[0]) * jnp.maximum(y - below, 0.0))


def _volume_3d(p: Float[Array, "n 3"], reference: Float[Array, " 3"], batch_size: int):
    order = jnp.argsort(-p[:, 2])
    p = p[order]
    z = p[:, 2]
    depth = z - jnp.concatenate([z[1:], reference[2:3]])  # slab below each point's z
    index = jnp.arange(p.shape[0])

    def slab(i):  # the points at or above the slab's top are those up to i
        return _area(p[:, :2], reference[:2], index <= i)

    areas = jax.lax.map(slab, index, batch_size=batch_size)
    return jnp.sum(areas * depth)


def _monte_carlo(key, p, reference, n_samples: int, batch: int):
    top = jnp.max(p, axis=0)
    box = jnp.prod(top - reference)
    n_batches = -(-n_samples // batch)

    def covered(key):
        u = jax.random.uniform(key, (batch, p.shape[1]), p.dtype, reference[None], top[None])
        return jnp.sum(jnp.any(jnp.all(p[None, :, :] >= u[:, None, :], axis=-1), axis=1))

    hits = jax.lax.map(covered, jax.random.split(key, n_batches))
    return box * jnp.sum(hits) / (n_batches * batch)
