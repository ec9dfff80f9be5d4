"""Fitness shaping: maps raw fitness to the utilities an update uses.

NaN rule (used by every algorithm in evolax): a NaN fitness counts as the worst possible
fitness, ``-inf``, so a diverged individual is ranked last and never poisons the state.
Shapings that use fitness values rather than ranks (:func:`z_score`, :func:`min_max`) first
pass them through :func:`finite_fitness`, which gives NaN and ``-inf`` the worst finite value.
"""

import jax.numpy as jnp
from jaxtyping import Array, Float


def sanitize_fitness(fitness: Float[Array, " pop"]) -> Float[Array, " pop"]:
    """Replace NaN by ``-inf`` (the documented NaN rule)."""
    return jnp.where(jnp.isnan(fitness), -jnp.inf, fitness)


def centered_rank(fitness: Float[Array, " pop"]) -> Float[Array, " pop"]:
    """Centred ranks in ``[-0.5, 0.5]``: the worst gets -0.5, the best +0.5.

    Ties are broken by position (stable sort), as in EvoJAX and Salimans et al. (2017).
    """
    n = fitness.shape[0]
    order = jnp.argsort(sanitize_fitness(fitness), stable=True)
    ranks = jnp.zeros(n, jnp.float32).at[order].set(jnp.arange(n, dtype=jnp.float32))
    return ranks / max(n - 1, 1) - 0.5


def finite_fitness(fitness: Float[Array, " pop"]) -> Float[Array, " pop"]:
    """The NaN rule for shapings that use fitness values, not just their order.

    NaN and ``-inf`` become the worst finite fitness (so they rank with the worst and add no
    outliers), ``+inf`` the best finite one; with no finite value at all, everything is 0.
    """
    finite = jnp.isfinite(fitness)
    worst = jnp.min(jnp.where(finite, fitness, jnp.inf))
    best = jnp.max(jnp.where(finite, fitness, -jnp.inf))
    fitness = jnp.where(fitness == jnp.inf, best, jnp.where(finite, fitness, worst))
    return jnp.where(jnp.any(finite), fitness, 0.0)


def z_score(fitness: Float[Array, " pop"]) -> Float[Array, " pop"]:
    """``(f - mean) / std``: zero mean, unit variance (all zeros if every fitness is equal)."""
    fitness = finite_fitness(fitness)
    centred = fitness - jnp.mean(fitness)
    std = jnp.std(fitness)
    return jnp.where(std > 0, centred / jnp.where(std > 0, std, 1.0), 0.0)


def min_max(fitness: Float[Array, " pop"]) -> Float[Array, " pop"]:
    """Fitness scaled to ``[0, 1]``: the worst 0, the best 1 (all zeros if all are equal)."""
    fitness = finite_fitness(fitness)
    low, span = jnp.min(fitness), jnp.max(fitness) - jnp.min(fitness)
    return jnp.where(span > 0, (fitness - low) / jnp.where(span > 0, span, 1.0), 0.0)


def cma_weights(fitness: Float[Array, " pop"]) -> Float[Array, " pop"]:
    """CMA-ES recombination weights by rank (Hansen, 2016, eq. 49 with positive weights only).

    With ``n`` individuals and ``mu = n // 2``, the ``i``-th best (``i = 1 .. mu``) gets
    ``log((n + 1) / 2) - log(i)``, normalised to sum to 1; the others get 0. Ties are broken by
    position, as in :func:`centered_rank`.
    """
    n = fitness.shape[0]
    mu = max(n // 2, 1)
    raw = jnp.log((n + 1) / 2) - jnp.log(jnp.arange(1, mu + 1, dtype=jnp.float32))
    by_rank = jnp.concatenate([raw / jnp.sum(raw), jnp.zeros(n - mu, jnp.float32)])
    order = jnp.argsort(-sanitize_fitness(fitness), stable=True)  # best first
    return jnp.zeros(n, jnp.float32).at[order].set(by_rank)


def weight_decay(
    fitness: Float[Array, " pop"], flat_population: Float[Array, "pop dim"], coefficient: float
) -> Float[Array, " pop"]:
    """Fitness minus ``coefficient`` times each genome's mean squared parameter (an L2 prior,
    as in Salimans et al., 2017), applied before another shaping."""
    if flat_population.ndim != 2 or flat_population.shape[0] != fitness.shape[0]:
        raise ValueError(
            f"flat_population must be (pop, dim) with pop = {fitness.shape[0]}, got shape "
            f"{flat_population.shape}"
        )
    return fitness - coefficient * jnp.mean(flat_population**2, axis=1)


def nes_utilities(fitness: Float[Array, " pop"]) -> Float[Array, " pop"]:
    """The rank-based utilities of natural evolution strategies (Wierstra et al., 2014, eq. 11).

    The ``i``-th best of ``n`` gets ``max(0, log(n / 2 + 1) - log(i))``, normalised to sum 1,
    minus ``1 / n``: they sum to zero, and the worse half share the same negative value. Ties
    are broken by position.
    """
    n = fitness.shape[0]
    raw = jnp.maximum(0.0, jnp.log(n / 2 + 1) - jnp.log(jnp.arange(1, n + 1, dtype=jnp.float32)))
    by_rank = raw / jnp.sum(raw) - 1.0 / n
    order = jnp.argsort(-sanitize_fitness(fitness), stable=True)  # best first
    return jnp.zeros(n, jnp.float32).at[order].set(by_rank)
