"""SaDE (Qin, Huang & Suganthan, 2009, "Differential Evolution Algorithm With Strategy Adaptation
for Global Numerical Optimization")."""

from __future__ import annotations

from typing import NamedTuple

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jax.scipy.special import erf, erfinv
from jaxtyping import Array, Bool, Float, Int, UInt32

from evolax.algorithms.base import (
    PopulationAlgorithm,
    PopulationState,
    check_min_pop_size,
    normal,
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
from evolax.algorithms.shaping import sanitize_fitness
from evolax.types import PRNGKey
from evolax.validation import check_non_negative, check_positive, check_positive_int

STRATEGIES = ("rand_1_bin", "rand_to_best_2_bin", "rand_2_bin", "current_to_rand_1")
"""SaDE's four trial vector generation strategies, in the paper's order (``k = 0 .. 3``)."""

F_MEAN, F_STD = 0.5, 0.3
"""``F_i ~ N(0.5, 0.3)`` (the paper's, neither truncated nor adapted)."""

CR_STD = 0.1
"""The standard deviation of ``CR ~ N(CRm_k, 0.1)``."""


class SaDEDraws(NamedTuple):
    """The random numbers of one SaDE ``ask`` (see :meth:`SaDE.draws`).

    Attributes:
        crossover_u: uniform ``[0, 1)`` crossover draws, ``[NP, D]``.
        j_rand: the coordinate always taken from the mutant, ``i32[NP]``.
        r: ``r1 .. r5``, distinct and different from ``i``, ``i32[NP, 5]``.
        cr_u: uniform ``[0, 1)``, the truncated-normal ``CR_i`` (:func:`truncated_normal`),
            ``[NP]``.
        K: current-to-rand/1's uniform ``[0, 1)`` weights, ``[NP]``.
        order_bits: random bits ordering the sampled strategies over the members, ``u32[NP]``.
        sus_u: the stochastic-universal-sampling offset, uniform ``[0, 1)``, ``[]``.
        empty_u: ``CRm_k`` of a strategy with no successful ``CR`` in memory, uniform, ``[4]``.
        F: ``F_i ~ N(0.5, 0.3)``, ``[NP]``.
    """

    crossover_u: Float[Array, "np dim"]
    j_rand: Int[Array, " np"]
    r: Int[Array, "np 5"]
    cr_u: Float[Array, " np"]
    K: Float[Array, " np"]
    order_bits: UInt32[Array, " np"]
    sus_u: Float[Array, ""]
    empty_u: Float[Array, " 4"]
    F: Float[Array, " np"]


@chex.dataclass(frozen=True, kw_only=True)
class SaDEState(PopulationState):
    """SaDE's state: the population, the strategy and ``CR`` of each member's last trial and
    the learning-period memories (ring buffers over the last ``LP`` generations).

    Attributes:
        strategies: the strategy ``k_i`` of each member's last trial, ``i32[NP]``.
        crossover_rates: its ``CR_i``, ``[NP]``.
        probabilities: the strategy probabilities ``p_k`` of the last ``ask``, ``[4]``.
        crossover_rate_means: the ``CRm_k`` of the last ``ask``, ``[4]``.
        success_memory: ``ns_k`` per generation, ``i32[LP, 4]``.
        failure_memory: ``nf_k`` per generation, ``i32[LP, 4]``.
        cr_memory: each generation's ``CR_i``, ``[LP, NP]``.
        cr_memory_strategy: the strategy whose trial succeeded with it, or -1 (an unsuccessful
            trial, or an unused slot), ``i32[LP, NP]``.
        learning_generations: the generations recorded so far; the next writes slot
            ``learning_generations mod LP``, ``i32[]``.
    """

    strategies: Int[Array, " np"]
    crossover_rates: Float[Array, " np"]
    probabilities: Float[Array, " 4"]
    crossover_rate_means: Float[Array, " 4"]
    success_memory: Int[Array, "lp 4"]
    failure_memory: Int[Array, "lp 4"]
    cr_memory: Float[Array, "lp np"]
    cr_memory_strategy: Int[Array, "lp np"]
    learning_generations: Int[Array, ""]


def truncated_normal(
    mean: Float[Array, "..."], u: Float[Array, "..."], std: float = CR_STD
) -> Float[Array, "..."]:
    """``N(mean, std)`` regenerated until it lies in ``[0, 1]`` (SaDE's ``CR``), from uniform
    ``[0, 1)`` draws ``u`` in one step: the inverse CDF of the normal restricted to
    ``[0, 1]``, ``mean + std sqrt(2) erfinv(a + u (b - a))`` with ``a, b`` the ``erf`` of the
    ends' standardised distances (the same distribution, no rejection loop)."""
    low = erf((0.0 - mean) / (std * jnp.sqrt(2.0)))
    high = erf((1.0 - mean) / (std * jnp.sqrt(2.0)))
    z = jnp.sqrt(2.0) * erfinv(low + u * (high - low))
    return jnp.clip(mean + std * z, 0.0, 1.0)


def rand_to_best_2(
    population: Float[Array, "pop dim"],
    r: Int[Array, "pop n"],
    F: Float[Array, " pop"],
    best: Float[Array, " dim"],
) -> Float[Array, "pop dim"]:
    """SaDE's DE/rand-to-best/2 mutants
    ``v_i = x_i + F_i (x_best - x_i) + F_i (x_r1 - x_r2) + F_i (x_r3 - x_r4)``."""
    x = population
    step = best[None] - x + x[r[:, 0]] - x[r[:, 1]] + x[r[:, 2]] - x[r[:, 3]]
    return x + F[:, None] * step


def strategy_probabilities(
    success_memory: Int[Array, "lp 4"], failure_memory: Int[Array, "lp 4"], epsilon, dtype
) -> Float[Array, " 4"]:
    """Eq. 14: ``S_k = sum ns_k / (sum ns_k + sum nf_k) + epsilon`` over the memory
    (``epsilon`` alone for a strategy that made no trial in it), ``p_k = S_k / sum S``."""
    ns = jnp.sum(success_memory, axis=0).astype(dtype)
    tried = ns + jnp.sum(failure_memory, axis=0).astype(dtype)
    S = ns / jnp.where(tried > 0, tried, 1.0) + epsilon
    return S / jnp.sum(S)


def counts(one_hot: Bool[Array, "np 4"], outcome: Bool[Array, " np"]) -> Int[Array, " 4"]:
    """The number of members of each strategy with ``outcome``, ``i32[4]``."""
    return jnp.sum(one_hot & outcome[:, None], axis=0, dtype=jnp.int32)


def memory_medians(
    cr_memory: Float[Array, "lp np"], cr_memory_strategy: Int[Array, "lp np"]
) -> tuple[Float[Array, " 4"], Bool[Array, " 4"]]:
    """The median of each strategy's successful ``CR`` in memory (the mean of the two middle
    values for an even count) and whether it has any: one sort by (strategy, ``CR``), in
    which strategy ``k``'s values are the ``n_k`` after those of the strategies before it."""
    owner, values = jax.lax.sort((cr_memory_strategy.ravel(), cr_memory.ravel()), num_keys=2)
    n = jnp.sum(owner[None] == jnp.arange(len(STRATEGIES))[:, None], axis=1)
    start = jnp.sum(owner < 0) + jnp.cumsum(n) - n
    low = values[start + jnp.maximum(n - 1, 0) // 2]
    high = values[jnp.minimum(start + n // 2, values.shape[0] - 1)]
    return jnp.where(n > 0, (low + high) / 2, 0.0), n > 0


def stochastic_universal_sampling(
    probabilities: Float[Array, " k"],
    offset: Float[Array, ""],
    order_bits: UInt32[Array, " n"],
    n: int,
) -> Int[Array, " n"]:
    """``n`` strategies by stochastic universal sampling (Baker, 1987): pointers
    ``(offset + j / n) mod 1``, sorted, each taking the strategy whose cumulative-probability
    interval holds it (strategy ``k`` is drawn ``floor`` or ``ceil`` of ``n p_k`` times); the
    sampled list is then dealt to the members in a random order (by ``order_bits``)."""
    pointers = jnp.sort(jnp.mod(offset + jnp.arange(n, dtype=probabilities.dtype) / n, 1.0))
    cumulative = jnp.cumsum(probabilities)
    drawn = jnp.sum(pointers[:, None] >= cumulative[None, :], axis=1)
    drawn = jnp.minimum(drawn, probabilities.shape[0] - 1)  # a last sum rounded below 1
    return drawn[jnp.argsort(order_bits)].astype(jnp.int32)


class SaDE(PopulationAlgorithm[SaDEState]):
    """SaDE (Qin, Huang & Suganthan, 2009, "Differential Evolution Algorithm With Strategy
    Adaptation for Global Numerical Optimization", IEEE TEVC 13(2)), maximising.

    Each ``ask`` deals the four strategies (:data:`STRATEGIES`: rand/1/bin,
    rand-to-best/2/bin, rand/2/bin, current-to-rand/1) to the ``NP`` members by stochastic
    universal sampling with probabilities ``p_k`` (:func:`stochastic_universal_sampling`),
    draws ``F_i ~ N(0.5, 0.3)`` and ``CR_i ~ N(CRm_k, 0.1)`` regenerated until in
    ``[0, 1]`` (one step, :func:`truncated_normal`), and builds one trial per member
    (``r1 .. r5`` distinct and different from ``i``; ``x_best`` the fittest member). ``tell``
    keeps trial ``i`` if its fitness is ``>=`` its parent's: a success (``CR_i`` joins the
    memory of its strategy), else a failure, counted per strategy per generation in ring
    buffers of the last ``LP`` generations. For the first ``LP`` generations ``p_k = 1/4`` and
    ``CRm_k = 0.5``; afterwards ``p_k`` follows eq. 14 (success rate over the memory plus
    ``epsilon``, normalised) and ``CRm_k`` is the median of strategy ``k``'s successful ``CR``
    in the memory, or, when there is none, uniform in ``[0, 1)`` (the authors' MATLAB code;
    the paper does not say).

    The initial population is ``x0 + init_std * N(0, I)`` (the paper samples the search box);
    the first ``ask`` returns it unchanged so it is evaluated first, and that evaluation is not
    a generation of the memory, nor is a trial of a member whose fitness is not finite. No
    bound repair. Defaults are the paper's (``LP = 50``, ``epsilon = 0.01``; it uses
    ``NP = 50``).

    Args:
        pop_size: ``NP``, at least 6 (rand/2 needs five members besides ``i``).
        learning_period: ``LP``, the generations the memories cover, positive.
        epsilon: added to each strategy's success rate, ``>= 0``.
        init_std: spread of the initial population around ``x0``, positive.
    """

    pop_size: int = eqx.field(static=True)
    learning_period: int = eqx.field(static=True, default=50)
    epsilon: float = 0.01
    init_std: float = 1.0

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 6, "for SaDE (rand/2 needs five members besides i)")
        check_positive_int("learning_period", self.learning_period)
        check_non_negative("epsilon", self.epsilon)
        check_positive("init_std", self.init_std)

    def draws(self, key: PRNGKey, like: Float[Array, " dim"]) -> SaDEDraws:
        """The random numbers one :meth:`ask` uses for genomes like ``like`` (``[D]``): one
        ``jax.random.bits`` call for the uniforms and indices (``D + 11`` columns; the scalar
        draws are the first rows of the last two), one :func:`normal` for ``F``."""
        n, dim = self.pop_size, like.shape[0]
        bits_key, normal_key = jax.random.split(key)
        bits = jax.random.bits(bits_key, (n, dim + 11), jnp.uint32)
        u = unit_uniform(bits).astype(like.dtype)
        return SaDEDraws(
            crossover_u=u[:, :dim],
            j_rand=(bits[:, dim] % jnp.uint32(dim)).astype(jnp.int32),
            r=distinct_indices(bits[:, dim + 1 : dim + 6]),
            cr_u=u[:, dim + 6],
            K=u[:, dim + 7],
            order_bits=bits[:, dim + 8],
            sus_u=u[0, dim + 9],
            empty_u=u[: len(STRATEGIES), dim + 10],
            F=F_MEAN + F_STD * normal(normal_key, (n,), like),
        )

    def _init(self, key, x0):
        n, lp, k = self.pop_size, self.learning_period, len(STRATEGIES)
        return SaDEState(
            **first_population(key, x0, n, self.init_std),
            strategies=jnp.zeros(n, jnp.int32),
            crossover_rates=jnp.full(n, 0.5, x0.dtype),
            probabilities=jnp.full(k, 1.0 / k, x0.dtype),
            crossover_rate_means=jnp.full(k, 0.5, x0.dtype),
            success_memory=jnp.zeros((lp, k), jnp.int32),
            failure_memory=jnp.zeros((lp, k), jnp.int32),
            cr_memory=jnp.zeros((lp, n), x0.dtype),
            cr_memory_strategy=jnp.full((lp, n), -1, jnp.int32),
            learning_generations=jnp.zeros([], jnp.int32),
        )

    def _adaptation(self, state, d):
        """``(p_k, CRm_k)`` for the next trials: the initial ones during the first ``LP``
        generations, then those learnt from the memories."""
        dtype = state.fitness.dtype
        learnt = state.learning_generations >= self.learning_period
        p = strategy_probabilities(state.success_memory, state.failure_memory, self.epsilon, dtype)
        medians, known = memory_medians(state.cr_memory, state.cr_memory_strategy)
        crm = jnp.where(known, medians, d.empty_u)
        k = len(STRATEGIES)
        p = jnp.where(learnt, p, jnp.full(k, 1.0 / k, dtype))
        crm = jnp.where(learnt, crm, jnp.full(k, 0.5, dtype))
        return p.astype(dtype), crm.astype(dtype)

    def _ask(self, key, state):
        x = state.population
        d = self.draws(key, x[0])
        p, crm = self._adaptation(state, d)
        k = stochastic_universal_sampling(p, d.sus_u, d.order_bits, self.pop_size)
        CR = truncated_normal(crm[k], d.cr_u).astype(x.dtype)
        best = x[jnp.argmax(sanitize_fitness(state.fitness))]
        mutants = jnp.stack(
            [
                rand_1(x, d.r, d.F),
                rand_to_best_2(x, d.r, d.F, best),
                rand_2(x, d.r, d.F),
            ]
        )
        crossed = binomial_crossover(
            mutants[jnp.minimum(k, 2), jnp.arange(self.pop_size)], x, d.crossover_u, d.j_rand, CR
        )
        trials = jnp.where((k == 3)[:, None], current_to_rand_1(x, d.r, d.K, d.F), crossed)
        told = jnp.any(state.fitness > -jnp.inf)
        state = state.replace(
            strategies=k, crossover_rates=CR, probabilities=p, crossover_rate_means=crm
        )
        return jnp.where(told, trials, x), state

    def _tell(self, key, state, x, fitness):
        del key
        counted = jnp.isfinite(state.fitness)  # members with a finite parent
        population, member_fitness, accept = greedy_selection(
            state.population, state.fitness, x, fitness
        )
        success, failure = counted & accept, counted & ~accept
        one_hot = state.strategies[:, None] == jnp.arange(len(STRATEGIES))[None]
        record = jnp.any(counted)  # not the first evaluation of the population
        slot = state.learning_generations % self.learning_period

        def write(memory, row):
            return memory.at[slot].set(jnp.where(record, row, memory[slot]))

        state = state.replace(
            population=population,
            fitness=member_fitness,
            success_memory=write(state.success_memory, counts(one_hot, success)),
            failure_memory=write(state.failure_memory, counts(one_hot, failure)),
            cr_memory=write(state.cr_memory, jnp.where(success, state.crossover_rates, 0.0)),
            cr_memory_strategy=write(
                state.cr_memory_strategy, jnp.where(success, state.strategies, -1)
            ),
            learning_generations=state.learning_generations + record.astype(jnp.int32),
        )
        metrics = {
            "acceptance_rate": jnp.mean(accept.astype(jnp.float32)),
            "success_rate": jnp.sum(success) / jnp.maximum(jnp.sum(counted), 1),
        }
        for k, name in enumerate(STRATEGIES):
            metrics[f"probability_{name}"] = state.probabilities[k]
            metrics[f"crm_{name}"] = state.crossover_rate_means[k]
        return state, metrics
