"""A genetic algorithm with self-adaptive mutation rates: each member carries its own mutation
std (the SAMR of Kumar, Liu, Miikkulainen & Stone, 2022, "Effective Mutation Rate Adaptation
through Group Elite Selection")."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
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
from evolax.algorithms.ga.common import check_ga_sizes as check_ga_sizes  # its old home
from evolax.algorithms.ga.common import check_initial_stds as check_initial_stds
from evolax.algorithms.ga.common import check_std_bounds as check_std_bounds
from evolax.types import PRNGKey


@chex.dataclass(frozen=True, kw_only=True)
class SAMRGAState(PopulationState):
    """SAMRGA state: the population and fitness of
    :class:`~evolax.algorithms.ga.simple_ga.SimpleGAState`, and the mutation stds.

    Attributes:
        mutation_std: each member's own mutation std, ``[pop]`` (the initial ones before the
            first ``tell``).
        asked_std: the mutation stds of the generation last asked, ``[pop]``: ``tell`` makes
            them the members'.
    """

    mutation_std: Float[Array, " pop"]
    asked_std: Float[Array, " pop"]


class SAMRGA(EvolvingStdGA[SAMRGAState]):
    """Self-adaptive mutation rates (SAMR) in SimpleGA's generation, as compared by Kumar, Liu,
    Miikkulainen & Stone (2022), "Effective Mutation Rate Adaptation through Group Elite
    Selection" (GECCO).

    Each member ``i`` carries its own mutation std ``sigma_i``. A generation is SimpleGA's
    (:func:`~evolax.algorithms.ga.common.next_generation`): the ``n_elites`` best members are
    copied unmutated with their ``sigma``; every other row takes a parent ``p`` uniformly from
    the ``n_parents`` best, inherits ``sigma = sigma_p * std_meta ** U(-1, 1)`` (clipped to
    ``[std_min, std_max]``) and is ``x_p + sigma_p * N(0, I)``: the parent's own std mutates
    the child's genome, as in the authors' code (``run_evolution_ns`` in
    github.com/akarshkumar0101/evolved-neuroevolution). With ``mutate_std_first`` the child is
    ``x_p + sigma * N(0, I)`` instead: the new std first, as in Bäck (1992, "Self-Adaptation
    in Genetic Algorithms") and evosax's ``SAMR_GA``. Selection sees only the members'
    fitness, so a small ``sigma``, whose children rarely get worse, tends to win: the
    vanishing mutation rate that GESMR (:class:`~evolax.algorithms.ga.gesmr_ga.GESMRGA`) avoids.

    Defaults are Kumar et al.'s: ``std_meta = 2``, truncation to the best half, one elite,
    initial stds log-spaced from ``1e-3`` to ``1e3`` over the members, a first generation
    ``x0 + N(0, I)``, no bounds. evosax's ``SAMR_GA`` starts every std at 1, clips it to
    ``[0, 10]``, and mutates the best member and its std too (it keeps no elite).

    Args:
        mutate_std_first: mutate a child's genome with its new std rather than its parent's.
    """

    mutate_std_first: bool = eqx.field(static=True, default=False)

    def draws(
        self, key: PRNGKey, like: Float[Array, " dim"]
    ) -> tuple[Int[Array, " children"], Float[Array, "pop dim"], Float[Array, " children"]]:
        """The random numbers one :meth:`ask` uses for genomes like ``like`` (``[D]``): each
        child's parent rank and the standard-normal noise, as :meth:`SimpleGA.draws
        <evolax.algorithms.ga.simple_ga.SimpleGA.draws>` draws them, and each child's
        ``U(-1, 1)`` exponent of its std mutation (``[pop - n_elites]``)."""
        ga_key, std_key = jax.random.split(key)
        choice, noise = self._generation_draws(ga_key, like)
        exponent = jax.random.uniform(std_key, choice.shape, like.dtype, -1.0, 1.0)
        return choice, noise, exponent

    def _init(self, key, x0):
        del key
        stds = log_spaced(self.mutation_std_low, self.mutation_std_high, self.pop_size, x0)
        stds = jnp.clip(stds, self.std_min, self.std_max)
        return SAMRGAState(**unevaluated(x0, self.pop_size), mutation_std=stds, asked_std=stds)

    def _ask(self, key, state):
        choice, noise, exponent = self.draws(key, state.population[0])
        own = inherit(
            state.mutation_std[:, None], state.fitness, choice, self.n_parents, self.n_elites
        )[:, 0]
        parent_std = own[self.n_elites :]
        child_std = jnp.clip(parent_std * self.std_meta**exponent, self.std_min, self.std_max)
        step = child_std if self.mutate_std_first else parent_std
        x = self._generation(state, choice, noise, step[:, None])
        stds = jnp.where(
            evaluated(state.fitness),
            jnp.concatenate([own[: self.n_elites], child_std]),
            state.mutation_std,
        )
        return x, state.replace(asked_std=stds)

    def _tell(self, key, state, x, fitness):
        del key
        new_state = state.replace(population=x, fitness=fitness, mutation_std=state.asked_std)
        return new_state, {"std": geometric_mean(state.asked_std)}
