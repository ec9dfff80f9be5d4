"""A simple genetic algorithm: truncation selection, Gaussian mutation, elitism (Such et al.,
2017, "Deep Neuroevolution: Genetic Algorithms are a Competitive Alternative for Training Deep
Neural Networks for Reinforcement Learning")."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import PopulationAlgorithm, PopulationState, normal
from evolax.algorithms.shaping import sanitize_fitness
from evolax.types import PRNGKey
from evolax.validation import check_positive, check_positive_int


@chex.dataclass(frozen=True, kw_only=True)
class SimpleGAState(PopulationState):
    """SimpleGA state: ``population`` is the last evaluated generation (``[pop, D]``, every
    row ``x0`` before the first ``tell``) and ``fitness`` its fitness (``[pop]``, non-finite
    values as ``-inf``; all ``-inf`` before the first ``tell``)."""


def next_generation(
    population: Float[Array, "pop dim"],
    fitness: Float[Array, " pop"],
    parent_choice: Int[Array, " children"],
    noise: Float[Array, "children dim"],
    n_parents: int,
    n_elites: int,
    mutation_std: float | Float[Array, ""],
) -> Float[Array, "pop dim"]:
    """One generation of Such et al. (2017), algorithm 1, on a flat population.

    Ranks ``population`` by ``fitness`` (best first; non-finite counts as ``-inf``; ties by
    position), keeps the top ``n_elites`` unmutated in rows ``0 .. n_elites - 1`` and fills the
    other rows with ``parents[parent_choice] + mutation_std * noise``, where ``parents`` are the
    top ``n_parents`` (truncation selection).

    Args:
        population: ``[pop, D]``.
        fitness: ``[pop]``, maximised.
        parent_choice: index into the ranked parents of each child, ``i32[pop - n_elites]``
            with values in ``[0, n_parents)``.
        noise: standard-normal mutation directions, ``[pop - n_elites, D]``.
        n_parents: truncation size ``T``.
        n_elites: number of elites copied unchanged.
        mutation_std: the mutation power ``sigma``.

    Returns:
        The next population, ``[pop, D]``.
    """
    order = jnp.argsort(-sanitize_fitness(fitness), stable=True)  # best first
    parents = population[order[:n_parents]]
    children = parents[parent_choice] + mutation_std * noise
    return jnp.concatenate([population[order[:n_elites]], children])


class SimpleGA(PopulationAlgorithm[SimpleGAState]):
    """The deep-neuroevolution GA of Such et al. (2017), algorithm 1.

    Each generation, the top ``n_parents`` (``T``) of the last evaluated population become
    parents; every child is a uniformly chosen parent plus ``mutation_std * N(0, I)``, and the
    best ``n_elites`` members are copied unmutated into the first rows (the paper keeps one
    elite). There is no crossover. (evosax's ``SimpleGA`` is this GA with ``n_elites = 0``
    and ``n_parents = pop_size // 2``: it mutates every child, elites included.)

    Elite fitness is re-measured: the elites are part of the population ``ask`` returns, so
    (through the trainer) they are evaluated again every generation, and selection uses that
    fresh fitness, never a stored one. On a noisy task a lucky evaluation cannot keep a member
    elite forever; this is the role of the paper's extra elite evaluations (it re-evaluates the
    top-10 candidates on 30 episodes), which this ask/tell version leaves to the trainer's
    ``n_repeats``.

    Until a generation with a finite fitness has been told, ``ask`` returns ``x0 + init_std *
    N(0, I)`` for every row, except that with elitism (``n_elites >= 1``) row 0 is ``x0``
    itself, so the start point is never lost.

    :meth:`best` is the best genome ever told, with its single evaluation (on a noisy task,
    re-test it). A non-finite fitness counts as ``-inf``: such a member is never a parent or
    elite ahead of a finite one.

    Args:
        pop_size: number of members, including the elites.
        n_parents: truncation size ``T``, in ``[1, pop_size]``; ``None`` uses
            ``max(1, pop_size // 5)``.
        n_elites: members copied unmutated, in ``[0, n_parents]`` and below ``pop_size``.
        mutation_std: the mutation power ``sigma``, positive.
        init_std: spread of the first generation around ``x0``; ``None`` uses
            ``mutation_std``.
    """

    pop_size: int = eqx.field(static=True)
    n_parents: int = eqx.field(static=True)
    n_elites: int = eqx.field(static=True)
    mutation_std: float
    init_std: float

    def __init__(
        self,
        pop_size: int,
        n_parents: int | None = None,
        n_elites: int = 1,
        mutation_std: float = 0.1,
        init_std: float | None = None,
    ):
        self.pop_size = pop_size
        if n_parents is None and isinstance(pop_size, int):
            n_parents = max(1, pop_size // 5)
        self.n_parents = n_parents
        self.n_elites = n_elites
        self.mutation_std = mutation_std
        self.init_std = mutation_std if init_std is None else init_std

    def __check_init__(self):
        # pop_size itself is checked by Algorithm.__check_init__ (it runs after this one)
        sized = isinstance(self.pop_size, int) and self.pop_size >= 1
        check_positive_int("n_parents", self.n_parents)
        if sized and self.n_parents > self.pop_size:
            raise ValueError(
                f"n_parents must be in [1, pop_size] = [1, {self.pop_size}], got {self.n_parents}"
            )
        if (
            isinstance(self.n_elites, bool)
            or not isinstance(self.n_elites, int)
            or not 0 <= self.n_elites <= self.n_parents
        ):
            raise ValueError(
                f"n_elites must be an integer in [0, n_parents] = [0, {self.n_parents}], "
                f"got {self.n_elites!r}"
            )
        if sized and self.n_elites >= self.pop_size:
            raise ValueError(
                f"n_elites must be below pop_size ({self.pop_size}) to leave room for children, "
                f"got {self.n_elites}"
            )
        check_positive("mutation_std", self.mutation_std)
        check_positive("init_std", self.init_std)

    def draws(
        self, key: PRNGKey, like: Float[Array, " dim"]
    ) -> tuple[Int[Array, " children"], Float[Array, "pop dim"]]:
        """The random numbers one :meth:`ask` uses for genomes like ``like`` (a flat genome,
        ``[D]``: its size and dtype): each child's parent rank (``i32[pop - n_elites]``,
        uniform in ``[0, n_parents)`` as random bits modulo ``n_parents``) and standard-normal
        noise (``[pop, D]``; rows ``n_elites:`` mutate children, all rows perturb ``x0`` in
        the first generation)."""
        choice_key, noise_key = jax.random.split(key)
        bits = jax.random.bits(choice_key, (self.pop_size - self.n_elites,), jnp.uint32)
        choice = (bits % jnp.uint32(self.n_parents)).astype(jnp.int32)
        return choice, normal(noise_key, (self.pop_size, like.shape[0]), like)

    def _init(self, key, x0):
        del key
        return SimpleGAState(
            population=jnp.broadcast_to(x0[None], (self.pop_size, x0.shape[0])),
            fitness=jnp.full(self.pop_size, -jnp.inf, x0.dtype),
        )

    def _ask(self, key, state):
        x0 = state.population[0]  # every row is x0 until a generation has been told
        choice, noise = self.draws(key, x0)
        children = next_generation(
            state.population,
            state.fitness,
            choice,
            noise[self.n_elites :],
            self.n_parents,
            self.n_elites,
            self.mutation_std,
        )
        first = x0[None] + self.init_std * noise
        if self.n_elites:
            first = first.at[0].set(x0)
        told = jnp.any(state.fitness > -jnp.inf)
        return jnp.where(told, children, first), state

    def _tell(self, key, state, x, fitness):
        del key
        return state.replace(population=x, fitness=fitness), {}
