"""Dominated Novelty Search (Bahlous-Boldi, Faldor, Grillotti, Janmohamed, Coiffard, Spector &
Cully 2025, "Dominated Novelty Search: Rethinking Local Competition in Quality-Diversity"): a
population whose local competition is a fitness transformation, with no grid."""

from __future__ import annotations

from typing import ClassVar

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from evolax.algorithms.base import Algorithm
from evolax.algorithms.qd.common import QD_SUMMARY, QDState, archive_output, iso_line
from evolax.qd import GridArchive
from evolax.validation import check_non_negative, check_positive, check_positive_int


def competition_fitness(
    fitness: Float[Array, " n"],
    descriptors: Float[Array, "n desc"],
    k: int,
    valid: Bool[Array, " n"] | None = None,
) -> Float[Array, " n"]:
    """Dominated novelty: each individual's mean Euclidean descriptor distance to its ``k``
    nearest among the valid individuals of strictly higher fitness (all of them when fewer
    than ``k``), ``+inf`` when none is fitter, ``-inf`` for an invalid one, ``[n]``.

    Args:
        fitness: ``[n]``, maximised.
        descriptors: ``[n, n_desc]``.
        k: neighbours, positive (capped at ``n``).
        valid: which individuals take part, ``bool[n]`` (default: finite fitness).
    """
    valid = jnp.isfinite(fitness) if valid is None else valid
    distance = jnp.sqrt(jnp.sum((descriptors[:, None] - descriptors[None]) ** 2, axis=-1))
    fitter = valid[None, :] & (fitness[None, :] > fitness[:, None])  # [i, j]: j beats i
    distance = jnp.where(fitter, distance, jnp.inf)
    nearest = -jax.lax.top_k(-distance, min(k, fitness.shape[0]))[0]
    counted = jnp.isfinite(nearest)
    n_fitter = jnp.sum(counted, axis=1)
    mean = jnp.sum(jnp.where(counted, nearest, 0.0), axis=1) / jnp.maximum(n_fitter, 1)
    return jnp.where(valid, jnp.where(n_fitter > 0, mean, jnp.inf), -jnp.inf)


@chex.dataclass(frozen=True, kw_only=True)
class DNSState(QDState):
    """The population and the passive grid archive the metrics come from (``archive``).

    Attributes:
        population: the survivors, ``[capacity, D]`` (``x0`` in empty slots).
        fitness: their fitness, ``[capacity]`` (``-inf`` in empty slots).
        descriptors: their descriptors, ``[capacity, n_desc]``.
    """

    population: Float[Array, "capacity dim"]
    fitness: Float[Array, " capacity"]
    descriptors: Float[Array, "capacity desc"]


