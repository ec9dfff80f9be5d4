"""What JADE (:mod:`evolax.algorithms.de.jade`) and SHADE (:mod:`evolax.algorithms.de.shade`)
share: the draws of an ``ask``, the truncated Cauchy ``F`` and clipped normal ``CR``,
DE/current-to-pbest/1/bin trials with an archive of replaced parents, the success means, and
the base :class:`AdaptiveDE` (Zhang & Sanderson, 2009; Tanabe & Fukunaga, 2013)."""

from __future__ import annotations

from typing import NamedTuple

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, UInt32

from evolax.algorithms.base import HIGHEST, PopulationAlgorithm, PopulationState, normal
from evolax.algorithms.de.common import (
    binomial_crossover,
    distinct_indices,
    first_population,
    greedy_selection,
)
from evolax.algorithms.noise import unit_uniform
from evolax.types import PRNGKey

SCALE = 0.1
"""The scale of the Cauchy ``F`` and the standard deviation of the normal ``CR`` (both papers)."""


class AdaptiveDraws(NamedTuple):
    """The random numbers of one generation of JADE/SHADE trials (see :func:`adaptive_draws`).

    Attributes:
        crossover_u: uniform ``[0, 1)`` crossover draws, ``[pop, D]``.
        j_rand: the coordinate always taken from the mutant, ``i32[pop]``.
        r1: a member other than ``i``, ``i32[pop]``.
        r2_bits: random bits choosing ``r2`` in ``P u A`` (:func:`second_index`), ``u32[pop]``.
        pbest_u: uniform ``[0, 1)``, picks one of the top ``100 p %`` members, ``[pop]``.
        f_u: uniform ``[0, 1)``, the truncated-Cauchy ``F`` (:func:`truncated_cauchy`), ``[pop]``.
        cr_z: standard normal, the ``CR`` draws, ``[pop]``.
        extra_u: ``n_extra`` further uniform ``[0, 1)`` draws per member, ``[pop, n_extra]``.
    """

    crossover_u: Float[Array, "pop dim"]
    j_rand: Int[Array, " pop"]
    r1: Int[Array, " pop"]
    r2_bits: UInt32[Array, " pop"]
    pbest_u: Float[Array, " pop"]
    f_u: Float[Array, " pop"]
    cr_z: Float[Array, " pop"]
    extra_u: Float[Array, "pop n_extra"]


def adaptive_draws(
    key: PRNGKey, pop: int, like: Float[Array, " dim"], n_extra: int = 0
) -> AdaptiveDraws:
    """All random numbers one JADE/SHADE ``ask`` uses for flat genomes like ``like``: one
    ``jax.random.bits`` call for the uniforms and indices, one :func:`normal` for ``CR``."""
    dim = like.shape[0]
    bits_key, normal_key = jax.random.split(key)
    bits = jax.random.bits(bits_key, (pop, dim + 5 + n_extra), jnp.uint32)
    u = unit_uniform(bits).astype(like.dtype)
    return AdaptiveDraws(
        crossover_u=u[:, :dim],
        j_rand=(bits[:, dim] % jnp.uint32(dim)).astype(jnp.int32),
        r1=distinct_indices(bits[:, dim + 1 : dim + 2])[:, 0],
        r2_bits=bits[:, dim + 2],
        pbest_u=u[:, dim + 3],
        f_u=u[:, dim + 4],
        cr_z=normal(normal_key, (pop,), like),
        extra_u=u[:, dim + 5 :],
    )


def truncated_cauchy(location: Float[Array, "..."], u: Float[Array, "..."]) -> Float[Array, "..."]:
    """``F ~ Cauchy(location, 0.1)`` regenerated while ``F <= 0`` and set to 1 when ``F >= 1``
    (JADE, section III-C.2), from uniform ``[0, 1)`` draws ``u``, without a rejection loop.

    Regenerating until ``F > 0`` samples the Cauchy conditioned on ``F > 0``; its inverse CDF
    is ``location + 0.1 tan(theta)`` with ``theta`` uniform in ``(atan(-location / 0.1),
    pi / 2]``: one draw, the same distribution. Angles past ``atan((1 - location) / 0.1)``
    give 1 (the truncation), so ``tan`` is never taken near ``pi / 2``; the result lies in
    ``(0, 1]`` (``theta`` at its lower end can round to ``F = 0``, a probability ~1e-7 event).
    """
    low = jnp.arctan(-location / SCALE)
    top = jnp.arctan((1.0 - location) / SCALE)
    theta = low + (1.0 - u) * (jnp.pi / 2 - low)
    capped = jnp.minimum(theta, top)  # the tan of the first branch stays finite
    return jnp.where(theta >= top, 1.0, jnp.clip(location + SCALE * jnp.tan(capped), 0.0, 1.0))


