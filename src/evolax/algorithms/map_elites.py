"""MAP-Elites with a grid archive and iso+line variation (Mouret & Clune 2015; Vassiliades &
Mouret 2018)."""

from __future__ import annotations

from typing import ClassVar

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Bool, Float, Int

from evolax.algorithms.base import (
    Algorithm,
    check_fitness,
    flatten_population,
    unflatten_population,
)
from evolax.algorithms.noise import gaussian
from evolax.algorithms.shaping import sanitize_fitness
from evolax.types import Fitness, Metrics, Params, Population, PRNGKey
from evolax.validation import check_non_negative, check_positive, check_positive_int


@chex.dataclass(frozen=True)
class MAPElitesState:
    """A grid archive: the elite of each cell.

    Attributes:
        genomes: each cell's elite, flattened, ``f32[cells, D]`` (``x0`` in empty cells).
        fitness: each cell's elite fitness, ``f32[cells]`` (``-inf`` when empty).
        descriptors: each cell's elite descriptor, ``f32[cells, n_desc]``.
        x0: the start genome (a pytree), the parent of the first generation.
    """

    genomes: Float[Array, "cells dim"]
    fitness: Float[Array, " cells"]
    descriptors: Float[Array, "cells desc"]
    x0: Params

    @property
    def occupied(self) -> Bool[Array, " cells"]:
        return self.fitness > -jnp.inf


