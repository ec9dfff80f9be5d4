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

__all__ = ["polynomial_mutation", "polynomial_move", "simulated_binary_crossover"]


def _spread(u: Array, beta: Array, eta) -> Array:
    """SBX's spread factor ``beta_q`` from a uniform ``u``, for a parent ``beta`` range away
    from its bound (``beta = inf`` when unbounded)."""
    alpha = 2.0 - beta ** -(eta + 1.0)
    low = (u * alpha) ** (1.0 / (eta + 1.0))
    high = (1.0 / jnp.maximum(2.0 - u * alpha, 1e-12)) ** (1.0 / (eta + 1.0))
    return jnp.where(u <= 1.0 / alpha, low, high)


def _room(u: Array, b: Array, eta) -> Array:
    """``beta - beta_q`` for ``beta = 1 + b`` (``b``: twice the parent's distance to its finite
    bound over the parents' gap), in a form that does not cancel: the child lands ``gap / 2
    (beta - beta_q)`` from the bound, with float32's relative accuracy however close.

    With ``q = beta^-(eta + 1)``: ``beta_q = (u (2 - q))^(1 / (eta + 1))`` for ``u (2 - q) <=
    1``, so ``beta - beta_q = b - expm1(log(u (2 - q)) / (eta + 1))``; else ``beta_q / beta =
    (1 + (1 - u)(2 - q) / q)^(-1 / (eta + 1))``, so ``beta - beta_q = -beta expm1(-softplus(
    log(1 - u) + log(2 - q) - log q) / (eta + 1))``.
    """
    power = 1.0 / (eta + 1.0)
    log_q = -(eta + 1.0) * jnp.log1p(b)
    alpha = 2.0 - jnp.exp(log_q)
    inner = b - jnp.expm1(jnp.log(u * alpha) * power)
    t = jnp.log1p(-u) + jnp.log(alpha) - log_q
    outer = -(1.0 + b) * jnp.expm1(-jnp.logaddexp(0.0, t) * power)
    return jnp.where(u * alpha <= 1.0, inner, outer)


def _child(u, near, far, bound, sign, eta):
    """The child on ``near``'s side (``sign = -1``: toward ``bound`` below, ``+1``: above),
    ``mid + sign gap beta_q / 2``; where it lands closer to a finite bound than to the
    parents' mean, written from the bound (``bound - sign gap (beta - beta_q) / 2``)."""
    gap = jnp.abs(far - near)
    safe = jnp.where(gap > 1e-14, gap, 1.0)
    b = 2.0 * jnp.abs(near - bound) / safe
    room, spread = _room(u, b, eta), _spread(u, 1.0 + b, eta)
    from_bound = bound - sign * 0.5 * safe * room
    from_mid = 0.5 * (near + far) + sign * 0.5 * spread * gap
    return jnp.where(jnp.isfinite(bound) & (room < spread), from_bound, from_mid)


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
    child_low = jnp.clip(_child(u, low, high, lower, -1.0, eta), lower, upper)
    child_high = jnp.clip(_child(u, high, low, upper, 1.0, eta), lower, upper)
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
    moved = polynomial_move(x, u, lower, jnp.where(bounded, upper, lower + 1.0), eta)
    noise = 0.0 if std is None else std * gaussian(normal_key, x.shape, x.dtype)
    moved = jnp.where(bounded, moved, x + noise)
    return jnp.clip(jnp.where(mutate, moved, x), lower, upper)


def polynomial_move(
    x: Float[Array, "... dim"],
    u: Float[Array, "... dim"],
    lower: Float[Array, " dim"],
    upper: Float[Array, " dim"],
    eta=20.0,
) -> Float[Array, "... dim"]:
    """Deb's polynomial mutation of ``x`` in finite ``[lower, upper]`` for uniform ``u``: ``x +
    delta_q (upper - lower)`` with ``delta_q = (2u + (1 - 2u)(1 - d)^(eta + 1))^(1 / (eta +
    1)) - 1`` for ``u < 1/2``, ``d = (x - lower) / (upper - lower)``, and its mirror toward
    ``upper`` (clipped to the bounds).

    Written with ``log1p`` and ``expm1`` so that nothing cancels near a bound: the result is
    taken from ``x`` (``x + delta_q span``) or, where it lands closer to the bound than to
    ``x``, from the bound, whose distance is ``(1 - d) expm1(log1p(2u ((1 - d)^-(eta + 1) -
    1)) / (eta + 1))`` in spans; either keeps float32's relative accuracy however close to the
    bound (the old form lost everything below ``d ~ 1e-7``)."""
    power, e1 = 1.0 / (eta + 1.0), eta + 1.0
    span = upper - lower

    def toward(bound, d, v, sign):  # v = 2u toward lower, 2(1 - u) toward upper
        step = jnp.expm1(power * jnp.log1p((1.0 - v) * jnp.expm1(e1 * jnp.log1p(-d))))
        left = (1.0 - d) * jnp.expm1(power * jnp.log1p(v * jnp.expm1(-e1 * jnp.log1p(-d))))
        near_bound = left < -step - left  # closer to the bound than to x
        return jnp.where(near_bound, bound + sign * left * span, x + sign * step * span)

    down = toward(lower, (x - lower) / span, 2.0 * u, 1.0)
    up = toward(upper, (upper - x) / span, 2.0 * (1.0 - u), -1.0)
    return jnp.clip(jnp.where(u < 0.5, down, up), lower, upper)
