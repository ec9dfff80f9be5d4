"""NSGA-II (Deb, Pratap, Agarwal & Meyarivan, 2002)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from evolax.algorithms.base import PopulationAlgorithm, PopulationState
from evolax.algorithms.multiobjective import RealCoded, dominance_tournament
from evolax.pareto import crowding_distance, non_dominated_rank


@chex.dataclass(frozen=True, kw_only=True)
class NSGA2State(PopulationState):
    """The surviving population (``population``, ``[pop, D]``) with its objective vectors
    (``fitness``, ``[pop, m]``, ``-inf`` before the first evaluation).

    Attributes:
        rank: each member's Pareto front among parents and children, ``int32[pop]`` (0: not
            dominated).
        crowding: its crowding distance in that front, ``[pop]`` (a front's ends: the largest
            finite float).
    """

    rank: Int[Array, " pop"]
    crowding: Float[Array, " pop"]

    @property
    def pareto_front(self) -> Bool[Array, " pop"]:
        """Which members no other member dominates (those with a finite fitness)."""
        return (self.rank == 0) & jnp.all(jnp.isfinite(self.fitness), axis=-1)


class NSGA2(RealCoded, PopulationAlgorithm[NSGA2State]):
    """NSGA-II (Deb et al., 2002): elitist non-dominated sorting with crowding distance.

    ``ask`` picks each parent by pymoo's binary tournament (a member that dominates the other
    wins, then the larger crowding distance, then a coin;
    :func:`~evolax.algorithms.multiobjective.dominance_tournament`) and makes ``pop_size``
    children by simulated binary crossover and mutation
    (:class:`~evolax.algorithms.multiobjective.RealCoded`). ``tell`` sorts parents and
    children together into fronts (:func:`~evolax.pareto.non_dominated_rank`) and keeps the
    ``pop_size`` best by front, then by crowding distance. Before the first ``tell``, ``ask``
    returns the first population. The fitness is ``[pop, n_objectives]``, every objective
    maximised; :meth:`best` is the genome with the largest sum of objectives ever told, and
    :attr:`NSGA2State.pareto_front` marks the non-dominated members.
    """

    def _init(self, key, x0):
        n, m = self.pop_size, self.n_objectives
        return NSGA2State(
            population=self.first_population(key, x0),
            fitness=jnp.full((n, m), -jnp.inf, x0.dtype),
            rank=jnp.zeros(n, jnp.int32),
            crowding=jnp.zeros(n, x0.dtype),
        )

    def _ask(self, key, state):
        pick_key, child_key = jax.random.split(key)
        n = self.pop_size
        parents = dominance_tournament(pick_key, state.fitness, 2 * -(-n // 2), state.crowding)
        children = self.offspring(child_key, state.population, parents)
        told = jnp.any(jnp.isfinite(state.fitness))
        return jnp.where(told, children, state.population), state

    def _tell(self, key, state, x, fitness):
        told = jnp.any(jnp.isfinite(state.fitness))
        # before the first evaluation the parents are placeholders: the children replace them
        parents_fitness = jnp.where(told, state.fitness, -jnp.inf)
        population = jnp.concatenate([state.population, x])
        objectives = jnp.concatenate([parents_fitness, fitness])
        rank = non_dominated_rank(objectives, self.block_size)
        crowding = crowding_distance(objectives, rank)
        keep = jnp.lexsort((-crowding, rank))[: self.pop_size]
        new = state.replace(
            population=population[keep],
            fitness=objectives[keep],
            rank=rank[keep],
            crowding=jnp.minimum(crowding[keep], jnp.finfo(crowding.dtype).max),
        )
        metrics = {"front_size": jnp.sum(new.pareto_front).astype(jnp.float32)}
        metrics |= self.hypervolume_metric(new.fitness, key)
        return new, metrics
