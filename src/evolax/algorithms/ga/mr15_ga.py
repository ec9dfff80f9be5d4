"""A (mu + mu) genetic algorithm whose mutation std follows Rechenberg's 1/5 success rule
(Rechenberg, 1973, "Evolutionsstrategie: Optimierung technischer Systeme nach Prinzipien der
biologischen Evolution"), as evosax's ``MR15_GA``."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.algorithms.base import PopulationAlgorithm, PopulationState, normal
from evolax.algorithms.ga.common import check_std_bounds, evaluated, sound_stds, unevaluated
from evolax.algorithms.shaping import sanitize_fitness
from evolax.types import PRNGKey
from evolax.validation import check_in_interval, check_positive


@chex.dataclass(frozen=True, kw_only=True)
class MR15GAState(PopulationState):
    """MR15GA state: ``population`` is the archive of the ``pop_size`` best genomes told so far
    (``[pop, D]``, every row ``x0`` before the first ``tell``) and ``fitness`` their fitness as
    told (``[pop]``, non-finite values as ``-inf``; all ``-inf`` before the first ``tell``).

    Attributes:
        mutation_std: the mutation std ``sigma`` of the next children, ``[]``.
    """

    mutation_std: Float[Array, ""]


def one_fifth_rule(
    std: Float[Array, ""],
    fitness: Float[Array, " pop"],
    parent_fitness: Float[Array, " pop"],
    threshold: float | Float[Array, ""],
    factor: float | Float[Array, ""],
) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """Rechenberg's 1/5 success rule: ``std * factor`` if the fraction of children strictly
    fitter than their parent (``fitness > parent_fitness``, row by row) exceeds ``threshold``,
    else ``std / factor``. Returns the new std and that success rate."""
    rate = jnp.mean((fitness > parent_fitness).astype(std.dtype))
    return jnp.where(rate > threshold, std * factor, std / factor), rate


def plus_selection(
    population: Float[Array, "pop dim"],
    fitness: Float[Array, " pop"],
    children: Float[Array, "pop dim"],
    children_fitness: Float[Array, " pop"],
) -> tuple[Float[Array, "pop dim"], Float[Array, " pop"]]:
    """The ``pop`` fittest of parents and children together, best first (non-finite fitness
    counts as ``-inf``; on ties children first, then by position)."""
    merged = jnp.concatenate([sanitize_fitness(children_fitness), sanitize_fitness(fitness)])
    keep = jnp.argsort(-merged, stable=True)[: fitness.shape[0]]
    return jnp.concatenate([children, population])[keep], merged[keep]


class MR15GA(PopulationAlgorithm[MR15GAState]):
    """The 1/5-rule GA of evosax (``MR15_GA``): a ``(mu + mu)`` scheme whose one mutation std
    follows Rechenberg's 1/5 success rule (Rechenberg, 1973).

    Each generation, every archive member ``x_i`` has one child ``x_i + sigma * N(0, I)``. After
    ``tell``, ``sigma`` is multiplied by ``std_factor`` if more than ``success_threshold`` of the
    children are strictly fitter than their own parent, and divided by it otherwise
    (:func:`one_fifth_rule`), then clipped to ``[std_min, std_max]``; the archive becomes the
    ``pop_size`` fittest of parents and children (:func:`plus_selection`). Rechenberg derived
    the rule for the ``(1 + 1)``-ES, where a success is an offspring that beats its parent:
    here each member runs that comparison with its own child, and plus selection keeps the
    best of both, so the archive is elitist. The defaults are evosax's: factor 2, threshold
    1/5, ``sigma_0 = 1``, no bounds.

    The first generation mutates the archive, every row ``x0``, with ``sigma_0 = init_std``; it
    has no evaluated parents, so it leaves ``sigma`` as it was. Archive fitness is never
    re-measured: on a noisy task a lucky evaluation keeps its place. :meth:`best` is the best
    genome ever told. A non-finite fitness counts as ``-inf``: such a child is never a
    success and never enters the archive ahead of a finite member.

    Kumar, Liu, Miikkulainen & Stone (2022, "Effective Mutation Rate Adaptation through Group
    Elite Selection") compare a different "15MR": the same rule (factor 2, threshold 1/5) in a
    generational GA whose parents are drawn from the best half (as SimpleGA with one elite);
    there, children of mediocre parents succeed at large stds, which keeps ``sigma`` too large
    near an optimum.

    Args:
        pop_size: number of archive members, each with one child per generation.
        init_std: the initial mutation std ``sigma_0``, also the spread of the first
            generation around ``x0``, positive.
        success_threshold: the success rate above which ``sigma`` grows, in ``[0, 1)``.
        std_factor: the factor by which ``sigma`` grows or shrinks each generation, above 1.
        std_min: lower bound of ``sigma``, ``>= 0``.
        std_max: upper bound of ``sigma``, ``>= std_min``; ``None`` for none.
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0
    success_threshold: float = 0.2
    std_factor: float = 2.0
    std_min: float = 0.0
    std_max: float | None = None

    def __check_init__(self):
        check_positive("init_std", self.init_std)
        check_in_interval("success_threshold", self.success_threshold, 0, 1, high_open=True)
        check_in_interval(
            "std_factor", self.std_factor, 1, float("inf"), low_open=True, high_open=True
        )
        check_std_bounds(self.std_min, self.std_max)

    def draws(self, key: PRNGKey, like: Float[Array, " dim"]) -> Float[Array, "pop dim"]:
        """The standard-normal noise one :meth:`ask` uses for genomes like ``like`` (a flat
        genome, ``[D]``): one row per child, ``[pop, D]``."""
        return normal(key, (self.pop_size, like.shape[0]), like)

    def _init(self, key, x0):
        del key
        std = jnp.clip(jnp.asarray(self.init_std, x0.dtype), self.std_min, self.std_max)
        return MR15GAState(**unevaluated(x0, self.pop_size), mutation_std=std)

    def _ask(self, key, state):
        noise = self.draws(key, state.population[0])
        return state.population + state.mutation_std * noise, state

    def _tell(self, key, state, x, fitness):
        del key
        adapted, rate = one_fifth_rule(
            state.mutation_std, fitness, state.fitness, self.success_threshold, self.std_factor
        )
        had_parents = evaluated(state.fitness)  # not the first generation
        std = jnp.where(
            had_parents, jnp.clip(adapted, self.std_min, self.std_max), state.mutation_std
        )
        population, kept_fitness = plus_selection(state.population, state.fitness, x, fitness)
        new_state = state.replace(population=population, fitness=kept_fitness, mutation_std=std)
        return new_state, {"std": std, "success_rate": rate}

    def _healthy(self, state):
        """A finite, non-negative mutation std."""
        return sound_stds(state.mutation_std)