class MAPElites(Algorithm):
    """MAP-Elites (Mouret & Clune, 2015) over a regular grid of behaviour descriptors.

    Each generation draws ``pop_size`` parent pairs uniformly from the occupied cells and
    makes children by iso+line variation (Vassiliades & Mouret, 2018, eq. 1):
    ``x_i + iso_sigma * N(0, I) + line_sigma * N(0, 1) * (x_j - x_i)``. ``tell`` places each
    child in the cell of its descriptor (clipped into ``[descriptor_low, descriptor_high]``)
    and keeps it if it beats the cell's elite; of several children in one cell, the fittest
    (the first on ties) competes. The first generation is ``x0 + init_std * N(0, I)``.

    Unlike the other algorithms, ``tell`` also needs each child's descriptor: the trainer
    passes those the task computes (``Task.descriptor``), because ``uses_descriptors`` is set.
    NaN fitness counts as ``-inf``: such a child never enters the archive.

    Args:
        pop_size: children per generation.
        grid_shape: cells along each descriptor dimension, e.g. ``(32, 32)``.
        descriptor_low, descriptor_high: the descriptor space's bounds, one per dimension.
        iso_sigma: isotropic mutation std.
        line_sigma: std of the step along the line to the second parent.
        init_std: std of the first generation around ``x0``.
        qd_offset: subtracted from elite fitness in the QD-score (choose it below every
            reachable fitness so the score only grows, as in Pugh et al., 2016).
    """

    uses_descriptors: ClassVar[bool] = True

    pop_size: int = eqx.field(static=True)
    grid_shape: tuple[int, ...] = eqx.field(static=True)
    descriptor_low: tuple[float, ...] = eqx.field(static=True)
    descriptor_high: tuple[float, ...] = eqx.field(static=True)
    iso_sigma: float = 0.01
    line_sigma: float = 0.2
    init_std: float = 0.1
    qd_offset: float = 0.0

    def __init__(
        self,
        pop_size: int,
        grid_shape,
        descriptor_low,
        descriptor_high,
        iso_sigma: float = 0.01,
        line_sigma: float = 0.2,
        init_std: float = 0.1,
        qd_offset: float = 0.0,
    ):
        self.pop_size = pop_size
        self.grid_shape = tuple(int(n) for n in grid_shape)
        self.descriptor_low = tuple(float(v) for v in np.ravel(descriptor_low))
        self.descriptor_high = tuple(float(v) for v in np.ravel(descriptor_high))
        self.iso_sigma = iso_sigma
        self.line_sigma = line_sigma
        self.init_std = init_std
        self.qd_offset = qd_offset

    def __check_init__(self):
        check_positive_int("pop_size", self.pop_size)
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
        check_non_negative("iso_sigma", self.iso_sigma)
        check_non_negative("line_sigma", self.line_sigma)
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
        low = jnp.asarray(self.descriptor_low, jnp.float32)
        high = jnp.asarray(self.descriptor_high, jnp.float32)
        shape = jnp.asarray(self.grid_shape, jnp.int32)
        position = (descriptors - low[None]) / (high - low)[None] * shape[None]
        position = jnp.nan_to_num(position, nan=0.0)
        index = jnp.clip(jnp.floor(position), 0, shape[None] - 1).astype(jnp.int32)
        return jnp.ravel_multi_index(tuple(index.T), self.grid_shape, mode="clip")

    def init(self, key: PRNGKey, x0: Params) -> MAPElitesState:
        del key
        flat, _ = ravel_pytree(x0)
        n, n_desc = self.n_cells, len(self.grid_shape)
        return MAPElitesState(
            genomes=jnp.zeros((n, flat.shape[0]), jnp.float32) + flat.astype(jnp.float32)[None],
            fitness=jnp.full(n, -jnp.inf, jnp.float32),
            descriptors=jnp.zeros((n, n_desc), jnp.float32),
            x0=jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), x0),
        )

    def ask(self, key: PRNGKey, state: MAPElitesState) -> tuple[Population, MAPElitesState]:
        pick_key, iso_key, line_key, init_key = jax.random.split(key, 4)
        occupied = state.occupied
        # uniform over occupied cells (Gumbel-max draws; any cell when the archive is empty)
        logits = jnp.where(occupied, 0.0, -jnp.inf)
        parents = jax.random.categorical(pick_key, logits, shape=(2, self.pop_size))
        x, y = state.genomes[parents[0]], state.genomes[parents[1]]
        dim = x.shape[1]
        children = (
            x
            + self.iso_sigma * gaussian(iso_key, (self.pop_size, dim))
            + self.line_sigma * jax.random.normal(line_key, (self.pop_size, 1)) * (y - x)
        )
        flat0, _ = ravel_pytree(state.x0)
        first = flat0[None] + self.init_std * jax.random.normal(init_key, (self.pop_size, dim))
        children = jnp.where(jnp.any(occupied), children, first)
        return unflatten_population(children, state.x0), state

    def tell(
        self,
        state: MAPElitesState,
        population: Population,
        fitness: Fitness,
        descriptors: Float[Array, "pop desc"] | None = None,
    ) -> tuple[MAPElitesState, Metrics]:
        if descriptors is None:
            raise ValueError(
                "MAPElites.tell needs descriptors (f32[pop, n_desc]); the task must define "
                "Task.descriptor"
            )
        fitness = sanitize_fitness(check_fitness(fitness, self.pop_size))
        descriptors = jnp.asarray(descriptors, jnp.float32)
        cells = self.cell_index(descriptors)
        flat = flatten_population(population)
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
        new_state = state.replace(  # type: ignore[attr-defined]
            genomes=jnp.where(improves[:, None], flat[source], state.genomes),
            fitness=jnp.where(improves, cell_best, state.fitness),
            descriptors=jnp.where(improves[:, None], descriptors[source], state.descriptors),
        )
        return new_state, archive_metrics(new_state, self.qd_offset) | {
            "archive_insertions": jnp.sum(improves).astype(jnp.float32)
        }

    def best(self, state: MAPElitesState) -> Params:
        _, unravel = ravel_pytree(state.x0)
        return unravel(state.genomes[jnp.argmax(state.fitness)])


def archive_metrics(state: MAPElitesState, qd_offset: float = 0.0) -> Metrics:
    """Coverage (fraction of cells filled), QD-score (sum over filled cells of
    ``fitness - qd_offset``) and the best elite's fitness."""
    occupied = state.occupied
    return {
        "coverage": jnp.mean(occupied.astype(jnp.float32)),
        "qd_score": jnp.sum(jnp.where(occupied, state.fitness - qd_offset, 0.0)),
        "archive_max": jnp.max(state.fitness),
    }