def clipped_normal(location: Float[Array, "..."], z: Float[Array, "..."]) -> Float[Array, "..."]:
    """``CR ~ N(location, 0.1)`` clipped to ``[0, 1]`` (JADE, section III-C.1), from standard
    normal draws ``z``."""
    return jnp.clip(location + SCALE * z, 0.0, 1.0)


def second_index(
    r2_bits: UInt32[Array, " pop"], r1: Int[Array, " pop"], union_size: Int[Array, ""]
) -> Int[Array, " pop"]:
    """``r2`` uniform over ``{0 .. union_size - 1} \\ {i, r1}`` (the population's rows come
    first in ``P u A``, so ``i`` and ``r1`` are excluded by stepping over them in order)."""
    i = jnp.arange(r1.shape[0], dtype=jnp.uint32)
    r1 = r1.astype(jnp.uint32)
    low, high = jnp.minimum(i, r1), jnp.maximum(i, r1)
    u = r2_bits % (union_size.astype(jnp.uint32) - 2)
    u = u + (u >= low).astype(jnp.uint32)
    u = u + (u >= high).astype(jnp.uint32)
    return u.astype(jnp.int32)


def pbest_count(p: float | Float[Array, "..."], pop: int) -> Int[Array, "..."]:
    """The number of top members ``x_pbest`` is drawn from: ``ceil(p NP)``, within ``[1, NP]``."""
    return jnp.clip(jnp.ceil(p * pop), 1, pop).astype(jnp.int32)


def current_to_pbest_trials(
    population: Float[Array, "pop dim"],
    fitness: Float[Array, " pop"],
    archive: Float[Array, "arc dim"],
    archive_count: Int[Array, ""],
    draws: AdaptiveDraws,
    n_best: Int[Array, " pop"],
    F: Float[Array, " pop"],
    CR: Float[Array, " pop"],
) -> Float[Array, "pop dim"]:
    """JADE's DE/current-to-pbest/1/bin trials (Zhang & Sanderson, 2009, eq. 7 and the
    binomial crossover): ``v_i = x_i + F_i (x_pbest - x_i) + F_i (x_r1 - x~_r2)``, ``x_pbest``
    uniform among the ``n_best[i]`` fittest members (ties by index), ``x_r1`` from the
    population (``r1 != i``), ``x~_r2`` from the population and the first ``archive_count``
    archive rows (``r2 != i, r1``); ``u_ij = v_ij`` if ``crossover_u_ij < CR_i`` or
    ``j == j_rand_i``, else ``x_ij``. No bound handling (evolax genomes are unbounded)."""
    pop = population.shape[0]
    ranks = jnp.argsort(-fitness, stable=True)
    slot = jnp.minimum(jnp.floor(draws.pbest_u * n_best).astype(jnp.int32), n_best - 1)
    pbest = population[ranks[slot]]
    union = jnp.concatenate([population, archive], axis=0)
    r2 = second_index(draws.r2_bits, draws.r1, pop + archive_count)
    mutant = population + F[:, None] * (pbest - population + population[draws.r1] - union[r2])
    return binomial_crossover(mutant, population, draws.crossover_u, draws.j_rand, CR)


def update_archive(
    archive: Float[Array, "arc dim"],
    count: Int[Array, ""],
    parents: Float[Array, "pop dim"],
    added: Bool[Array, " pop"],
    bits: UInt32[Array, " arc_plus_pop"],
) -> tuple[Float[Array, "arc dim"], Int[Array, ""]]:
    """Add the ``added`` parents to the archive, then, if it holds more than its capacity
    ``arc``, remove entries uniformly at random down to ``arc`` (JADE, section III-D): keeps
    the ``arc`` valid entries with the largest random priorities ``bits`` (one per old slot,
    then one per parent), i.e. a uniform random subset. Returns the archive (valid rows first)
    and its new count."""
    capacity = archive.shape[0]
    pool = jnp.concatenate([archive, parents], axis=0)
    valid = jnp.concatenate([jnp.arange(capacity) < count, added])
    priority = jnp.where(valid, (bits >> 1).astype(jnp.int32), -1)
    _, keep = jax.lax.top_k(priority, capacity)
    new_count = jnp.minimum(count + jnp.sum(added), capacity).astype(jnp.int32)
    return pool[keep], new_count


