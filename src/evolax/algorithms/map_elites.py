"""MAP-Elites with a grid archive and iso+line variation (Mouret & Clune 2015; Vassiliades &
Mouret 2018)."""

from __future__ import annotations

from typing import ClassVar

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from evolax.algorithms.base import PopulationAlgorithm, PopulationState, normal
from evolax.types import Metrics
from evolax.validation import check_non_negative, check_positive, check_positive_int


@chex.dataclass(frozen=True, kw_only=True)
class MAPElitesState(PopulationState):
    """A grid archive: the elite of each cell. ``population`` holds each cell's elite
    (``[cells, D]``, ``x0`` in empty cells) and ``fitness`` its fitness (``[cells]``, ``-inf``
    when empty); cells are numbered row-major (:meth:`MAPElites.cell_index`).

    Attributes:
        descriptors: each cell's elite descriptor, ``[cells, n_desc]`` (0 when empty).
    """

    descriptors: Float[Array, "cells desc"]

    @property
    def occupied(self) -> Bool[Array, " cells"]:
        """Which cells hold an elite, ``bool[cells]``."""
        return self.fitness > -jnp.inf


class MAPElites(PopulationAlgorithm[MAPElitesState]):
    """MAP-Elites (Mouret & Clune, 2015) over a regular grid of behaviour descriptors.

    Each generation draws ``pop_size`` parent pairs uniformly from the occupied cells and
    makes children by iso+line variation (Vassiliades & Mouret, 2018, eq. 1):
    ``x_i + mutation_std * N(0, I) + line_std * N(0, 1) * (x_j - x_i)``. ``tell`` places each
    child in the cell of its descriptor (clipped into ``[descriptor_low, descriptor_high]``)
    and keeps it if it beats the cell's elite; of several children in one cell, the fittest
    (the first on ties) competes. While the archive is empty, ``ask`` returns
    ``x0 + init_std * N(0, I)``.

    Besides the fitness, ``tell`` needs each child's descriptor, ``[pop, n_desc]``
    (:attr:`extra_inputs`; the trainer passes those the task computes, ``Task.descriptor``).
    A non-finite fitness counts as ``-inf``: such a child never enters the archive. Since an
    elite is only replaced by a fitter child, :meth:`best` (the best genome ever told) is the
    best elite.

    Args:
        pop_size: children per generation.
        grid_shape: cells along each descriptor dimension, e.g. ``(32, 32)``.
        descriptor_low, descriptor_high: the descriptor space's bounds, one per dimension.
        mutation_std: isotropic mutation std (the paper's ``sigma_iso``), ``>= 0``.
        line_std: std of the step along the line to the second parent (``sigma_line``),
            ``>= 0``.
        init_std: spread of the first generation around ``x0``, positive.
        qd_offset: subtracted from elite fitness in the QD-score (choose it below every
            reachable fitness so the score only grows, as in Pugh et al., 2016).
    """

    extra_inputs: ClassVar[tuple[str, ...]] = ("descriptors",)

    pop_size: int = eqx.field(static=True)
    grid_shape: tuple[int, ...] = eqx.field(static=True)
    descriptor_low: tuple[float, ...] = eqx.field(static=True)
    descriptor_high: tuple[float, ...] = eqx.field(static=True)
    mutation_std: float = 0.01
    line_std: float = 0.2
    init_std: float = 0.1
    qd_offset: float = 0.0

    def __init__(
        self,
        pop_size: int,
        grid_shape,
        descriptor_low,
        descriptor_high,
        mutation_std: float = 0.01,
        line_std: float = 0.2,
        init_std: float = 0.1,
        qd_offset: float = 0.0,
    ):
        self.pop_size = pop_size
        self.grid_shape = tuple(int(n) for n in grid_shape)
        self.descriptor_low = tuple(float(v) for v in np.ravel(descriptor_low))
        self.descriptor_high = tuple(float(v) for v in np.ravel(descriptor_high))
        self.mutation_std = mutation_std
        self.line_std = line_std
        self.init_std = init_std
        self.qd_offset = qd_offset

    def __check_init__(self):
        if not self.grid_shape:
            raise ValueError("grid_shape must have at least one dimension, got ()")
        for n in self.grid_shape:
            check_positive_int("grid_shape entries", n)
        n_desc = len(self.grid_shape)
        for name, bound in [
            ("descriptor_low", self.descriptor_low),
            ("descriptor_high", self.descriptor_high),
        ]:
            if len(bound) != n_desc:
                raise ValueError(
                    f"{name} must have one value per grid dimension ({n_desc}), got {len(bound)}"
                )
        if not all(
            lo < hi for lo, hi in zip(self.descriptor_low, self.descriptor_high, strict=True)
        ):
            raise ValueError(
                f"descriptor_low must be below descriptor_high in every dimension, got "
                f"{self.descriptor_low} and {self.descriptor_high}"
            )
        check_non_negative("mutation_std", self.mutation_std)
        check_non_negative("line_std", self.line_std)
        check_positive("init_std", self.init_std)

    @property
    def n_cells(self) -> int:
        return int(np.prod(self.grid_shape))

    def cell_index(self, descriptors: Float[Array, "pop desc"]) -> Int[Array, " pop"]:
        """The flat grid cell (row-major) of each descriptor, clipped into the grid's bounds."""
        n_desc = len(self.grid_shape)
        if descriptors.ndim != 2 or descriptors.shape[1] != n_desc:
            raise ValueError(
                f"descriptors must have shape (pop, {n_desc}), got {tuple(descriptors.shape)}"
            )
        low = jnp.asarray(self.descriptor_low, descriptors.dtype)
        high = jnp.asarray(self.descriptor_high, descriptors.dtype)
        shape = jnp.asarray(self.grid_shape, jnp.int32)
        position = (descriptors - low[None]) / (high - low)[None] * shape[None]
        position = jnp.nan_to_num(position, nan=0.0)
        index = jnp.clip(jnp.floor(position), 0, shape[None] - 1).astype(jnp.int32)
        return jnp.ravel_multi_index(tuple(index.T), self.grid_shape, mode="clip")

    def _init(self, key, x0):
        del key
        n, n_desc = self.n_cells, len(self.grid_shape)
        return MAPElitesState(
            population=jnp.broadcast_to(x0[None], (n, x0.shape[0])),
            fitness=jnp.full(n, -jnp.inf, x0.dtype),
            descriptors=jnp.zeros((n, n_desc), x0.dtype),
        )

    def _ask(self, key, state):
        pick_key, iso_key, line_key = jax.random.split(key, 3)
        occupied = state.occupied
        # uniform over occupied cells (Gumbel-max draws; any cell when the archive is empty)
        logits = jnp.where(occupied, 0.0, -jnp.inf)
        parents = jax.random.categorical(pick_key, logits, shape=(2, self.pop_size))
        x, y = state.population[parents[0]], state.population[parents[1]]
        iso = normal(iso_key, x.shape, x)
        line = normal(line_key, (self.pop_size, 1), x)
        children = x + self.mutation_std * iso + self.line_std * line * (y - x)
        first = state.population[0][None] + self.init_std * iso  # every cell holds x0 then
        return jnp.where(jnp.any(occupied), children, first), state

    def _tell(self, key, state, x, fitness, descriptors):
        del key
        n_desc = len(self.grid_shape)
        if jnp.shape(descriptors) != (self.pop_size, n_desc):
            raise ValueError(
                f"descriptors must have shape (pop, {n_desc}) = ({self.pop_size}, {n_desc}), "
                f"got {tuple(jnp.shape(descriptors))}"
            )
        descriptors = jnp.asarray(descriptors, state.descriptors.dtype)
        cells = self.cell_index(descriptors)
        n = self.n_cells
        # the fittest child per cell (first on ties) challenges that cell's elite
        cell_best = jax.ops.segment_max(fitness, cells, num_segments=n)
        is_winner = fitness >= cell_best[cells]
        index = jnp.arange(self.pop_size)
        winner = jax.ops.segment_min(
            jnp.where(is_winner, index, self.pop_size), cells, num_segments=n
        )
        improves = (cell_best > state.fitness) & (winner < self.pop_size)
        source = jnp.clip(winner, 0, self.pop_size - 1)
        new_state = state.replace(
            population=jnp.where(improves[:, None], x[source], state.population),
            fitness=jnp.where(improves, cell_best, state.fitness),
            descriptors=jnp.where(improves[:, None], descriptors[source], state.descriptors),
        )
        return new_state, archive_metrics(new_state, self.qd_offset) | {
            "archive_insertions": jnp.sum(improves).astype(jnp.float32)
        }


def archive_metrics(state: MAPElitesState, qd_offset: float = 0.0) -> Metrics:
    """Coverage (fraction of cells filled), QD-score (sum over filled cells of
    ``fitness - qd_offset``) and the best elite's fitness."""
    occupied = state.occupied
    return {
        "coverage": jnp.mean(occupied.astype(jnp.float32)),
        "qd_score": jnp.sum(jnp.where(occupied, state.fitness - qd_offset, 0.0)),
        "archive_max": jnp.max(state.fitness),
    }
