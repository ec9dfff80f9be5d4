"""Fitness shaping: maps raw fitness to the utilities an update uses.

NaN rule (used by every algorithm in evolax): a NaN fitness counts as the worst possible
fitness, ``-inf``, so a diverged individual is ranked last and never poisons the state.
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