def successes(
    parent_fitness: Float[Array, " pop"], trial_fitness: Float[Array, " pop"]
) -> tuple[Bool[Array, " pop"], Float[Array, " pop"]]:
    """The members whose trial strictly improved a finite parent (their ``F_i, CR_i`` enter
    ``S_F, S_CR`` and the parent the archive) and the improvements ``f(u_i) - f(x_i)`` (0
    elsewhere). A trial that only ties its parent replaces it without counting as a success;
    a parent at ``-inf`` (not yet evaluated, or non-finite) is replaced without one."""
    success = (trial_fitness > parent_fitness) & jnp.isfinite(parent_fitness)
    return success, jnp.where(success, trial_fitness - parent_fitness, 0.0)


def lehmer_mean(values: Float[Array, " n"], weights: Float[Array, " n"]) -> Float[Array, ""]:
    """``sum w v^2 / sum w v`` (0/0 read as 0: callers use it only when a weight is > 0)."""
    denominator = jnp.dot(weights, values, precision=HIGHEST)
    numerator = jnp.dot(weights, values * values, precision=HIGHEST)
    return numerator / jnp.where(denominator > 0, denominator, 1.0)


def weighted_mean(values: Float[Array, " n"], weights: Float[Array, " n"]) -> Float[Array, ""]:
    """``sum w v / sum w`` (0/0 read as 0)."""
    total = jnp.sum(weights)
    return jnp.dot(weights, values, precision=HIGHEST) / jnp.where(total > 0, total, 1.0)


@chex.dataclass(frozen=True, kw_only=True)
class AdaptiveDEState(PopulationState):
    """State shared by JADE and SHADE.

    Attributes:
        archive: inferior parents, ``[NP, D]`` (``[0, D]`` without archive); rows past
            ``archive_count`` are unused.
        archive_count: the number of archived parents, ``i32[]``.
        differential_weights: the ``F_i`` of the last ``ask``, ``[pop]``.
        crossover_rates: the ``CR_i`` of the last ``ask``, ``[pop]``.
    """

    archive: Float[Array, "arc dim"]
    archive_count: Int[Array, ""]
    differential_weights: Float[Array, " pop"]
    crossover_rates: Float[Array, " pop"]


class AdaptiveDE(PopulationAlgorithm):
    """The parts JADE and SHADE share: the initial population, ``ask`` (parameters from
    :meth:`_parameters`, trials by :func:`current_to_pbest_trials`) and the selection/archive
    half of ``tell``. Subclasses define the fields ``pop_size``, ``archive``, ``init_std``."""

    archive: eqx.AbstractVar[bool]
    init_std: eqx.AbstractVar[float]
    n_extra_draws = 0

    def _adaptive_init(self, key, x0) -> dict:
        pop, dim = self.pop_size, x0.shape[0]
        return dict(
            **first_population(key, x0, pop, self.init_std),
            archive=jnp.zeros((pop if self.archive else 0, dim), x0.dtype),
            archive_count=jnp.zeros([], jnp.int32),
            differential_weights=jnp.full(pop, 0.5, x0.dtype),
            crossover_rates=jnp.full(pop, 0.5, x0.dtype),
        )

    def draws(self, key: PRNGKey, like: Float[Array, " dim"]) -> AdaptiveDraws:
        """The random numbers one :meth:`ask` uses (:func:`adaptive_draws`)."""
        return adaptive_draws(key, self.pop_size, like, self.n_extra_draws)

    def _parameters(self, state, draws):
        """``(F, CR, n_best)`` per member, ``[pop]`` each."""
        raise NotImplementedError

    def _ask(self, key, state):
        draws = self.draws(key, state.population[0])
        F, CR, n_best = self._parameters(state, draws)
        F, CR = F.astype(state.fitness.dtype), CR.astype(state.fitness.dtype)
        trials = current_to_pbest_trials(
            state.population,
            state.fitness,
            state.archive,
            state.archive_count,
            draws,
            n_best,
            F,
            CR,
        )
        told = jnp.any(state.fitness > -jnp.inf)
        state = state.replace(differential_weights=F, crossover_rates=CR)
        return jnp.where(told, trials, state.population), state

    def _select(self, key, state, x, fitness):
        """Greedy selection and the archive update; returns the state, the success mask and
        the improvements."""
        success, improvement = successes(state.fitness, fitness)
        members, member_fitness, accept = greedy_selection(
            state.population, state.fitness, x, fitness
        )
        archive, count = state.archive, state.archive_count
        if self.archive:
            bits = jax.random.bits(key, (archive.shape[0] + self.pop_size,), jnp.uint32)
            archive, count = update_archive(archive, count, state.population, success, bits)
        state = state.replace(
            population=members, fitness=member_fitness, archive=archive, archive_count=count
        )
        metrics = {
            "acceptance_rate": jnp.mean(accept.astype(jnp.float32)),
            "success_rate": jnp.mean(success.astype(jnp.float32)),
        }
        return state, success, improvement, metrics