class DominatedNoveltySearch(Algorithm[DNSState]):
    """Dominated Novelty Search (Bahlous-Boldi et al., 2025): a genetic algorithm over a
    population of ``capacity`` individuals whose survivors are chosen by a competition
    fitness, :func:`competition_fitness`: the mean descriptor distance to the ``k`` nearest
    fitter individuals (infinite for one that none beats). An individual survives by being
    fitter than its neighbours or far from every fitter one; no grid, bounds or distance
    threshold shape the search.

    Each generation draws ``pop_size`` parent pairs uniformly from the population and makes
    children by iso+line variation, as :class:`~evolax.algorithms.ArchiveMAPElites` does;
    ``tell`` scores parents and children together and keeps the ``capacity`` with the
    highest competition fitness (QDax's ``DominatedNoveltyRepertoire``, which counts equal
    fitness as fitter; here, as in the paper, only strictly higher). While the population is
    empty, ``ask`` returns ``x0 + init_std N(0, I)``.

    The search needs no grid: the grid of ``grid_shape`` cells over ``[descriptor_low,
    descriptor_high]`` is a passive archive that takes every evaluated child, for the
    metrics (coverage, QD-score) and the run's ``archive.json`` only. Besides the fitness,
    ``tell`` needs each child's descriptor (:attr:`extra_inputs`).

    Args:
        pop_size: children per generation.
        grid_shape, descriptor_low, descriptor_high: the passive metrics grid
            (:class:`~evolax.qd.GridArchive`).
        capacity: individuals kept, positive.
        k: neighbours in the competition fitness (QDax's default 15), positive.
        mutation_std, line_std, init_std: see :class:`~evolax.algorithms.ArchiveMAPElites`.
        qd_offset: subtracted from elite fitness in the QD-score.
    """

    extra_inputs: ClassVar[tuple[str, ...]] = ("descriptors",)
    summary_metrics: ClassVar[tuple[str, ...]] = QD_SUMMARY

    pop_size: int = eqx.field(static=True)
    archive: GridArchive
    capacity: int = eqx.field(static=True)
    k: int = eqx.field(static=True)
    mutation_std: float
    line_std: float
    init_std: float

    def __init__(
        self,
        pop_size: int,
        grid_shape,
        descriptor_low,
        descriptor_high,
        capacity: int = 1024,
        k: int = 15,
        mutation_std: float = 0.01,
        line_std: float = 0.2,
        init_std: float = 0.1,
        qd_offset: float = 0.0,
    ):
        self.pop_size = pop_size
        self.archive = GridArchive(grid_shape, descriptor_low, descriptor_high, qd_offset=qd_offset)
        self.capacity = capacity
        self.k = k
        self.mutation_std = mutation_std
        self.line_std = line_std
        self.init_std = init_std

    def __check_init__(self):
        check_positive_int("capacity", self.capacity)
        check_positive_int("k", self.k)
        check_non_negative("mutation_std", self.mutation_std)
        check_non_negative("line_std", self.line_std)
        check_positive("init_std", self.init_std)

    def _init(self, key, x0):
        del key
        return DNSState(
            archive=self.archive.init(x0),
            population=jnp.broadcast_to(x0[None], (self.capacity, x0.shape[0])),
            fitness=jnp.full(self.capacity, -jnp.inf, x0.dtype),
            descriptors=jnp.zeros((self.capacity, self.archive.n_desc), x0.dtype),
        )

    def _ask(self, key, state):
        pick_key, iso_key, line_key = jax.random.split(key, 3)
        valid = state.fitness > -jnp.inf
        logits = jnp.where(valid, 0.0, -jnp.inf)
        parents = jax.random.categorical(pick_key, logits, shape=(2 * self.pop_size,))
        x = state.population[parents[: self.pop_size]]
        y = state.population[parents[self.pop_size :]]
        children, iso = iso_line(iso_key, line_key, x, y, self.mutation_std, self.line_std)
        first = state.population[0][None] + self.init_std * iso  # every slot holds x0 then
        return jnp.where(jnp.any(valid), children, first), state

    def outputs(self, state):
        return archive_output(self.archive, state.archive)

    def _tell(self, key, state, x, fitness, descriptors):
        del key
        descriptors = self.archive.check_descriptors(descriptors, self.pop_size)
        descriptors = descriptors.astype(state.descriptors.dtype)
        archive, _ = self.archive.add(state.archive, x, fitness, descriptors)
        genomes = jnp.concatenate([state.population, x.astype(state.population.dtype)])
        scores = jnp.concatenate([state.fitness, fitness.astype(state.fitness.dtype)])
        places = jnp.concatenate([state.descriptors, descriptors])
        competition = competition_fitness(scores, places, self.k)
        _, keep = jax.lax.top_k(competition, self.capacity)
        new = state.replace(
            archive=archive,
            population=genomes[keep],
            fitness=scores[keep],
            descriptors=places[keep],
        )
        survivors = jnp.sum((keep >= self.capacity) & (scores[keep] > -jnp.inf))
        return new, self.archive.metrics(archive) | {
            "children_kept": survivors.astype(jnp.float32),
            "population_size": jnp.sum(new.fitness > -jnp.inf).astype(jnp.float32),
        }
