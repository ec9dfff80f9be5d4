"""NSGA-II (Deb, Pratap, Agarwal & Meyarivan, 2002)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.algorithms.base import PopulationAlgorithm
from evolax.algorithms.multiobjective.common import FrontState, RealCoded, dominance_tournament
from evolax.pareto import crowding_distance


@chex.dataclass(frozen=True, kw_only=True)
class NSGA2State(FrontState):
    """A :class:`~evolax.algorithms.multiobjective.common.FrontState` with crowding distances.

    Attributes:
        crowding: each member's crowding distance in its front, ``[pop]`` (a front's ends:
            the largest finite float).
    """

    crowding: Float[Array, " pop"]


class NSGA2(RealCoded, PopulationAlgorithm[NSGA2State]):
    """NSGA-II (Deb et al., 2002): elitist non-dominated sorting with crowding distance.

    ``ask`` picks each parent by pymoo's binary tournament (a member that dominates the other
    wins, then the larger crowding distance, then a coin;
    :func:`~evolax.algorithms.multiobjective.common.dominance_tournament`) and makes ``pop_size``
    children by simulated binary crossover and mutation
    (:class:`~evolax.algorithms.multiobjective.common.RealCoded`). ``tell`` sorts parents and
    children together into fronts (:func:`~evolax.pareto.non_dominated_rank`) and keeps the
    ``pop_size`` best by front, then by crowding distance. Before the first ``tell``, ``ask``
    returns the first population. The fitness is ``[pop, n_objectives]``, every objective
    maximised; :meth:`best` is the genome with the largest sum of objectives ever told, and
    :attr:`NSGA2State.pareto_front` marks the non-dominated members.
    """

    def _init(self, key, x0):
        return NSGA2State(**self.front_fields(key, x0), crowding=jnp.zeros(self.pop_size, x0.dtype))

    def _ask(self, key, state):
        pick_key, child_key = jax.random.split(key)
        n = self.pop_size
        parents = dominance_tournament(pick_key, state.fitness, 2 * -(-n // 2), state.crowding)
        return self.next_population(child_key, state, parents), state

    def _tell(self, key, state, x, fitness):
        population, objectives, rank = self.merged(state, x, fitness)
        crowding = crowding_distance(objectives, rank)
        keep = jnp.lexsort((-crowding, rank))[: self.pop_size]
        new = state.replace(
            population=population[keep],
            fitness=objectives[keep],
            rank=rank[keep],
            crowding=jnp.minimum(crowding[keep], jnp.finfo(crowding.dtype).max),
        )
        return new, self.front_metrics(new, key)
