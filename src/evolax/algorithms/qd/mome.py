"""MOME: Multi-Objective MAP-Elites (Pierrot, Richard, Beguir & Cully 2022, "Multi-Objective
Quality Diversity Optimization"): a grid whose every cell keeps a Pareto front."""

from __future__ import annotations

from typing import ClassVar

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import Algorithm, Output, State
from evolax.algorithms.qd.common import iso_line
from evolax.pareto import dominates, hypervolume
from evolax.qd import GridArchive
from evolax.types import Metrics, PRNGKey
from evolax.validation import (
    check_int_at_least,
    check_non_negative,
    check_positive,
    check_positive_int,
)


@chex.dataclass(frozen=True, kw_only=True)
class MOMEState(State):
    """Each cell's Pareto front, in slots (``-inf`` fitness in empty slots; the members of a
    front fill its first slots, oldest first).

    Attributes:
        start: the first genome ``x0``, ``[D]``.
        genomes: ``[cells, max_front_size, D]`` (zeros in empty slots).
        fitness: ``[cells, max_front_size, m]``, every objective maximised.
        descriptors: ``[cells, max_front_size, n_desc]``.
    """

    start: Float[Array, " dim"]
    genomes: Float[Array, "cells front dim"]
    fitness: Float[Array, "cells front m"]
    descriptors: Float[Array, "cells front desc"]

    @property
    def filled(self) -> jax.Array:
        """Which slots hold a solution, ``bool[cells, max_front_size]``."""
        return jnp.all(self.fitness > -jnp.inf, axis=-1)


def insert_into_fronts(
    state: MOMEState,
    x: Float[Array, "pop dim"],
    fitness: Float[Array, "pop m"],
    descriptors: Float[Array, "pop desc"],
    cell: Int[Array, " pop"],
) -> tuple[MOMEState, jax.Array]:
    """Offer the candidates to their cells' fronts one after another (QDax's
    ``MOMERepertoire.add``): a cell's new front is the non-dominated points among its front
    and the candidate (equal points all stay), in slot order with the candidate last, cut
    to the ``max_front_size`` slots, so a full front drops a new non-dominated candidate
    unless it dominates a member. A candidate with a ``-inf`` objective is not offered.

    Returns:
        The new state and whether each candidate entered its front, ``bool[pop]``.
    """
    size = state.fitness.shape[1]

    def offer(carry, candidate):
        genomes, front_fitness, places = carry
        genome, f, d, c = candidate
        merged_f = jnp.concatenate([front_fitness[c], f[None]])
        valid = jnp.all(merged_f > -jnp.inf, axis=-1)
        beaten = jnp.any(valid[:, None] & dominates(merged_f[:, None], merged_f[None]), axis=0)
        keep = valid & ~beaten
        slot = jnp.where(keep, jnp.cumsum(keep) - 1, size)  # size: dropped
        slot = jnp.where(slot < size, slot, size)

        def place(rows, new_row, fill):
            merged = jnp.concatenate([rows[c], new_row[None].astype(rows.dtype)])
            empty = jnp.full_like(rows[c], fill)
            return rows.at[c].set(empty.at[slot].set(merged, mode="drop"))

        genomes = place(genomes, genome, 0.0)
        front_fitness = place(front_fitness, f, -jnp.inf)
        places = place(places, d, 0.0)
        return (genomes, front_fitness, places), slot[-1] < size

    fronts = (state.genomes, state.fitness, state.descriptors)
    items = (x.astype(state.genomes.dtype), fitness.astype(state.fitness.dtype), descriptors, cell)
    (genomes, front_fitness, places), entered = jax.lax.scan(offer, fronts, items)
    new = state.replace(genomes=genomes, fitness=front_fitness, descriptors=places)  # type: ignore[attr-defined]
    return new, entered


