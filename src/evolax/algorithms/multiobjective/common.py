"""What the multi-objective genetic algorithms share: ``n_objectives`` maximised objectives,
optional box bounds, a first population, Deb's real-coded variation, a state ranked by
Pareto front, and the merge of parents and children that every survival step starts from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from evolax.algorithms.base import Output, PopulationState, normal
from evolax.algorithms.multiobjective.real_coded import (
    polynomial_mutation,
    simulated_binary_crossover,
)
from evolax.algorithms.noise import uniform
from evolax.pareto import dominates, finite_rows, hypervolume, non_dominated_rank
from evolax.types import Metrics, PRNGKey
from evolax.validation import (
    check_in_interval,
    check_int_at_least,
    check_non_negative,
    check_positive,
    check_positive_int,
)

__all__ = ["FrontState", "RealCoded", "dominance_tournament"]


def _bound(value: float | Sequence[float] | None) -> tuple[float, ...] | None:
    return None if value is None else tuple(float(v) for v in np.ravel(value))


@chex.dataclass(frozen=True, kw_only=True)
class FrontState(PopulationState):
    """The surviving population (``population``, ``[pop, D]``) with its objective vectors
    (``fitness``, ``[pop, m]``, ``-inf`` before the first evaluation).

    Attributes:
        rank: each member's Pareto front among parents and children, ``int32[pop]`` (0: not
            dominated).
    """

    rank: Int[Array, " pop"]

    @property
    def pareto_front(self) -> Bool[Array, " pop"]:
        """Which members no other member dominates (those with a finite fitness)."""
        return (self.rank == 0) & jnp.all(jnp.isfinite(self.fitness), axis=-1)


class RealCoded(eqx.Module):
    """Fields and steps of a multi-objective GA over real vectors; mixed in before the
    algorithm's base class.

    Args:
        pop_size: number of members kept, and of children per generation.
        n_objectives: ``m``, the length of each fitness vector (at least 2).
        lower, upper: the box the genomes stay in: one value for every variable, one per
            variable, or ``None`` for no bound. With both bounds finite the first population is
            uniform in the box and mutation is polynomial; otherwise it is ``x0 + init_std *
            N(0, I)`` and mutation Gaussian.
        crossover_prob: probability that a pair of parents crosses (SBX), in ``[0, 1]``.
        crossover_eta: SBX's distribution index, ``>= 0`` (larger: children nearer parents).
        mutation_eta: polynomial mutation's distribution index, ``>= 0``.
        mutation_rate: probability that a variable mutates, in ``[0, 1]``; ``None``: ``1 / D``.
        mutation_std: std of the Gaussian mutation of unbounded variables, ``>= 0``.
        init_std: spread of the first population around ``x0`` when unbounded, positive.
        reference_point: ``m`` values below the front; when set, ``tell`` reports the
            population's hypervolume above it (metric ``hypervolume``; exact for ``m <= 3``,
            a Monte Carlo estimate from ``tell``'s key above).
        block_size: points compared at once by the non-dominated sort (memory
            ``O(block_size^2)``).
    """

    summary_metrics: ClassVar[tuple[str, ...]] = ("front_size", "hypervolume")
    pop_size: int = eqx.field(static=True)
    n_objectives: int = eqx.field(static=True)
    lower: tuple[float, ...] | None = eqx.field(default=None, static=True, converter=_bound)
    upper: tuple[float, ...] | None = eqx.field(default=None, static=True, converter=_bound)
    crossover_prob: float = 0.9
    crossover_eta: float = 15.0
    mutation_eta: float = 20.0
    mutation_rate: float | None = None
    mutation_std: float = 0.1
    init_std: float = 0.1
    reference_point: tuple[float, ...] | None = eqx.field(default=None, static=True)
    block_size: int = eqx.field(default=512, static=True)

    @property
    def objectives_shape(self) -> tuple[int, ...]:
        return (self.n_objectives,)

    def __check_init__(self):
        check_int_at_least("n_objectives", self.n_objectives, 2)
        for name, bound in (("lower", self.lower), ("upper", self.upper)):
            if bound is not None and any(np.isnan(bound)):
                raise ValueError(f"{name} must hold numbers or infinities, got NaN")
        if self.lower is not None and self.upper is not None:
            low, high = np.asarray(self.lower), np.asarray(self.upper)
            if low.size > 1 and high.size > 1 and low.size != high.size:
                raise ValueError(
                    f"lower and upper must have one value or the same length, got {low.size} "
                    f"and {high.size}"
                )
            if not np.all(low < high):
                raise ValueError(f"lower must be below upper, got {self.lower} and {self.upper}")
        check_in_interval("crossover_prob", self.crossover_prob, 0.0, 1.0)
        check_non_negative("crossover_eta", self.crossover_eta)
        check_non_negative("mutation_eta", self.mutation_eta)
        if self.mutation_rate is not None:
            check_in_interval("mutation_rate", self.mutation_rate, 0.0, 1.0)
        check_non_negative("mutation_std", self.mutation_std)
        check_positive("init_std", self.init_std)
        check_positive_int("block_size", self.block_size)
        if self.reference_point is not None and len(self.reference_point) != self.n_objectives:
            raise ValueError(
                f"reference_point must have n_objectives = {self.n_objectives} values, got "
                f"{len(self.reference_point)}"
            )

    def front_fields(self, key: PRNGKey, x0: Float[Array, " dim"]) -> dict[str, Array]:
        """The :class:`FrontState` fields of a first state: the first population, its fitness
        ``-inf`` and its ranks 0."""
        n, m = self.pop_size, self.n_objectives
        return dict(
            population=self.first_population(key, x0),
            fitness=jnp.full((n, m), -jnp.inf, x0.dtype),
            rank=jnp.zeros(n, jnp.int32),
        )

    def next_population(
        self, key: PRNGKey, state: FrontState, parents: Int[Array, " pairs2"]
    ) -> Float[Array, "pop dim"]:
        """What ``ask`` returns: the children of ``parents`` (:meth:`offspring`), or the first
        population until a fitness has been told."""
        told = jnp.any(jnp.isfinite(state.fitness))
        return jnp.where(told, self.offspring(key, state.population, parents), state.population)

    def merged(
        self, state: FrontState, x: Float[Array, "pop dim"], fitness: Float[Array, "pop m"]
    ) -> tuple[Float[Array, "n2 dim"], Float[Array, "n2 m"], Int[Array, " n2"]]:
        """Parents and children together, ``[2 pop, ...]``: their genomes, objective vectors
        and Pareto fronts (:func:`~evolax.pareto.non_dominated_rank`). Before the first
        evaluation the parents' fitness is ``-inf``, so the children take their places."""
        objectives = jnp.concatenate([state.fitness, fitness])
        rank = non_dominated_rank(objectives, self.block_size)
        return jnp.concatenate([state.population, x]), objectives, rank

    def front_metrics(self, state: FrontState, key: PRNGKey) -> Metrics:
        """``front_size`` (members on the Pareto front), and ``hypervolume`` of the fitness
        above ``reference_point`` when one is set."""
        metrics = {"front_size": jnp.sum(state.pareto_front).astype(jnp.float32)}
        if self.reference_point is not None:
            reference = jnp.asarray(self.reference_point, state.fitness.dtype)
            metrics["hypervolume"] = hypervolume(state.fitness, reference, key)
        return metrics

    def bounds(
        self, like: Float[Array, " dim"]
    ) -> tuple[Float[Array, " dim"], Float[Array, " dim"]]:
        """The lower and upper bound of each variable of a genome ``like`` (``[D]``)."""
        dim = like.shape[0]
        out = []
        for name, bound, empty in (("lower", self.lower, -jnp.inf), ("upper", self.upper, jnp.inf)):
            if bound is not None and len(bound) not in (1, dim):
                raise ValueError(
                    f"{name} must have one value or one per variable ({dim}), got {len(bound)}"
                )
            value = empty if bound is None else jnp.asarray(bound, like.dtype)
            out.append(jnp.broadcast_to(jnp.asarray(value, like.dtype), (dim,)))
        return out[0], out[1]

    def first_population(self, key: PRNGKey, x0: Float[Array, " dim"]) -> Float[Array, "pop dim"]:
        """Uniform in the box where both bounds are finite, else ``x0 + init_std N(0, I)``
        (kept inside a one-sided bound)."""
        lower, upper = self.bounds(x0)
        uniform_key, normal_key = jax.random.split(key)
        shape = (self.pop_size, x0.shape[0])
        lower, upper = lower[None], upper[None]
        boxed = jnp.isfinite(upper - lower)
        safe_low, safe_high = jnp.where(boxed, lower, 0.0), jnp.where(boxed, upper, 1.0)
        uniform = jax.random.uniform(uniform_key, shape, x0.dtype, safe_low, safe_high)
        around = x0[None] + self.init_std * normal(normal_key, shape, x0)
        return jnp.clip(jnp.where(boxed, uniform, around), lower, upper)

    def offspring(
        self, key: PRNGKey, population: Float[Array, "n dim"], parents: Int[Array, " pairs2"]
    ) -> Float[Array, "pop dim"]:
        """``pop_size`` children of the ``population`` rows ``parents`` (``2 * ceil(pop / 2)``
        indices: the first half pairs with the second) by SBX, then mutation."""
        cross_key, mutate_key = jax.random.split(key)
        lower, upper = self.bounds(population[0])
        half = parents.shape[0] // 2
        first, second = population[parents[:half]], population[parents[half:]]
        one, two = simulated_binary_crossover(
            cross_key, first, second, lower, upper, self.crossover_eta, self.crossover_prob
        )
        children = jnp.concatenate([one, two])[: self.pop_size]
        bounded = all(
            bound is not None and np.all(np.isfinite(bound)) for bound in (self.lower, self.upper)
        )
        return polynomial_mutation(
            mutate_key,
            children,
            lower,
            upper,
            self.mutation_eta,
            self.mutation_rate,
            None if bounded else self.mutation_std,
        )

    def outputs(self, state):
        """The last population's objectives (``[pop, m]``) and which of them are
        non-dominated (``pareto_front.json``)."""
        front = {
            "objectives": np.asarray(state.fitness, np.float64).tolist(),
            "pareto_front": np.asarray(state.pareto_front).tolist(),
        }
        return {"pareto_front": Output(per_seed=front)}


