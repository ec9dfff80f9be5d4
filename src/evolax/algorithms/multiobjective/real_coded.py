"""Deb's real-coded variation: simulated binary crossover (Deb & Agrawal, 1995) and
polynomial mutation (Deb & Goyal, 1996), in the bounded form NSGA-II's code and pymoo use.

Bounds may be infinite: SBX then spreads children as the unbounded operator does, and the
mutation falls back to a Gaussian step (polynomial mutation scales its step by the range).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.algorithms.noise import gaussian, uniform
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
    probability 1/2. (All draws come from one :func:`~evolax.algorithms.noise.uniform`.)"""
    pairs, dim = first.shape
    r = uniform(key, (pairs, 3 * dim + 1), first.dtype)
    u, swap, var = r[:, :dim], r[:, dim : 2 * dim] < 0.5, r[:, 2 * dim : 3 * dim] < prob_var
    lower, upper = lower[None], upper[None]
    low, high = jnp.minimum(first, second), jnp.maximum(first, second)
    gap = high - low
    safe = jnp.where(gap > 1e-14, gap, 1.0)
    beta_low = 1.0 + 2.0 * (low - lower) / safe
    beta_high = 1.0 + 2.0 * (upper - high) / safe
    mid = 0.5 * (low + high)
    child_low = jnp.clip(mid - 0.5 * _spread(u, beta_low, eta) * gap, lower, upper)
    child_high = jnp.clip(mid + 0.5 * _spread(u, beta_high, eta) * gap, lower, upper)
    child_1, child_2 = (
        jnp.where(swap, child_high, child_low),
        jnp.where(swap, child_low, child_high),
    )
    cross = (r[:, 3 * dim :] < prob) & var & (gap > 1e-14)
    return jnp.where(cross, child_1, first), jnp.where(cross, child_2, second)


def polynomial_mutation(
    key: PRNGKey,
    x: Float[Array, "pop dim"],
    lower: Float[Array, " dim"],
    upper: Float[Array, " dim"],
    eta=20.0,
    rate=None,
    std=None,
) -> Float[Array, "pop dim"]:
    """Mutate each variable with probability ``rate`` (default ``1 / dim``): by a polynomial
    step of distribution index ``eta`` scaled by ``upper - lower`` where both bounds are
    finite, else by ``std * N(0, 1)`` (``std`` is needed when a bound is infinite; ``None``
    draws no Gaussian noise); the result stays inside ``[lower, upper]``."""
    uniform_key, normal_key = jax.random.split(key)
    dim = x.shape[1]
    rate = 1.0 / dim if rate is None else rate
    r = uniform(uniform_key, (x.shape[0], 2 * dim), x.dtype)
    mutate, u = r[:, :dim] < rate, r[:, dim:]
    lower, upper = lower[None], upper[None]
    span = upper - lower
    bounded = jnp.isfinite(span)
    span = jnp.where(bounded, span, 1.0)
    delta_low, delta_high = (x - lower) / span, (upper - x) / span
    power = 1.0 / (eta + 1.0)
    down = (2.0 * u + (1.0 - 2.0 * u) * (1.0 - delta_low) ** (eta + 1.0)) ** power - 1.0
    up = 1.0 - (2.0 * (1.0 - u) + 2.0 * (u - 0.5) * (1.0 - delta_high) ** (eta + 1.0)) ** power
    step = jnp.where(u < 0.5, down, up) * span
    if std is not None:
        step = jnp.where(bounded, step, std * gaussian(normal_key, x.shape, x.dtype))
    moved = x + step
    return jnp.clip(jnp.where(mutate, moved, x), lower, upper)
