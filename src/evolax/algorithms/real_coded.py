"""Deb's real-coded variation: simulated binary crossover (Deb & Agrawal, 1995) and
polynomial mutation (Deb & Goyal, 1996), in the bounded form NSGA-II's code and pymoo use.

Bounds may be infinite: SBX then spreads children as the unbounded operator does, and the
mutation falls back to a Gaussian step (polynomial mutation scales its step by the range).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.types import PRNGKey

__all__ = ["polynomial_mutation", "simulated_binary_crossover"]


def _spread(u: Array, beta: Array, eta) -> Array:
    """SBX's spread factor from a uniform ``u``, for a parent ``beta`` range away from its
    bound (``beta = inf`` when unbounded)."""
    alpha = 2.0 - beta ** -(eta + 1.0)
    low = (u * alpha) ** (1.0 / (eta + 1.0))
    high = (1.0 / jnp.maximum(2.0 - u * alpha, 1e-12)) ** (1.0 / (eta + 1.0))
    return jnp.where(u <= 1.0 / alpha, low, high)


def simulated_binary_crossover(
    key: PRNGKey,
    first: Float[Array, "pairs dim"],
    second: Float[Array, "pairs dim"],
    lower: Float[Array, " dim"],
    upper: Float[Array, " dim"],
    eta=15.0,
    prob=0.9,
    prob_var=0.5,
) -> tuple[Float[Array, "pairs dim"], Float[Array, "pairs dim"]]:
    """Two children per pair of parents. A pair crosses with probability ``prob``; then each
    variable where the parents differ crosses with probability ``prob_var``, its children
    spread around the parents' mean with distribution index ``eta`` (larger: closer to the
    parents) and kept inside ``[lower, upper]``; the two children swap each variable with
    probability 1/2."""
    k_pair, k_var, k_u, k_swap = jax.random.split(key, 4)
    pairs, dim = first.shape
    lower, upper = lower[None], upper[None]
    low, high = jnp.minimum(first, second), jnp.maximum(first, second)
    gap = high - low
    safe = jnp.where(gap > 1e-14, gap, 1.0)
    u = jax.random.uniform(k_u, (pairs, dim), first.dtype)
    beta_low = 1.0 + 2.0 * (low - lower) / safe
    beta_high = 1.0 + 2.0 * (upper - high) / safe
    mid = 0.5 * (low + high)
    child_low = jnp.clip(mid - 0.5 * _spread(u, beta_low, eta) * gap, lower, upper)
    child_high = jnp.clip(mid + 0.5 * _spread(u, beta_high, eta) * gap, lower, upper)
    swap = jax.random.bernoulli(k_swap, 0.5, (pairs, dim))
    child_1, child_2 = (
        jnp.where(swap, child_high, child_low),
        jnp.where(swap, child_low, child_high),
    )
    cross = (
        jax.random.bernoulli(k_pair, prob, (pairs, 1))
        & jax.random.bernoulli(k_var, prob_var, (pairs, dim))
        & (gap > 1e-14)
    )
    return jnp.where(cross, child_1, first), jnp.where(cross, child_2, second)


def polynomial_mutation(
    key: PRNGKey,
    x: Float[Array, "pop dim"],
    lower: Float[Array, " dim"],
    upper: Float[Array, " dim"],
    eta=20.0,
    rate=None,
    std=0.1,
) -> Float[Array, "pop dim"]:
    """Mutate each variable with probability ``rate`` (default ``1 / dim``): by a polynomial
    step of distribution index ``eta`` scaled by ``upper - lower`` where both bounds are
    finite, else by ``std * N(0, 1)``; the result stays inside ``[lower, upper]``."""
    k_which, k_u, k_normal = jax.random.split(key, 3)
    rate = 1.0 / x.shape[1] if rate is None else rate
    lower, upper = lower[None], upper[None]
    span = upper - lower
    bounded = jnp.isfinite(span)
    span = jnp.where(bounded, span, 1.0)
    delta_low, delta_high = (x - lower) / span, (upper - x) / span
    u = jax.random.uniform(k_u, x.shape, x.dtype)
    power = 1.0 / (eta + 1.0)
    down = (2.0 * u + (1.0 - 2.0 * u) * (1.0 - delta_low) ** (eta + 1.0)) ** power - 1.0
    up = 1.0 - (2.0 * (1.0 - u) + 2.0 * (u - 0.5) * (1.0 - delta_high) ** (eta + 1.0)) ** power
    step = jnp.where(u < 0.5, down, up) * span
    gaussian = std * jax.random.normal(k_normal, x.shape, x.dtype)
    moved = x + jnp.where(bounded, step, gaussian)
    mutate = jax.random.bernoulli(k_which, rate, x.shape)
    return jnp.clip(jnp.where(mutate, moved, x), lower, upper)
