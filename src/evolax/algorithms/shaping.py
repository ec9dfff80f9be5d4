"""Fitness shaping: functions ``(fitness, x) -> utilities`` that algorithms take as their
``fitness_shaping`` argument, composed with :func:`chain` as optax composes transforms.

``fitness`` is ``[pop]`` (maximised) and ``x`` the flat population ``[pop, D]`` (only
:func:`weight_decay` reads it). The template (:mod:`evolax.algorithms.base`) hands every
shaping a fitness whose non-finite values are ``-inf``. Rank-based shapings give each of them
the utility of the worst rank; value-based ones (:func:`raw`, :func:`z_score`,
:func:`min_max`) first replace them by the worst finite fitness (:func:`finite_fitness`). So an
individual with a non-finite fitness never pulls the search toward itself.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.validation import check_non_negative

Shaping = Callable[..., Float[Array, " pop"]]
"""``shaping(fitness, x) -> utilities``, each ``[pop]``."""


def sanitize_fitness(fitness: Float[Array, " pop"]) -> Float[Array, " pop"]:
    """Every non-finite fitness as ``-inf`` (the template's rule, for direct callers)."""
    return jnp.where(jnp.isfinite(fitness), fitness, -jnp.inf)


def rank_utilities(
    fitness: Float[Array, " pop"],
    by_rank: Float[Array, " pop"] | np.ndarray,
    order: Int[Array, " pop"] | None = None,
) -> Float[Array, " pop"]:
    """Each individual's utility ``by_rank[r]`` for its rank ``r`` (0 = the best; ties by
    position). Individuals with a non-finite fitness all get the worst rank's utility,
    ``by_rank[-1]``, so none of them is preferred to another or to a finite one.

    ``order``: the ranking, best first, where the caller has sorted already (``jnp.argsort(
    -sanitize_fitness(fitness), stable=True)``): one sort less in the compiled program."""
    fitness = sanitize_fitness(fitness)
    by_rank = jnp.asarray(by_rank, fitness.dtype)
    if order is None:
        order = jnp.argsort(-fitness, stable=True)  # best first
    utilities = jnp.zeros_like(fitness).at[order].set(by_rank)
    return jnp.where(fitness > -jnp.inf, utilities, by_rank[-1])


def centered_rank(fitness: Float[Array, " pop"], x=None) -> Float[Array, " pop"]:
    """Centred ranks in ``[-0.5, 0.5]``: the worst gets -0.5, the best +0.5.

    Ties are broken by position (the earlier ranks lower), as in EvoJAX and Salimans et al.
    (2017); non-finite fitness gets -0.5.
    """
    del x
    fitness = sanitize_fitness(fitness)
    n = fitness.shape[0]
    order = jnp.argsort(fitness, stable=True)
    ranks = jnp.zeros(n, fitness.dtype).at[order].set(jnp.arange(n, dtype=fitness.dtype))
    ranks = jnp.where(fitness > -jnp.inf, ranks, 0.0)
    return ranks / max(n - 1, 1) - 0.5


def finite_fitness(fitness: Float[Array, " pop"]) -> Float[Array, " pop"]:
    """The fitness rule for shapings that use fitness values, not just their order.

    NaN and ``-inf`` become the worst finite fitness (so they rank with the worst and add no
    outliers), ``+inf`` too (the template never lets it through as better); with no finite
    value at all, everything is 0.
    """
    finite = jnp.isfinite(fitness)
    worst = jnp.min(jnp.where(finite, fitness, jnp.inf))  # inf exactly when none is finite
    return jnp.where(worst < jnp.inf, jnp.where(finite, fitness, worst), 0.0)


def raw(fitness: Float[Array, " pop"], x=None) -> Float[Array, " pop"]:
    """The fitness itself (non-finite values as the worst finite one)."""
    del x
    return finite_fitness(fitness)


def z_score(fitness: Float[Array, " pop"], x=None) -> Float[Array, " pop"]:
    """``(f - mean) / std``: zero mean, unit variance (all zeros if every fitness is equal)."""
    del x
    fitness = finite_fitness(fitness)
    centred = fitness - jnp.mean(fitness)
    std = jnp.std(fitness)
    return jnp.where(std > 0, centred / jnp.where(std > 0, std, 1.0), 0.0)


def min_max(fitness: Float[Array, " pop"], x=None) -> Float[Array, " pop"]:
    """Fitness scaled to ``[0, 1]``: the worst 0, the best 1 (all zeros if all are equal)."""
    del x
    fitness = finite_fitness(fitness)
    low, span = jnp.min(fitness), jnp.max(fitness) - jnp.min(fitness)
    return jnp.where(span > 0, (fitness - low) / jnp.where(span > 0, span, 1.0), 0.0)


def cma_weights(fitness: Float[Array, " pop"], x=None) -> Float[Array, " pop"]:
    """CMA-ES recombination weights by rank (Hansen, 2016, eq. 49 with positive weights only).

    With ``n`` individuals and ``mu = n // 2``, the ``i``-th best (``i = 1 .. mu``) gets
    ``log((n + 1) / 2) - log(i)``, normalised to sum to 1; the others get 0. Ties are broken by
    position (the earlier ranks higher).
    """
    del x
    n = fitness.shape[0]
    mu = max(n // 2, 1)
    raw_weights = np.log((n + 1) / 2) - np.log(np.arange(1, mu + 1))
    by_rank = np.concatenate([raw_weights / raw_weights.sum(), np.zeros(n - mu)])
    return rank_utilities(fitness, by_rank)


def nes_utilities(fitness: Float[Array, " pop"], x=None) -> Float[Array, " pop"]:
    """The rank-based utilities of natural evolution strategies (Wierstra et al., 2014, eq. 11).

    The ``i``-th best of ``n`` gets ``max(0, log(n / 2 + 1) - log(i))``, normalised to sum 1,
    minus ``1 / n``: they sum to zero, and the worse half share the same negative value. Ties
    are broken by position.
    """
    del x
    n = fitness.shape[0]
    raw_weights = np.maximum(0.0, np.log(n / 2 + 1) - np.log(np.arange(1, n + 1)))
    return rank_utilities(fitness, raw_weights / raw_weights.sum() - 1.0 / n)


class weight_decay(eqx.Module):  # used like a function, as optax's transforms
    """Fitness minus ``coefficient`` times each genome's mean squared parameter (an L2 prior,
    as in Salimans et al., 2017); chain it before a rank shaping:
    ``chain(weight_decay(0.005), centered_rank)``.

    Args:
        coefficient: the penalty's weight, ``>= 0``.
    """

    coefficient: float = eqx.field(static=True)

    def __check_init__(self):
        check_non_negative("coefficient", self.coefficient)

    def __call__(self, fitness: Float[Array, " pop"], x: Float[Array, "pop dim"]):
        if x is None or x.ndim != 2 or x.shape[0] != fitness.shape[0]:
            shape = None if x is None else x.shape
            raise ValueError(
                f"x must be the flat population (pop, dim) with pop = {fitness.shape[0]}, got "
                f"shape {shape}"
            )
        return fitness - self.coefficient * jnp.mean(x**2, axis=1)


class chain(eqx.Module):
    """Shapings applied in order: ``chain(a, b)(fitness, x) = b(a(fitness, x), x)``."""

    shapings: tuple[Shaping, ...] = eqx.field(static=True)

    def __init__(self, *shapings: Shaping):
        for shaping in shapings:
            if not callable(shaping):
                raise ValueError(f"chain takes shaping functions, got {shaping!r}")
        self.shapings = shapings

    def __call__(self, fitness: Float[Array, " pop"], x=None) -> Float[Array, " pop"]:
        for shaping in self.shapings:
            fitness = shaping(fitness, x)
        return fitness