def dominance_tournament(
    key: PRNGKey,
    fitness: Float[Array, "pop m"],
    n: int,
    crowding: Float[Array, " pop"] | None = None,
) -> Int[Array, " n"]:
    """``n`` winners of binary tournaments, as pymoo's: a contestant that dominates the other
    wins; else the larger ``crowding`` (when given); else a coin decides. The ``2 n``
    contestants are the first of concatenated random permutations of the members, so each
    takes part equally often.

    Args:
        key: PRNG key.
        fitness: ``[pop, m]``, maximised (non-finite rows lose to finite ones).
        n: the number of winners.
        crowding: each member's crowding distance, ``[pop]``, or ``None``.
    Returns:
        Indices into ``fitness``, ``int32[n]``.
    """
    perm_key, coin_key = jax.random.split(key)
    pop = fitness.shape[0]
    n_perms = -(-2 * n // pop)
    # each row of uniforms sorts into a random permutation
    contestants = jnp.argsort(uniform(perm_key, (n_perms, pop)), axis=1).reshape(-1)[: 2 * n]
    a, b = contestants[:n], contestants[n:]
    f = finite_rows(fitness)
    coin = jax.random.bernoulli(coin_key, 0.5, (n,))
    if crowding is not None:
        coin = jnp.where(crowding[a] == crowding[b], coin, crowding[a] > crowding[b])
    return jnp.where(
        dominates(f[a], f[b]), a, jnp.where(dominates(f[b], f[a]), b, jnp.where(coin, a, b))
    ).astype(jnp.int32)
