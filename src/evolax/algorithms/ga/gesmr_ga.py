"""Group elite selection of mutation rates (Kumar, Liu, Miikkulainen & Stone, 2022, "Effective
Mutation Rate Adaptation through Group Elite Selection"), on the GA of
:mod:`evolax.algorithms.ga.simple_ga`."""

from __future__ import annotations

import math

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import PopulationState
from evolax.algorithms.ga.common import (
    EvolvingStdGA,
    evaluated,
    geometric_mean,
    inherit,
    log_spaced,
    unevaluated,
)
from evolax.types import PRNGKey
from evolax.validation import check_positive_int


@chex.dataclass(frozen=True, kw_only=True)
class GESMRGAState(PopulationState):
    """GESMRGA state: the population and fitness of
    :class:`~evolax.algorithms.ga.simple_ga.SimpleGAState`, and the mutation stds.

    Attributes:
        mutation_std: the groups' mutation stds, ``[n_groups]``; group ``0`` holds the elite
            std (the best group's of the last generation).
        parent_fitness: the fitness of each row's parent in the generation last asked, ``[pop]``
            (an elite is its own parent; ``-inf`` in a first generation).
    """

    mutation_std: Float[Array, " groups"]
    parent_fitness: Float[Array, " pop"]


def group_of_children(n_children: int, n_groups: int) -> np.ndarray:
    """The group of each child, ``i32[n_children]``: ``n_groups`` consecutive blocks whose sizes
    differ by at most one (child ``j`` is in group ``j * n_groups // n_children``)."""
    return (np.arange(n_children) * n_groups // n_children).astype(np.int32)


def group_improvement(
    fitness: Float[Array, " children"],
    parent_fitness: Float[Array, " children"],
    groups: Int[Array, " children"],
    n_groups: int,
) -> Float[Array, " groups"]:
    """Kumar et al.'s fitness of each mutation std: the best change of fitness from parent to
    child in its group, ``max_{i in group} f(child_i) - f(parent_i)``. A child with no finite
    fitness changes by ``-inf``; a finite child of a parent without one, by ``+inf``."""
    change = jnp.where(fitness > -jnp.inf, fitness - parent_fitness, -jnp.inf)
    return jax.ops.segment_max(change, groups, num_segments=n_groups, indices_are_sorted=True)


def select_stds(
    stds: Float[Array, " groups"],
    improvement: Float[Array, " groups"],
    parent_choice: Int[Array, " others"],
    exponent: Float[Array, " others"],
    n_std_parents: int,
    std_meta: float | Float[Array, ""],
) -> Float[Array, " groups"]:
    """The next generation of mutation stds: the std of the best group (highest
    ``improvement``, ties by position) kept unchanged in slot 0, and every other slot a std
    chosen by ``parent_choice`` (in ``[0, n_std_parents)``) among the ``n_std_parents`` best
    times ``std_meta ** exponent`` (``exponent`` uniform in ``[-1, 1)``)."""
    ranked = stds[jnp.argsort(-improvement, stable=True)]
    children = ranked[:n_std_parents][parent_choice] * std_meta**exponent
    return jnp.concatenate([ranked[:1], children])


class GESMRGA(EvolvingStdGA[GESMRGAState]):
    """Group elite selection of mutation rates (GESMR; Kumar, Liu, Miikkulainen & Stone, 2022,
    "Effective Mutation Rate Adaptation through Group Elite Selection", GECCO).

    A population of ``n_groups`` mutation stds co-evolves with SimpleGA's population
    (:func:`~evolax.algorithms.ga.common.next_generation`: ``n_elites`` unmutated elites, the
    other rows a parent drawn uniformly from the ``n_parents`` best plus ``sigma_g * N(0,
    I)``). The children are split into ``n_groups`` consecutive groups and group ``g`` mutates
    with ``sigma_g``. After ``tell``, each std's fitness is the best fitness change from parent
    to child in its group (:func:`group_improvement`), not the average: a rare large
    improvement keeps a large std alive, which avoids the vanishing mutation rate of SAMR
    (:class:`~evolax.algorithms.ga.samr_ga.SAMRGA`). The stds then evolve like the solutions
    (:func:`select_stds`): the best one is kept unchanged, the others are drawn uniformly from
    the best half (``max(1, n_groups // 2)``) and multiplied by ``std_meta ** U(-1, 1)``, then
    clipped to ``[std_min, std_max]`` (as ``run_evolution_ours`` in the authors' code,
    github.com/akarshkumar0101/evolved-neuroevolution). The first generation (drawn around
    ``x0`` with ``init_std``, as in SimpleGA) uses no std and leaves them as they were.

    Defaults are Kumar et al.'s: ``std_meta = 2``, truncation to the best half, one elite,
    initial stds log-spaced from ``1e-3`` to ``1e3`` over the groups, a first generation
    ``x0 + N(0, I)``, no bounds; their 10 groups of 10 children at ``pop_size = 101`` are the
    default ``n_groups = isqrt(pop_size - n_elites)``. evosax's ``GESMR_GA`` is this algorithm
    with ``n_elites = 1``, except that it multiplies the best std by ``std_meta ** U(-1, 1)``
    too; it defaults to one group, starts every std at 1 and clips them to ``[0, 10]``.

    Args:
        n_groups: number of mutation stds, each used by a group of children, in
            ``[1, pop_size - n_elites]``; ``None`` uses ``max(1, isqrt(pop_size - n_elites))``.
            With one group the std never changes.
    """

    n_groups: int = eqx.field(static=True, default=None)

    def __post_init__(self):
        super().__post_init__()
        if self.n_groups is None and isinstance(self.pop_size, int):
            self.n_groups = max(1, math.isqrt(max(self.pop_size - self.n_elites, 0)))

    def __check_init__(self):
        check_positive_int("n_groups", self.n_groups)
        if self.n_groups > self.pop_size - self.n_elites:
            raise ValueError(
                f"n_groups must be in [1, pop_size - n_elites] = "
                f"[1, {self.pop_size - self.n_elites}] (a child per group at least), "
                f"got {self.n_groups}"
            )

    @property
    def n_std_parents(self) -> int:
        """How many of the best stds the others are drawn from: ``max(1, n_groups // 2)``."""
        return max(1, self.n_groups // 2)

    def draws(
        self, key: PRNGKey, like: Float[Array, " dim"]
    ) -> tuple[Int[Array, " children"], Float[Array, "pop dim"]]:
        """The random numbers one :meth:`ask` uses for genomes like ``like`` (``[D]``): each
        child's parent rank and the standard-normal noise, as :meth:`SimpleGA.draws
        <evolax.algorithms.ga.simple_ga.SimpleGA.draws>` draws them."""
        return self._generation_draws(key, like)

    def std_draws(
        self, key: PRNGKey, like: Float[Array, ""]
    ) -> tuple[Int[Array, " others"], Float[Array, " others"]]:
        """The random numbers one :meth:`tell` uses (``like``: the stds' dtype): each non-elite
        std's parent rank, uniform in ``[0, n_std_parents)``, and its ``U(-1, 1)`` exponent,
        each ``[n_groups - 1]``. They are evosax's ``GESMR_GA.tell`` draws from the same key
        (``jax.random.choice`` and ``uniform`` of ``n_groups`` exponents, the first of which
        evosax spends on the best std and this algorithm leaves unused)."""
        choice_key, exponent_key = jax.random.split(key)
        choice = jax.random.choice(choice_key, self.n_std_parents, (self.n_groups - 1,))
        exponent = jax.random.uniform(exponent_key, (self.n_groups,), like.dtype, -1.0, 1.0)
        return choice, exponent[1:]

    def _init(self, key, x0):
        del key
        stds = log_spaced(self.mutation_std_low, self.mutation_std_high, self.n_groups, x0)
        return GESMRGAState(
            **unevaluated(x0, self.pop_size),
            mutation_std=jnp.clip(stds, self.std_min, self.std_max),
            parent_fitness=jnp.full(self.pop_size, -jnp.inf, x0.dtype),
        )

    def _groups(self) -> np.ndarray:
        return group_of_children(self.pop_size - self.n_elites, self.n_groups)

    def _ask(self, key, state):
        choice, noise = self.draws(key, state.population[0])
        x = self._generation(state, choice, noise, state.mutation_std[self._groups()][:, None])
        parent_fitness = inherit(
            state.fitness[:, None], state.fitness, choice, self.n_parents, self.n_elites
        )[:, 0]
        return x, state.replace(parent_fitness=parent_fitness)

    def _tell(self, key, state, x, fitness):
        improvement = group_improvement(
            fitness[self.n_elites :],
            state.parent_fitness[self.n_elites :],
            jnp.asarray(self._groups()),
            self.n_groups,
        )
        choice, exponent = self.std_draws(key, state.mutation_std)
        selected = select_stds(
            state.mutation_std, improvement, choice, exponent, self.n_std_parents, self.std_meta
        )
        selected = jnp.clip(selected, self.std_min, self.std_max)
        had_parents = evaluated(state.fitness)  # not a first generation
        stds = jnp.where(had_parents, selected, state.mutation_std)
        new_state = state.replace(population=x, fitness=fitness, mutation_std=stds)
        return new_state, {"std": geometric_mean(stds), "elite_std": stds[0]}