def moqd_metrics(
    state: MOMEState, reference_point: Float[Array, " m"], key: PRNGKey | None = None
) -> Metrics:
    """``moqd_score`` (the sum over cells of their fronts' hypervolumes above
    ``reference_point``; Pierrot et al.'s MOQD-score), ``max_hypervolume`` (the best cell's),
    ``global_hypervolume`` (of every stored solution together), ``coverage`` (the fraction of
    cells holding a solution) and ``n_solutions``. ``key`` is needed for more than 3
    objectives (Monte Carlo hypervolumes)."""
    cells, size, m = state.fitness.shape
    reference = jnp.asarray(reference_point, state.fitness.dtype)
    everything = state.fitness.reshape(cells * size, m)
    if m > 3:
        if key is None:
            raise ValueError(f"hypervolumes of {m} > 3 objectives are Monte Carlo: pass key")
        keys = jax.random.split(key, cells + 1)
        volume = jax.vmap(lambda f, k: hypervolume(f, reference, k))(state.fitness, keys[:cells])
        total = hypervolume(everything, reference, keys[-1])
    else:
        volume = jax.vmap(lambda f: hypervolume(f, reference))(state.fitness)
        total = hypervolume(everything, reference)
    occupied = jnp.any(state.filled, axis=1)
    return {
        "moqd_score": jnp.sum(jnp.where(occupied, volume, 0.0)),
        "max_hypervolume": jnp.max(jnp.where(occupied, volume, 0.0)),
        "global_hypervolume": total,
        "coverage": jnp.mean(occupied.astype(jnp.float32)),
        "n_solutions": jnp.sum(state.filled).astype(jnp.float32),
    }


