"""The archive every quality-diversity algorithm keeps: one elite per cell of the descriptor
space, as a pytree.

An :class:`Archive` is configuration (an equinox module: its cells, bounds and acceptance
rule); its contents are an :class:`ArchiveState` of fixed-size arrays, so that ``add`` and
``sample`` jit, vmap over seeds and run inside ``lax.scan``. Subclasses say only how a
descriptor maps to a cell (:meth:`Archive.index`): a regular grid
(:class:`~evolax.qd.GridArchive`) or the nearest of a set of centroids
(:class:`~evolax.qd.CVTArchive`).

**Acceptance.** A candidate enters its cell when its fitness exceeds the cell's threshold
(``threshold_min`` while the cell is empty). With the defaults (``learning_rate = 1``,
``threshold_min = -inf``) the threshold is the elite's fitness: MAP-Elites' archive. Otherwise
it is CMA-MAE's annealed threshold (Fontaine & Nikolaidis, 2023): ``k`` accepted candidates
with mean fitness ``f`` move it to ``(1 - a)^k t + (1 - (1 - a)^k) f`` (their appendix's batch
rule), and the best of them becomes the cell's elite even below the old elite. Of several
candidates in one cell the fittest (the first on ties) is kept. These are pyribs 0.12's
rules, statuses and values included, so that its emitters' rankings carry over.
"""

from __future__ import annotations

import abc

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from evolax.types import Metrics, PRNGKey
from evolax.validation import check_in_interval, concrete_number

NOT_ADDED, IMPROVED, NEW = 0, 1, 2
"""The status of a candidate after :meth:`Archive.add` (pyribs' ``AddStatus`` values)."""


@chex.dataclass(frozen=True, kw_only=True)
class ArchiveState:
    """An archive's contents, one row per cell (``x0`` and zeros in empty cells).

    Attributes:
        genomes: each cell's elite, ``[cells, D]``.
        fitness: its fitness, ``[cells]`` (``-inf`` when the cell is empty).
        descriptors: its descriptor, ``[cells, n_desc]``.
        threshold: the fitness a candidate must exceed to enter the cell, ``[cells]`` (the
            elite's fitness unless the archive anneals, as CMA-MAE's does).
    """

    genomes: Float[Array, "cells dim"]
    fitness: Float[Array, " cells"]
    descriptors: Float[Array, "cells desc"]
    threshold: Float[Array, " cells"]

    @property
    def occupied(self) -> Bool[Array, " cells"]:
        """Which cells hold an elite, ``bool[cells]``."""
        return self.fitness > -jnp.inf


@chex.dataclass(frozen=True, kw_only=True)
class Insertion:
    """What :meth:`Archive.add` did with each candidate (pyribs' ``add_info``).

    Attributes:
        cell: the candidate's cell, ``i32[pop]``.
        status: :data:`NOT_ADDED`, :data:`IMPROVED` or :data:`NEW` with respect to the archive
            before the batch (two candidates that open one cell are both :data:`NEW`),
            ``i32[pop]``.
        value: the candidate's fitness minus the cell's threshold, ``[pop]``; a candidate
            that opens a cell is measured against ``threshold_min`` (0 when that is ``-inf``,
            so the value is the fitness, as in CMA-ME). ``-inf`` for a non-finite fitness.
    """

    cell: Int[Array, " pop"]
    status: Int[Array, " pop"]
    value: Float[Array, " pop"]


