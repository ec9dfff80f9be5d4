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


class FrozenArray:
    """A read-only numpy array that hashes and compares by value (its hash computed once), so
    that a module holding it as a static field stays cheap to hash under ``jit``."""

    def __init__(self, array):
        self.array = np.array(array)
        self.array.flags.writeable = False
        self._hash = hash((self.array.shape, self.array.dtype.str, self.array.tobytes()))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return isinstance(other, FrozenArray) and (
            self is other or (self._hash == other._hash and np.array_equal(self.array, other.array))
        )

    def __repr__(self) -> str:
        return f"FrozenArray(shape={self.array.shape})"


def candidate_table(
    centroids: np.ndarray, low: np.ndarray, high: np.ndarray, bins: int
) -> np.ndarray:
    """For each of ``bins^n_desc`` equal boxes of ``[low, high]``, the centroids that can be
    nearest to a point in it, ``i32[n_boxes, M]`` (padded by repeating the first): those no
    farther from the box than the box's farthest point is from its best centroid."""
    n_desc = centroids.shape[1]
    edges = [np.linspace(lo, hi, bins + 1) for lo, hi in zip(low, high, strict=True)]
    corners = np.stack(np.meshgrid(*[np.arange(bins)] * n_desc, indexing="ij"), -1).reshape(
        -1, n_desc
    )
    box_low = np.stack([edges[d][corners[:, d]] for d in range(n_desc)], 1)
    box_high = np.stack([edges[d][corners[:, d] + 1] for d in range(n_desc)], 1)
    rows: list[np.ndarray] = []
    for start in range(0, len(corners), 256):
        lo, hi = box_low[start : start + 256, None], box_high[start : start + 256, None]
        c = centroids[None]
        far = np.sqrt(np.sum(np.maximum(np.abs(c - lo), np.abs(c - hi)) ** 2, -1))
        near = np.sqrt(np.sum(np.maximum(np.maximum(lo - c, c - hi), 0.0) ** 2, -1))
        reach = far.min(axis=1, keepdims=True) * (1 + 1e-6) + 1e-12
        rows.extend(np.flatnonzero(row) for row in near <= reach)
    width = max(len(r) for r in rows)
    return np.stack([np.pad(r, (0, width - len(r)), mode="edge") for r in rows]).astype(np.int32)


class CVTArchive(CellArchive):
    """One cell per centroid; a descriptor belongs to its nearest centroid's cell.

    The nearest centroid is found exactly through a table built once: the descriptor box is
    cut into about ``n_cells`` equal boxes, each listing the few centroids that can be nearest
    to a point in it, so a batch costs ``O(pop M)`` for ``M`` candidates rather than
    ``O(pop n_cells)``; a batch with a descriptor outside the box is searched in full. Centroids
    and table are static (:class:`FrozenArray`) and enter the compiled program as constants.

    Args:
        centroids: ``[n_cells, n_desc]``, e.g. from :func:`cvt_centroids`.
        descriptor_low, descriptor_high: the descriptor box, one bound per dimension.
        learning_rate, threshold_min, qd_offset: see :class:`~evolax.qd.Archive`.
    """

    centroids: FrozenArray = eqx.field(static=True)
    descriptor_low: tuple[float, ...] = eqx.field(static=True)
    descriptor_high: tuple[float, ...] = eqx.field(static=True)
    candidates: FrozenArray = eqx.field(static=True)
    learning_rate: float
    threshold_min: float
    qd_offset: float

    def __init__(
        self,
        centroids,
        descriptor_low,
        descriptor_high,
        learning_rate: float = 1.0,
        threshold_min: float = -float("inf"),
        qd_offset: float = 0.0,
    ):
        array = np.asarray(centroids, np.float64)
        if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
            raise ValueError(f"centroids must have shape (n_cells, n_desc), got {array.shape}")
        if not np.all(np.isfinite(array)):
            raise ValueError("centroids must be finite")
        low, high = box(descriptor_low, descriptor_high, array.shape[1])
        bins = max(1, round(array.shape[0] ** (1 / array.shape[1])))
        table = candidate_table(array, np.asarray(low), np.asarray(high), bins)
        self.centroids = FrozenArray(array.astype(np.float32))
        self.descriptor_low, self.descriptor_high = low, high
        self.candidates = FrozenArray(table)
        self.learning_rate = learning_rate
        self.threshold_min = threshold_min
        self.qd_offset = qd_offset

    @property
    def n_cells(self) -> int:
        return self.centroids.array.shape[0]

    @property
    def n_desc(self) -> int:
        return self.centroids.array.shape[1]

    def _index(self, descriptors: Float[Array, "pop desc"]) -> Int[Array, " pop"]:
        centroids = jnp.asarray(self.centroids.array, descriptors.dtype)
        low = jnp.asarray(self.descriptor_low, descriptors.dtype)[None]
        high = jnp.asarray(self.descriptor_high, descriptors.dtype)[None]
        table = jnp.asarray(self.candidates.array)
        bins = round(len(table) ** (1 / self.n_desc))

        def through_table(d):
            position = jnp.clip(jnp.floor((d - low) / (high - low) * bins), 0, bins - 1)
            box_index = jnp.ravel_multi_index(
                tuple(position.astype(jnp.int32).T), (bins,) * self.n_desc, mode="clip"
            )
            candidates = table[box_index]  # [pop, M]
            distance = jnp.sum((d[:, None] - centroids[candidates]) ** 2, axis=-1)
            return jnp.take_along_axis(candidates, jnp.argmin(distance, axis=1)[:, None], 1)[:, 0]

        inside = jnp.all((descriptors >= low) & (descriptors <= high))
        return jax.lax.cond(inside, through_table, lambda d: nearest(d, centroids), descriptors)
