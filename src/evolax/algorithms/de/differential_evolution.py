"""Differential evolution (Storn & Price, 1997, "Differential Evolution - A Simple and Efficient
Heuristic for Global Optimization over Continuous Spaces")."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import (
    PopulationAlgorithm,
    PopulationState,
    check_min_pop_size,
)
from evolax.algorithms.de.common import (
    binomial_crossover,
    distinct_indices,
    first_population,
    greedy_selection,
)
from evolax.algorithms.noise import random_bits, unit_uniform
from evolax.algorithms.shaping import sanitize_fitness
from evolax.types import PRNGKey
from evolax.validation import check_in_interval, check_positive

STRATEGIES = ("rand/1/bin", "current-to-best/1/bin")
"""The mutation/crossover schemes :class:`DifferentialEvolution` implements."""


@chex.dataclass(frozen=True, kw_only=True)
class DEState(PopulationState):
    """Differential-evolution state: ``population`` holds the members (the target vectors,
    ``[pop, D]``) and ``fitness`` their fitness (``[pop]``, non-finite values as ``-inf``;
    ``-inf`` before the first ``tell``)."""


def de_trials(
    population: Float[Array, "pop dim"],
    fitness: Float[Array, " pop"],
    indices: Int[Array, "pop 3"],
    crossover_u: Float[Array, "pop dim"],
    j_rand: Int[Array, " pop"],
    strategy: str,
    differential_weight: float | Float[Array, ""],
    crossover_rate: float | Float[Array, ""],
) -> Float[Array, "pop dim"]:
    """Trial vectors of Storn & Price (1997), section 2: mutation then binomial crossover.

    Mutants: ``"rand/1/bin"`` is their eq. 1, ``v_i = x_r1 + F (x_r2 - x_r3)``;
    ``"current-to-best/1/bin"`` is ``v_i = x_i + F (x_best - x_i) + F (x_r1 - x_r2)`` (the
    "current-to-best/1" of Das & Suganthan, 2011, "Differential Evolution: A Survey of the
    State-of-the-Art", one ``F`` for both terms; ``x_best`` is the fittest member, non-finite
    fitness counting as ``-inf``). Crossover: ``u_ij = v_ij`` if ``crossover_u_ij < CR`` or
    ``j == j_rand_i``, else ``x_ij`` — so every trial takes at least one coordinate from its
    mutant, ``CR = 0`` takes exactly one and ``CR = 1`` the whole mutant (``<`` on ``[0, 1)``
    draws, where the paper writes ``randb(j) <= CR``: the same up to a probability-zero
    event).

    Args:
        population: target vectors ``x``, ``[pop, D]``.
        fitness: their fitness, ``[pop]`` (only ``current-to-best`` uses it).
        indices: ``r1, r2, r3`` per member, ``i32[pop, 3]``, distinct and different from ``i``.
        crossover_u: uniform ``[0, 1)`` draws, ``f32[pop, D]``.
        j_rand: the coordinate always taken from the mutant, ``i32[pop]``.
        strategy: one of :data:`STRATEGIES`.
        differential_weight: ``F``.
        crossover_rate: ``CR``.

    Returns:
        Trial vectors ``u``, ``[pop, D]``.
    """
    x1, x2, x3 = (population[indices[:, k]] for k in range(3))
    if strategy == "rand/1/bin":
        mutant = x1 + differential_weight * (x2 - x3)
    elif strategy == "current-to-best/1/bin":
        best = population[jnp.argmax(sanitize_fitness(fitness))]
        mutant = (
            population
            + differential_weight * (best[None] - population)
            + differential_weight * (x1 - x2)
        )
    else:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    return binomial_crossover(mutant, population, crossover_u, j_rand, crossover_rate)


class DifferentialEvolution(PopulationAlgorithm[DEState]):
    """Differential evolution (Storn & Price, 1997), maximising.

    ``ask`` returns one trial vector per member (mutation + binomial crossover,
    :func:`de_trials`); ``tell`` keeps trial ``i`` in place of member ``i`` if its fitness is
    ``>=`` the member's (:func:`greedy_selection`). Members' fitness is never re-measured: a
    target keeps the fitness it was accepted with (on noisy tasks, a lucky evaluation can
    persist).

    The initial population is ``x0 + init_std * N(0, I)`` (drawn in :meth:`init` from its key;
    Storn & Price draw it uniformly in the search box, which a neural genome does not have).
    Until a generation with a finite fitness has been told, ``ask`` returns that population
    itself, so it is evaluated before any variation. :meth:`best` is the best member ever told
    (greedy selection keeps it in the population). A non-finite fitness counts as ``-inf``.

    evosax's ``DifferentialEvolution`` with ``elitism=False`` and a fixed ``F`` is this
    ``rand/1/bin``; its default (``elitism=True``) is ``best/1/bin``, not implemented here.

    Args:
        pop_size: ``NP``, at least 4 (``rand/1`` needs three members besides ``i``).
        strategy: ``"rand/1/bin"`` (default) or ``"current-to-best/1/bin"``.
        differential_weight: ``F``, positive (Storn & Price: in ``(0, 2]``, usually 0.5).
        crossover_rate: ``CR``, in ``[0, 1]``.
        init_std: spread of the initial population around ``x0``, positive.
    """

    pop_size: int = eqx.field(static=True)
    strategy: str = eqx.field(static=True, default="rand/1/bin")
    differential_weight: float = 0.5
    crossover_rate: float = 0.9
    init_std: float = 1.0

    def __check_init__(self):
        check_min_pop_size(
            self.pop_size, 4, "for differential evolution (each mutant needs three other members)"
        )
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        check_positive("differential_weight", self.differential_weight)
        check_in_interval("crossover_rate", self.crossover_rate, 0, 1)
        check_positive("init_std", self.init_std)

    def draws(
        self, key: PRNGKey, like: Float[Array, " dim"]
    ) -> tuple[Int[Array, "pop 3"], Float[Array, "pop dim"], Int[Array, " pop"]]:
        """The random numbers one :meth:`ask` uses for genomes like ``like`` (a flat genome,
        ``[D]``), all from one :func:`~evolax.algorithms.noise.random_bits` call: ``r1, r2, r3``
        (:func:`distinct_indices`), uniform crossover draws ``f32[pop, D]``
        (:func:`unit_uniform`) and ``j_rand``, ``i32[pop]`` uniform in ``[0, D)``."""
        dim = like.shape[0]
        bits = random_bits(key, (self.pop_size, dim + 4))
        j_rand = (bits[:, dim + 3] % jnp.uint32(dim)).astype(jnp.int32)
        return distinct_indices(bits[:, dim : dim + 3]), unit_uniform(bits[:, :dim]), j_rand

    def _init(self, key, x0):
        return DEState(**first_population(key, x0, self.pop_size, self.init_std))

    def _ask(self, key, state):
        indices, crossover_u, j_rand = self.draws(key, state.population[0])
        trials = de_trials(
            state.population,
            state.fitness,
            indices,
            crossover_u,
            j_rand,
            self.strategy,
            self.differential_weight,
            self.crossover_rate,
        )
        told = jnp.any(state.fitness > -jnp.inf)
        return jnp.where(told, trials, state.population), state

    def _tell(self, key, state, x, fitness):
        del key
        members, member_fitness, accept = greedy_selection(
            state.population, state.fitness, x, fitness
        )
        new_state = state.replace(population=members, fitness=member_fitness)
        return new_state, {"acceptance_rate": jnp.mean(accept.astype(jnp.float32))}
