"""CoDE (Wang, Cai & Zhang, 2011, "Differential Evolution With Composite Trial Vector Generation
Strategies and Control Parameters"); its mutations, which SaDE (:mod:`evolax.algorithms.de.sade`)
uses too, are in :mod:`evolax.algorithms.de.common`."""

from __future__ import annotations

from typing import NamedTuple

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import (
    PopulationAlgorithm,
    PopulationState,
    check_min_pop_size,
)
from evolax.algorithms.de.common import (
    binomial_crossover,
    current_to_rand_1,
    distinct_indices,
    first_population,
    greedy_selection,
    rand_1,
    rand_2,
)
from evolax.algorithms.noise import unit_uniform
from evolax.types import PRNGKey
from evolax.validation import check_in_interval, check_positive


class CoDEDraws(NamedTuple):
    """The random numbers of one CoDE ``ask`` (see :meth:`CoDE.draws`); strategy ``s`` is
    0 = rand/1/bin, 1 = rand/2/bin, 2 = current-to-rand/1.

    Attributes:
        settings: the pool setting each strategy uses for each member, ``i32[3, NP]``.
        r_rand_1: ``r1 .. r3`` of rand/1/bin, ``i32[NP, 3]``.
        r_rand_2: ``r1 .. r5`` of rand/2/bin, ``i32[NP, 5]``.
        r_current: ``r1 .. r3`` of current-to-rand/1, ``i32[NP, 3]``.
        crossover_u: uniform ``[0, 1)`` crossover draws of strategies 0 and 1, ``[2, NP, D]``.
        j_rand: their coordinates always taken from the mutant, ``i32[2, NP]``.
        K: current-to-rand/1's uniform ``[0, 1)`` weights, ``[NP]``.
    """

    settings: Int[Array, "3 np"]
    r_rand_1: Int[Array, "np 3"]
    r_rand_2: Int[Array, "np 5"]
    r_current: Int[Array, "np 3"]
    crossover_u: Float[Array, "2 np dim"]
    j_rand: Int[Array, "2 np"]
    K: Float[Array, " np"]


@chex.dataclass(frozen=True, kw_only=True)
class CoDEState(PopulationState):
    """CoDE's state: ``population`` holds the ``NP = pop_size / 3`` members (``[NP, D]``) and
    ``fitness`` their fitness (``[NP]``, ``-inf`` before the first ``tell``)."""