class MOME(Algorithm[MOMEState]):
    """MOME (Pierrot et al., 2022): MAP-Elites over a grid of behaviour descriptors whose
    every cell keeps a Pareto front of up to ``max_front_size`` solutions of
    ``n_objectives`` maximised objectives; it illuminates the descriptor space with local
    trade-offs, scored by the MOQD-score, the sum of the cells' hypervolumes.

    Each generation draws ``pop_size`` parent pairs, each parent from an occupied cell drawn
    uniformly and then a member of its front drawn uniformly (QDax's
    ``MOMEUniformSelector``), and makes children by iso+line variation, as
    :class:`~evolax.algorithms.ArchiveMAPElites` does. ``tell`` offers the children to the
    fronts of their cells one after another (:func:`insert_into_fronts`, QDax's rule: a full
    front keeps its members unless the newcomer dominates one). While the grid is empty,
    ``ask`` returns ``x0 + init_std N(0, I)``. Fitness is ``[pop, n_objectives]``; besides it
    ``tell`` needs each child's descriptor (:attr:`extra_inputs`). :meth:`best` is the
    solution with the largest sum of objectives ever told.

    Args:
        pop_size: children per generation.
        n_objectives: ``m``, at least 2.
        grid_shape, descriptor_low, descriptor_high: the grid
            (:class:`~evolax.qd.GridArchive`).
        reference_point: ``m`` values below the fronts, for the hypervolumes.
        max_front_size: solutions kept per cell (QDax's ``pareto_front_max_length``).
        mutation_std, line_std, init_std: see :class:`~evolax.algorithms.ArchiveMAPElites`.
    """

    extra_inputs: ClassVar[tuple[str, ...]] = ("descriptors",)
    summary_metrics: ClassVar[tuple[str, ...]] = ("coverage", "moqd_score")

    pop_size: int = eqx.field(static=True)
    n_objectives: int = eqx.field(static=True)
    grid: GridArchive
    reference_point: tuple[float, ...] = eqx.field(static=True)
    max_front_size: int = eqx.field(static=True)
    mutation_std: float
    line_std: float
    init_std: float

    def __init__(
        self,
        pop_size: int,
        n_objectives: int,
        grid_shape,
        descriptor_low,
        descriptor_high,
        reference_point,
        max_front_size: int = 10,
        mutation_std: float = 0.01,
        line_std: float = 0.2,
        init_std: float = 0.1,
    ):
        self.pop_size = pop_size
        self.n_objectives = n_objectives
        self.grid = GridArchive(grid_shape, descriptor_low, descriptor_high)
        self.reference_point = tuple(float(v) for v in np.ravel(reference_point))
        self.max_front_size = max_front_size
        self.mutation_std = mutation_std
        self.line_std = line_std
        self.init_std = init_std

    def __check_init__(self):
        check_int_at_least("n_objectives", self.n_objectives, 2)
        if len(self.reference_point) != self.n_objectives or not all(
            np.isfinite(self.reference_point)
        ):
            raise ValueError(
                f"reference_point must be {self.n_objectives} finite values (one per "
                f"objective), got {self.reference_point}"
            )
        check_positive_int("max_front_size", self.max_front_size)
        check_non_negative("mutation_std", self.mutation_std)
        check_non_negative("line_std", self.line_std)
        check_positive("init_std", self.init_std)

    @property
    def objectives_shape(self) -> tuple[int, ...]:
        return (self.n_objectives,)

    def cell_index(self, descriptors: Float[Array, "pop desc"]) -> Int[Array, " pop"]:
        """The grid cell of each descriptor."""
        return self.grid.index(descriptors)

    def _init(self, key, x0):
        del key
        cells, size = self.grid.n_cells, self.max_front_size
        return MOMEState(
            start=x0,
            genomes=jnp.zeros((cells, size, x0.shape[0]), x0.dtype),
            fitness=jnp.full((cells, size, self.n_objectives), -jnp.inf, x0.dtype),
            descriptors=jnp.zeros((cells, size, self.grid.n_desc), x0.dtype),
        )

    def _parents(self, key: PRNGKey, state: MOMEState, n: int) -> Int[Array, "n 2"]:
        """``n`` (cell, slot) pairs: a uniform occupied cell, then a uniform member."""
        cell_key, slot_key = jax.random.split(key)
        filled = state.filled
        occupied = jnp.any(filled, axis=1)
        cells = jax.random.categorical(cell_key, jnp.where(occupied, 0.0, -jnp.inf), shape=(n,))
        slots = jax.random.categorical(slot_key, jnp.where(filled[cells], 0.0, -jnp.inf))
        return jnp.stack([cells, slots], axis=1)

    def _ask(self, key, state):
        pick_key, iso_key, line_key = jax.random.split(key, 3)
        picked = self._parents(pick_key, state, 2 * self.pop_size)
        parents = state.genomes[picked[:, 0], picked[:, 1]]
        x, y = parents[: self.pop_size], parents[self.pop_size :]
        children, iso = iso_line(iso_key, line_key, x, y, self.mutation_std, self.line_std)
        first = state.start[None] + self.init_std * iso
        return jnp.where(jnp.any(state.filled), children, first), state

    def _tell(self, key, state, x, fitness, descriptors):
        descriptors = self.grid.check_descriptors(descriptors, self.pop_size)
        descriptors = descriptors.astype(state.descriptors.dtype)
        cell = self.grid.index(descriptors)
        new, entered = insert_into_fronts(state, x, fitness, descriptors, cell)
        metrics = moqd_metrics(new, jnp.asarray(self.reference_point), key)
        return new, metrics | {"archive_insertions": jnp.sum(entered).astype(jnp.float32)}

    def outputs(self, state):
        """Each occupied cell's hypervolume at its first member's descriptor (``archive.json``,
        drawn as a heatmap) and every stored solution's objectives, marking the globally
        non-dominated ones (``pareto_front.json``)."""
        fitness = np.asarray(state.fitness, np.float64)
        cells, _, m = fitness.shape
        reference = jnp.asarray(self.reference_point)
        volume = np.zeros(cells)
        if m <= 3:  # exact (above, a Monte Carlo estimate would need a key)
            volume = np.asarray(jax.vmap(lambda f: hypervolume(f, reference))(state.fitness))
        filled = np.all(fitness > -np.inf, axis=-1)
        occupied = filled.any(axis=1)
        places = np.asarray(state.descriptors, np.float64)[occupied, 0]
        archive = Output(
            per_seed={
                "elites": {"fitness": volume[occupied].tolist(), "descriptors": places.tolist()}
            },
            shared={
                "n_cells": cells,
                "grid_shape": list(self.grid.grid_shape),
                "descriptor_low": list(self.grid.descriptor_low),
                "descriptor_high": list(self.grid.descriptor_high),
            },
        )
        solutions = fitness[filled]
        beaten = np.array(
            [np.any(np.all(solutions >= s, 1) & np.any(solutions > s, 1)) for s in solutions],
            bool,
        ).reshape(-1)
        front = {"objectives": solutions.tolist(), "pareto_front": (~beaten).tolist()}
        return {"archive": archive, "pareto_front": Output(per_seed=front)}
