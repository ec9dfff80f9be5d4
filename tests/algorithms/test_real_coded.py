"""SBX and polynomial mutation in float32 against Deb's formulas (his NSGA-II code's
``realcross`` and ``real_mutate_ind``, as pymoo writes them) evaluated exactly (mpmath, 50
digits), draw by draw, at and near the bounds: a child or a mutant close to a bound keeps
float32's relative accuracy. The old forms cancelled (``(1 - 1e-9)^21`` is 1 in float32), so
a mutant could not come closer to a bound than ~1e-8 of the range, which left ZDT6's optimum,
on the lower bound, out of NSGA-II's reach."""

import jax
import jax.numpy as jnp
import mpmath
import numpy as np

from evolax.algorithms.multiobjective.real_coded import (
    polynomial_move,
    simulated_binary_crossover,
)
from evolax.algorithms.noise import uniform

mpmath.mp.dps = 50
U = np.concatenate([[0.0, 2.0**-23, 1e-4], np.linspace(0.01, 0.99, 41), [0.5, 1 - 2.0**-23]])
U = U.astype(np.float32)
DISTANCES = np.asarray([0.0, 1e-30, 1e-20, 1e-12, 1e-9, 1e-7, 1e-4, 1e-2, 0.3], np.float32)


def deb_mutation(x, u, lower, upper, eta=20):
    """``real_mutate_ind`` for one variable, exactly."""
    x, u, lower, upper = (mpmath.mpf(float(v)) for v in (x, u, lower, upper))
    span, power = upper - lower, mpmath.mpf(1) / (eta + 1)
    if u <= 0.5:
        xy = 1 - (x - lower) / span
        delta = (2 * u + (1 - 2 * u) * xy ** (eta + 1)) ** power - 1
    else:
        xy = 1 - (upper - x) / span
        delta = 1 - (2 * (1 - u) + 2 * (u - mpmath.mpf(0.5)) * xy ** (eta + 1)) ** power
    return float(min(max(x + delta * span, lower), upper))


def deb_crossover_low(y1, y2, u, lower, eta=15):
    """``realcross``'s child on the smaller parent's side, exactly (``y1 < y2``)."""
    y1, y2, u, lower = (mpmath.mpf(float(v)) for v in (y1, y2, u, lower))
    beta = 1 + 2 * (y1 - lower) / (y2 - y1)
    alpha = 2 - beta ** -(eta + 1)
    if u <= 1 / alpha:
        betaq = (u * alpha) ** (mpmath.mpf(1) / (eta + 1))
    else:
        betaq = (1 / (2 - u * alpha)) ** (mpmath.mpf(1) / (eta + 1))
    return float(max((y1 + y2 - betaq * (y2 - y1)) / 2, lower))


def test_polynomial_mutation_near_and_at_the_bounds_in_float32():
    """x at 0 .. 0.3 of the range from the bound it moves toward, every u: the float32 mutant
    is Deb's to 1e-5 relative (a mutant of x = 1e-9 lands near 2 u 1e-9)."""
    x, u = (a.ravel() for a in np.meshgrid(DISTANCES, U))
    # toward the lower bound 0 of [0, 1], and toward the upper bound 0 of [-1, 0]
    for lower, upper, x32, u32 in ((0.0, 1.0, x, u), (-1.0, 0.0, -x, (1 - u).astype(np.float32))):
        bounds = [jnp.full((1, 1), b, jnp.float32) for b in (lower, upper)]
        ours = np.asarray(polynomial_move(x32[:, None], u32[:, None], *bounds))[:, 0]
        reference = np.asarray([deb_mutation(*a, lower, upper) for a in zip(x32, u32, strict=True)])
        np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-44)


def test_sbx_children_near_and_at_the_lower_bound_in_float32():
    """Parents 0 .. 1e-4 above the lower bound 0, the other 1e-3 .. 0.5 away, every u: the
    child toward the bound is Deb's to 2e-5 relative."""
    near = np.asarray([0.0, 1e-30, 1e-12, 1e-9, 1e-6, 1e-4], np.float32)
    far = np.asarray([1e-3, 0.1, 0.5], np.float32)
    y1, y2 = (a.ravel() for a in np.meshgrid(near, far))
    pairs = y1.shape[0]
    lower, upper = jnp.zeros(1, jnp.float32), jnp.ones(1, jnp.float32)
    for seed in range(8):
        key = jax.random.key(seed)
        c1, c2 = simulated_binary_crossover(
            key, jnp.asarray(y1)[:, None], jnp.asarray(y2)[:, None], lower, upper, 15.0, 1.0, 1.0
        )
        ours = np.minimum(np.asarray(c1), np.asarray(c2))[:, 0]  # the child toward 0
        u = np.asarray(uniform(key, (pairs, 4), jnp.float32))[:, 0]
        reference = np.asarray([deb_crossover_low(*a, 0.0) for a in zip(y1, y2, u, strict=True)])
        np.testing.assert_allclose(ours, reference, rtol=2e-5, atol=1e-44)
