"""An archive without cells: elites kept apart by a minimum descriptor distance (the
unstructured archive of novelty search with local competition and of QDax's
``UnstructuredRepertoire``; Lehman & Stanley 2011, Cully & Demiris 2018)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from evolax.qd.archive import (
    IMPROVED,
    NEW,
    NOT_ADDED,
    Archive,
    ArchiveState,
    Insertion,
    finite_fitness,
)
from evolax.validation import check_positive, check_positive_int


class UnstructuredArchive(Archive):
    """At most ``capacity`` elites whose descriptors lie at least ``min_distance`` apart.

    Candidates are offered one after another (a ``lax.scan`` over the batch, so a batch
    behaves as the same candidates told singly): one farther than ``min_distance`` from every
    elite takes a free slot (:data:`~evolax.qd.archive.NEW`; dropped once the archive is
    full); one within it replaces its nearest elite if fitter
    (:data:`~evolax.qd.archive.IMPROVED`). Coverage is the fraction of slots filled.

    Args:
        capacity: the number of slots, ``n_cells``.
        n_desc: descriptor dimensions.
        min_distance: the novelty threshold ``l``, positive (Euclidean, in descriptor units).
        qd_offset: see :class:`~evolax.qd.Archive`.
    """

    capacity: int = eqx.field(static=True)
    n_descriptors: int = eqx.field(static=True)
    min_distance: float
    qd_offset: float
    learning_rate: float  # 1 and -inf: thresholds are the elites' fitness
    threshold_min: float

    def __init__(self, capacity: int, n_desc: int, min_distance: float, qd_offset: float = 0.0):
        check_positive_int("capacity", capacity)
        check_positive_int("n_desc", n_desc)
        check_positive("min_distance", min_distance)
        self.capacity = capacity
        self.n_descriptors = n_desc
        self.min_distance = min_distance
        self.qd_offset = qd_offset
        self.learning_rate, self.threshold_min = 1.0, -float("inf")

    @property
    def n_cells(self) -> int:
        return self.capacity

    @property
    def n_desc(self) -> int:
        return self.n_descriptors

    def add(self, state, x, fitness, descriptors):
        """Offer the candidates in order; costs ``O(pop (capacity n_desc + D))``."""
        pop = x.shape[0]
        descriptors = self.check_descriptors(descriptors, pop).astype(state.descriptors.dtype)
        fitness = finite_fitness(fitness, pop, state.fitness.dtype)

        def offer(archive: ArchiveState, candidate):
            genome, f, d = candidate
            occupied = archive.occupied
            distance = jnp.where(
                occupied, jnp.sqrt(jnp.sum((archive.descriptors - d[None]) ** 2, axis=1)), jnp.inf
            )
            near = jnp.argmin(distance)
            free = jnp.argmin(occupied)  # the first empty slot (0 if none: then unused)
            novel = distance[near] > self.min_distance
            opens = novel & ~occupied[free] & (f > -jnp.inf)
            improves = ~novel & (f > archive.fitness[near])
            slot = jnp.where(opens, free, jnp.where(improves, near, self.capacity))
            status = jnp.where(opens, NEW, jnp.where(improves, IMPROVED, NOT_ADDED))
            value = jnp.where(
                f > -jnp.inf, f - jnp.where(novel, 0.0, archive.fitness[near]), -jnp.inf
            )
            archive = archive.replace(  # type: ignore[attr-defined]
                genomes=archive.genomes.at[slot].set(genome, mode="drop"),
                fitness=archive.fitness.at[slot].set(f, mode="drop"),
                descriptors=archive.descriptors.at[slot].set(d, mode="drop"),
                threshold=archive.threshold.at[slot].set(f, mode="drop"),
            )
            return archive, (jnp.where(opens, free, near), status, value)

        genomes = x.astype(state.genomes.dtype)
        state, (cell, status, value) = jax.lax.scan(offer, state, (genomes, fitness, descriptors))
        return state, Insertion(
            cell=cell.astype(jnp.int32),
            status=status.astype(jnp.int32),
            value=value,
        )


def knn_distance(
    bank: Float[Array, "n desc"],
    valid: Bool[Array, " n"],
    descriptors: Float[Array, "pop desc"],
    k: int,
) -> Float[Array, " pop"]:
    """Each descriptor's mean Euclidean distance to its ``k`` nearest valid rows of ``bank``,
    ``[pop]`` (``inf`` while fewer than ``k`` are valid)."""
    distance = jnp.sqrt(jnp.sum((descriptors[:, None] - bank[None]) ** 2, axis=-1))
    distance = jnp.where(valid[None], distance, jnp.inf)
    nearest = -jax.lax.top_k(-distance, k)[0]
    return jnp.mean(nearest, axis=1)


def novelty(
    state: ArchiveState, descriptors: Float[Array, "pop desc"], k: int
) -> Float[Array, " pop"]:
    """Each descriptor's mean distance to its ``k`` nearest elites (Lehman & Stanley, 2011),
    ``[pop]``; ``inf`` while the archive holds fewer than ``k``."""
    return knn_distance(state.descriptors, state.occupied, descriptors, k)