class Archive(eqx.Module):
    """One elite per cell of a bounded descriptor space (see the module's docstring).

    Args:
        learning_rate: CMA-MAE's archive learning rate ``a`` in ``[0, 1]`` (1: thresholds are
            the elites' fitness).
        threshold_min: the threshold of an empty cell (``-inf``: any finite fitness opens it).
        qd_offset: subtracted from each elite's fitness in the QD-score; choose it below
            every reachable fitness, so the score only grows (Pugh et al., 2016).
    """

    learning_rate: eqx.AbstractVar[float]
    threshold_min: eqx.AbstractVar[float]
    qd_offset: eqx.AbstractVar[float]

    def __check_init__(self):
        check_in_interval("learning_rate", self.learning_rate, 0.0, 1.0)
        if self.anneals and self.threshold_min == -float("inf"):
            raise ValueError(
                f"threshold_min must be finite when learning_rate < 1 (CMA-MAE), got "
                f"learning_rate={self.learning_rate!r} and threshold_min=-inf"
            )

    @property
    @abc.abstractmethod
    def n_cells(self) -> int:
        """The number of cells."""

    @property
    @abc.abstractmethod
    def n_desc(self) -> int:
        """The number of descriptor dimensions."""

    def check_descriptors(self, descriptors, pop: int) -> Float[Array, "pop desc"]:
        """``descriptors`` as an array of shape ``(pop, n_desc)``, NaN replaced by 0 (raise at
        trace time if the shape differs)."""
        if jnp.shape(descriptors) != (pop, self.n_desc):
            raise ValueError(
                f"descriptors must have shape (pop, {self.n_desc}) = ({pop}, {self.n_desc}), "
                f"got {tuple(jnp.shape(descriptors))}"
            )
        return jnp.nan_to_num(jnp.asarray(descriptors))

    @property
    def anneals(self) -> bool:
        """Whether thresholds follow CMA-MAE's rule rather than the elites' fitness."""
        return not (
            concrete_number(self.learning_rate) == 1.0 and self.threshold_min == -float("inf")
        )

    def init(self, x0: Float[Array, " dim"]) -> ArchiveState:
        """An empty archive for genomes like the flat ``x0``."""
        n, dtype = self.n_cells, x0.dtype
        return ArchiveState(
            genomes=jnp.broadcast_to(x0[None], (n, x0.shape[0])),
            fitness=jnp.full(n, -jnp.inf, dtype),
            descriptors=jnp.zeros((n, self.n_desc), dtype),
            threshold=jnp.full(n, self.threshold_min, dtype),
        )

    @abc.abstractmethod
    def add(
        self,
        state: ArchiveState,
        x: Float[Array, "pop dim"],
        fitness: Float[Array, " pop"],
        descriptors: Float[Array, "pop desc"],
    ) -> tuple[ArchiveState, Insertion]:
        """Offer the candidates ``x`` (``[pop, D]``) with their fitness (``[pop]``) and
        descriptors (``[pop, n_desc]``); a non-finite fitness never enters."""

    def sample(self, key: PRNGKey, state: ArchiveState, n: int) -> Int[Array, " n"]:
        """``n`` cells drawn uniformly, with replacement, from the occupied ones (cell 0 when
        the archive is empty). Costs ``O(cells + n log cells)``."""
        counts = jnp.cumsum(state.occupied.astype(jnp.int32))
        draws = jax.random.randint(key, (n,), 0, jnp.maximum(counts[-1], 1))
        return jnp.minimum(jnp.searchsorted(counts, draws, side="right"), self.n_cells - 1)

    def metrics(self, state: ArchiveState) -> Metrics:
        """``coverage`` (the fraction of cells filled), ``qd_score`` (the sum over filled cells
        of ``fitness - qd_offset``) and ``archive_max`` (the best elite's fitness)."""
        return qd_metrics(state, self.qd_offset)


def qd_metrics(state: ArchiveState, qd_offset: float = 0.0) -> Metrics:
    """``coverage`` (the fraction of cells filled), ``qd_score`` (the sum over filled cells of
    ``fitness - qd_offset``) and ``archive_max`` (the best elite's fitness)."""
    occupied = state.occupied
    return {
        "coverage": jnp.mean(occupied.astype(jnp.float32)),
        "qd_score": jnp.sum(jnp.where(occupied, state.fitness - qd_offset, 0.0)),
        "archive_max": jnp.max(state.fitness),
    }