class CoDE(PopulationAlgorithm[CoDEState]):
    """CoDE (Wang, Cai & Zhang, 2011, "Differential Evolution With Composite Trial Vector
    Generation Strategies and Control Parameters", IEEE TEVC 15(1)), maximising.

    Each ``ask`` builds three trials per member ``x_i`` (``NP`` members, ``pop_size = 3 NP``
    genomes: rows ``[s NP, (s + 1) NP)`` come from strategy ``s``): rand/1/bin, rand/2/bin
    (``v = x_r1 + F (x_r2 - x_r3) + F (x_r4 - x_r5)``) and current-to-rand/1
    (``u = x_i + K (x_r1 - x_i) + F (x_r2 - x_r3)``, ``K ~ U[0, 1]``, no crossover), each
    strategy with a setting ``(F, CR)`` drawn uniformly from the pool, per member; the
    ``r`` are distinct and differ from ``i``, drawn anew for each strategy. ``tell`` keeps the
    fittest of the three trials (the first on ties) in place of ``x_i`` if its fitness is
    ``>=`` the member's (:func:`~evolax.algorithms.de.common.greedy_selection`).

    The initial population is ``x0 + init_std * N(0, I)`` (the paper samples the search box);
    until it has been told, ``ask`` returns it three times (each member evaluated three
    times, once; ``tell`` keeps its best value). The paper's bound repair is not applied
    (genomes are unbounded). Defaults are the paper's pool ``[F = 1.0, CR = 0.1]``,
    ``[1.0, 0.9]``, ``[0.8, 0.2]`` (it uses ``NP = 30``, i.e. ``pop_size = 90``). The
    authors' MATLAB code differs from the paper in two places that are not followed here:
    its rand/2 weights ``x_r2 - x_r3`` by ``U[0, 1]`` instead of ``F``, and its
    current-to-rand/1 draws ``r1 .. r3`` with replacement, ``i`` allowed.

    Args:
        pop_size: the genomes per ``ask``, ``3 NP``: a multiple of 3, at least 18 (rand/2
            needs five members besides ``i``).
        pool_differential_weights: the pool's ``F`` values, positive.
        pool_crossover_rates: the pool's ``CR`` values (paired with
            ``pool_differential_weights``), in ``[0, 1]``.
        init_std: spread of the initial population around ``x0``, positive.
    """

    pop_size: int = eqx.field(static=True)
    pool_differential_weights: tuple[float, ...] = eqx.field(static=True, default=(1.0, 1.0, 0.8))
    pool_crossover_rates: tuple[float, ...] = eqx.field(static=True, default=(0.1, 0.9, 0.2))
    init_std: float = 1.0

    def __check_init__(self):
        if isinstance(self.pop_size, int) and self.pop_size % 3:
            low = self.pop_size - self.pop_size % 3
            near = " or ".join(str(n) for n in sorted({max(low, 18), max(low + 3, 18)}))
            raise ValueError(
                f"pop_size must be a multiple of 3 for CoDE (three trials per member), got "
                f"{self.pop_size} (use {near})"
            )
        check_min_pop_size(
            self.pop_size, 18, "for CoDE (NP = pop_size / 3 members; rand/2 needs five others)"
        )
        F, CR = self.pool_differential_weights, self.pool_crossover_rates
        if not F or len(F) != len(CR):
            raise ValueError(
                f"pool_differential_weights and pool_crossover_rates must be non-empty and "
                f"paired, got {len(F)} and {len(CR)} values"
            )
        for k, (weight, rate) in enumerate(zip(F, CR, strict=True)):
            check_positive(f"pool_differential_weights[{k}]", weight)
            check_in_interval(f"pool_crossover_rates[{k}]", rate, 0, 1)
        check_positive("init_std", self.init_std)

    @property
    def members(self) -> int:
        """``NP``, the population size (``pop_size / 3``)."""
        return self.pop_size // 3

    def draws(self, key: PRNGKey, like: Float[Array, " dim"]) -> CoDEDraws:
        """The random numbers one :meth:`ask` uses for genomes like ``like`` (``[D]``), all
        from one ``jax.random.bits`` call (columns: ``2 D`` crossover draws, 11 indices, 2
        ``j_rand``, ``K``, 3 pool settings)."""
        n, dim = self.members, like.shape[0]
        bits = jax.random.bits(key, (n, 2 * dim + 17), jnp.uint32)
        u = unit_uniform(bits).astype(like.dtype)
        column = 2 * dim
        pool = jnp.uint32(len(self.pool_differential_weights))
        return CoDEDraws(
            settings=(bits[:, column + 14 :] % pool).T.astype(jnp.int32),
            r_rand_1=distinct_indices(bits[:, column : column + 3]),
            r_rand_2=distinct_indices(bits[:, column + 3 : column + 8]),
            r_current=distinct_indices(bits[:, column + 8 : column + 11]),
            crossover_u=jnp.stack([u[:, :dim], u[:, dim:column]]),
            j_rand=(bits[:, column + 11 : column + 13] % jnp.uint32(dim)).T.astype(jnp.int32),
            K=u[:, column + 13],
        )

    def _init(self, key, x0):
        return CoDEState(**first_population(key, x0, self.members, self.init_std))

    def _ask(self, key, state):
        x = state.population
        d = self.draws(key, x[0])
        F = jnp.asarray(self.pool_differential_weights, x.dtype)[d.settings]
        CR = jnp.asarray(self.pool_crossover_rates, x.dtype)[d.settings]
        trials = jnp.concatenate(
            [
                binomial_crossover(
                    rand_1(x, d.r_rand_1, F[0]), x, d.crossover_u[0], d.j_rand[0], CR[0]
                ),
                binomial_crossover(
                    rand_2(x, d.r_rand_2, F[1]), x, d.crossover_u[1], d.j_rand[1], CR[1]
                ),
                current_to_rand_1(x, d.r_current, d.K, F[2]),
            ]
        )
        told = jnp.any(state.fitness > -jnp.inf)
        return jnp.where(told, trials, jnp.tile(x, (3, 1))), state

    def _tell(self, key, state, x, fitness):
        del key
        n = self.members
        fitness = fitness.reshape(3, n)
        winner = jnp.argmax(fitness, axis=0)  # the first of equal trials
        members = jnp.arange(n)
        best = x.reshape(3, n, -1)[winner, members]
        population, member_fitness, accept = greedy_selection(
            state.population, state.fitness, best, fitness[winner, members]
        )
        metrics = {"acceptance_rate": jnp.mean(accept.astype(jnp.float32))}
        for s, name in enumerate(("rand_1_bin", "rand_2_bin", "current_to_rand_1")):
            won = accept & (winner == s)
            metrics[f"share_{name}"] = jnp.mean(won.astype(jnp.float32))
        return state.replace(population=population, fitness=member_fitness), metrics
