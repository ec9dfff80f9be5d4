"""A regular grid over a box of descriptors (MAP-Elites' archive, Mouret & Clune 2015)."""

from __future__ import annotations

import math

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.qd.archive import CellArchive
from evolax.validation import check_positive_int


def box(low, high, n_desc: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(low, high)`` as tuples of floats, checked: one bound per descriptor dimension,
    finite, ``low < high``."""
    low = tuple(float(v) for v in np.ravel(low))
    high = tuple(float(v) for v in np.ravel(high))
    for name, bound in [("descriptor_low", low), ("descriptor_high", high)]:
        if len(bound) != n_desc:
            raise ValueError(
                f"{name} must have one value per descriptor dimension ({n_desc}), got {len(bound)}"
            )
        if not all(math.isfinite(v) for v in bound):
            raise ValueError(f"{name} must be finite, got {bound}")
    if not all(lo < hi for lo, hi in zip(low, high, strict=True)):
        raise ValueError(
            f"descriptor_low must be below descriptor_high in every dimension, got {low} and {high}"
        )
    return low, high


class GridArchive(CellArchive):
    """Cells of equal size on a grid over ``[descriptor_low, descriptor_high]``, numbered
    row-major; descriptors outside the box fall in its border cells.

    Args:
        grid_shape: cells along each descriptor dimension, e.g. ``(32, 32)``.
        descriptor_low, descriptor_high: the box's bounds, one per dimension.
        learning_rate, threshold_min, qd_offset: see :class:`~evolax.qd.Archive`.
    """

    grid_shape: tuple[int, ...] = eqx.field(static=True)
    descriptor_low: tuple[float, ...] = eqx.field(static=True)
    descriptor_high: tuple[float, ...] = eqx.field(static=True)
    learning_rate: float
    threshold_min: float
    qd_offset: float

    def __init__(
        self,
        grid_shape,
        descriptor_low,
        descriptor_high,
        learning_rate: float = 1.0,
        threshold_min: float = -float("inf"),
        qd_offset: float = 0.0,
    ):
        self.grid_shape = tuple(int(n) for n in np.ravel(grid_shape))
        if not self.grid_shape:
            raise ValueError("grid_shape must have at least one dimension, got ()")
        for n in self.grid_shape:
            check_positive_int("grid_shape entries", n)
        self.descriptor_low, self.descriptor_high = box(
            descriptor_low, descriptor_high, len(self.grid_shape)
        )
        self.learning_rate = learning_rate
        self.threshold_min = threshold_min
        self.qd_offset = qd_offset

    @property
    def n_cells(self) -> int:
        return math.prod(self.grid_shape)

    @property
    def n_desc(self) -> int:
        return len(self.grid_shape)

    def _index(self, descriptors: Float[Array, "pop desc"]) -> Int[Array, " pop"]:
        low = jnp.asarray(self.descriptor_low, descriptors.dtype)[None]
        high = jnp.asarray(self.descriptor_high, descriptors.dtype)[None]
        shape = jnp.asarray(self.grid_shape, jnp.int32)[None]
        # pyribs' rule: a 1e-6 nudge against rounding, then truncation toward zero
        position = (shape * (descriptors - low) + 1e-6) / (high - low)
        index = jnp.clip(jnp.trunc(position), 0, shape - 1).astype(jnp.int32)
        return jnp.ravel_multi_index(tuple(index.T), self.grid_shape, mode="clip")