def finite_fitness(fitness, pop: int, dtype) -> Float[Array, " pop"]:
    """``fitness`` checked to have shape ``(pop,)``, its non-finite values as ``-inf``."""
    if jnp.shape(fitness) != (pop,):
        raise ValueError(f"fitness must have shape (pop,) = ({pop},), got {jnp.shape(fitness)}")
    return jnp.where(jnp.isfinite(fitness), fitness, -jnp.inf).astype(dtype)


class CellArchive(Archive):
    """An archive whose cells are fixed regions of the descriptor space: a descriptor's cell
    does not depend on the contents (:meth:`index`)."""

    @abc.abstractmethod
    def _index(self, descriptors: Float[Array, "pop desc"]) -> Int[Array, " pop"]:
        """The cell of each (finite) descriptor."""

    def index(self, descriptors: Float[Array, "pop desc"]) -> Int[Array, " pop"]:
        """The cell of each descriptor, ``i32[pop]`` (a NaN coordinate counts as 0)."""
        return self._index(self.check_descriptors(descriptors, jnp.shape(descriptors)[0]))

    def add(self, state, x, fitness, descriptors):
        """Offer the candidates (see :class:`Archive`); costs ``O(pop D + cells)``: elites are
        scattered, not rewritten."""
        descriptors = self.check_descriptors(descriptors, x.shape[0])
        return self.add_to_cells(state, x, fitness, descriptors, self._index(descriptors))

    def add_to_cells(
        self,
        state: ArchiveState,
        x: Float[Array, "pop dim"],
        fitness: Float[Array, " pop"],
        descriptors: Float[Array, "pop desc"],
        cell: Int[Array, " pop"],
    ) -> tuple[ArchiveState, Insertion]:
        """:meth:`add` with each candidate's cell given (``i32[pop]``) rather than found from
        its descriptor: multi-task MAP-Elites puts a child in the cell of the task it was
        evaluated on."""
        pop = x.shape[0]
        descriptors = self.check_descriptors(descriptors, pop)
        fitness = finite_fitness(fitness, pop, state.fitness.dtype)
        occupied = state.occupied[cell]
        threshold = jnp.where(occupied, state.threshold[cell], self.threshold_min)
        accepted = fitness > threshold
        new = accepted & ~occupied
        status = jnp.where(new, NEW, jnp.where(accepted, IMPROVED, NOT_ADDED)).astype(jnp.int32)
        opened = 0.0 if self.threshold_min == -float("inf") else self.threshold_min
        base = jnp.where(new, opened, threshold)
        value = jnp.where(jnp.isfinite(fitness), fitness - base, -jnp.inf)

        n = self.n_cells
        offered = jnp.where(accepted, fitness, -jnp.inf)
        cell_best = jax.ops.segment_max(offered, cell, num_segments=n)
        order = jnp.arange(pop)
        first = jax.ops.segment_min(
            jnp.where(accepted & (offered >= cell_best[cell]), order, pop), cell, num_segments=n
        )
        winner = accepted & (first[cell] == order)
        target = jnp.where(winner, cell, n)  # out of range: dropped by the scatter
        if self.anneals:
            count = jax.ops.segment_sum(accepted.astype(fitness.dtype), cell, num_segments=n)
            total = jax.ops.segment_sum(jnp.where(accepted, fitness, 0.0), cell, num_segments=n)
            keep = (1.0 - self.learning_rate) ** count[cell]
            mean = total[cell] / jnp.maximum(count[cell], 1)
            new_threshold = keep * threshold + (1.0 - keep) * mean
        else:
            new_threshold = fitness
        state = state.replace(  # type: ignore[attr-defined]
            genomes=state.genomes.at[target].set(x.astype(state.genomes.dtype), mode="drop"),
            fitness=state.fitness.at[target].set(fitness, mode="drop"),
            descriptors=state.descriptors.at[target].set(
                jnp.asarray(descriptors, state.descriptors.dtype), mode="drop"
            ),
            threshold=state.threshold.at[target].set(new_threshold, mode="drop"),
        )
        return state, Insertion(cell=cell, status=status, value=value)
