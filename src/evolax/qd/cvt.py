"""Centroidal Voronoi cells: the nearest of ``n_cells`` centroids spread evenly over the
descriptor box by k-means (CVT-MAP-Elites, Vassiliades et al. 2018)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.qd.archive import CellArchive
from evolax.qd.grid import box
from evolax.types import PRNGKey
from evolax.validation import check_positive_int

HIGHEST = jax.lax.Precision.HIGHEST


def nearest(
    points: Float[Array, "n desc"], centroids: Float[Array, "cells desc"]
) -> Int[Array, " n"]:
    """The index of each point's nearest centroid (Euclidean), ``i32[n]``."""
    cross = jnp.dot(points, centroids.T, precision=HIGHEST)
    distance = jnp.sum(centroids**2, axis=1)[None] - 2.0 * cross  # + |p|^2: same argmin
    return jnp.argmin(distance, axis=1).astype(jnp.int32)


def cvt_centroids(
    key: PRNGKey,
    n_cells: int,
    descriptor_low,
    descriptor_high,
    n_samples: int | None = None,
    iterations: int = 20,
) -> Float[Array, "cells desc"]:
    """``n_cells`` centroids of a centroidal Voronoi tessellation of the box: Lloyd's k-means
    on ``n_samples`` uniform points (default ``20 n_cells``), started from ``n_cells`` of
    them, for ``iterations`` rounds; a centroid that loses all its points stays put.

    The points are assigned in blocks of 4,096, so memory stays ``O(4096 n_cells)``."""
    check_positive_int("n_cells", n_cells)
    low, high = box(descriptor_low, descriptor_high, int(np.size(descriptor_low)))
    n_samples = 20 * n_cells if n_samples is None else n_samples
    check_positive_int("n_samples", n_samples)
    if n_samples < n_cells:
        raise ValueError(f"n_samples must be at least n_cells ({n_cells}), got {n_samples}")
    low_, high_ = jnp.asarray(low), jnp.asarray(high)
    samples = jax.random.uniform(key, (n_samples, len(low)), minval=low_, maxval=high_)
    block = 4096
    padded = -(-n_samples // block) * block
    blocks = jnp.pad(samples, ((0, padded - n_samples), (0, 0))).reshape(-1, block, len(low))
    real = (jnp.arange(padded) < n_samples).astype(samples.dtype)

    def lloyd(centroids, _):
        owner = jax.lax.map(lambda b: nearest(b, centroids), blocks).reshape(-1)
        count = jax.ops.segment_sum(real, owner, num_segments=n_cells)
        total = jax.ops.segment_sum(
            blocks.reshape(padded, -1) * real[:, None], owner, num_segments=n_cells
        )
        moved = total / jnp.maximum(count, 1.0)[:, None]
        return jnp.where(count[:, None] > 0, moved, centroids), None

    centroids, _ = jax.jit(lambda c: jax.lax.scan(lloyd, c, None, length=iterations))(
        samples[:n_cells]
    )
    return centroids


class CVTArchive(CellArchive):
    """One cell per centroid; a descriptor belongs to its nearest centroid's cell.

    The centroids are kept as static nested tuples (so the archive, like every configuration,
    hashes and compares by value) and enter the compiled program as a constant.

    Args:
        centroids: ``[n_cells, n_desc]``, e.g. from :func:`cvt_centroids`.
        learning_rate, threshold_min, qd_offset: see :class:`~evolax.qd.Archive`.
    """

    centroids: tuple[tuple[float, ...], ...] = eqx.field(static=True)
    learning_rate: float
    threshold_min: float
    qd_offset: float

    def __init__(
        self,
        centroids,
        learning_rate: float = 1.0,
        threshold_min: float = -float("inf"),
        qd_offset: float = 0.0,
    ):
        array = np.asarray(centroids, np.float64)
        if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
            raise ValueError(f"centroids must have shape (n_cells, n_desc), got {array.shape}")
        if not np.all(np.isfinite(array)):
            raise ValueError("centroids must be finite")
        self.centroids = tuple(tuple(float(v) for v in row) for row in array)
        self.learning_rate = learning_rate
        self.threshold_min = threshold_min
        self.qd_offset = qd_offset

    @property
    def n_cells(self) -> int:
        return len(self.centroids)

    @property
    def n_desc(self) -> int:
        return len(self.centroids[0])

    def _index(self, descriptors: Float[Array, "pop desc"]) -> Int[Array, " pop"]:
        return nearest(descriptors, jnp.asarray(self.centroids, descriptors.dtype))
