"""Gradientless descent: elitist search on balls of geometrically spaced radii (Golovin, Karro,
Kochanski, Lee, Song & Zhang, 2020)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.algorithms.base import DistributionAlgorithm, normal
from evolax.algorithms.baselines.common import ClimbState, climb, climb_start
from evolax.types import PRNGKey
from evolax.validation import check_positive, concrete_number


@chex.dataclass(frozen=True, kw_only=True)
class GradientlessDescentState(ClimbState):
    """GradientlessDescent state: the current point ``mean`` (``[D]``), the largest search
    radius ``std`` (``[]``, the paper's ``R``; fixed) and the current point's ``fitness``
    (``[]``, ``-inf`` until a generation is told: ``x0`` itself is never evaluated)."""


def search_radii(
    pop_size: int, max_radius: Float[Array, ""] | float, min_radius: Float[Array, ""] | float
) -> Float[Array, " pop"]:
    """``pop_size`` radii spaced geometrically from ``max_radius`` down to ``min_radius``:
    ``r_k = R (r / R)^(k / (pop_size - 1))``, ``k = 0..pop_size - 1`` (just ``R`` for one
    sample). With ``pop_size = log2(R / r) + 1`` these are the paper's ``r_k = 2^-k R``."""
    max_radius = jnp.asarray(max_radius)
    if pop_size == 1:
        return jnp.reshape(max_radius, 1)
    fraction = jnp.arange(pop_size, dtype=max_radius.dtype) / (pop_size - 1)
    return max_radius * (min_radius / max_radius) ** fraction


def ball(key: PRNGKey, radii: Float[Array, " pop"], dim: int) -> Float[Array, "pop dim"]:
    """One point uniform in the ``dim``-ball of each radius: ``r_k u^(1/dim) z / |z|`` with
    ``z ~ N(0, I)`` and ``u ~ U[0, 1)``."""
    direction_key, length_key = jax.random.split(key)
    z = normal(direction_key, (radii.shape[0], dim), radii)
    u = jax.random.uniform(length_key, radii.shape, radii.dtype)
    norm = jnp.maximum(jnp.linalg.norm(z, axis=1), jnp.finfo(radii.dtype).tiny)
    length = radii * u ** (1.0 / dim) / norm
    return length[:, None] * z


class GradientlessDescent(DistributionAlgorithm[GradientlessDescentState]):
    """GradientLess Descent, GLD-Search (Golovin, Karro, Kochanski, Lee, Song & Zhang, 2020,
    "Gradientless Descent: High-Dimensional Zeroth-Order Optimization", ICLR, algorithm 1).

    Each generation samples one point uniformly in each ball ``x + r_k B^D`` around the
    current point ``x``, with radii spaced geometrically from ``R = init_std`` down to
    ``r = min_radius`` (:func:`search_radii`, :func:`ball`), and moves to the fittest sample
    if it is strictly fitter than ``x`` (the paper's ``x_{t+1} = argmin {f(x_t), f(x_t +
    v_k)}``; :func:`~evolax.algorithms.baselines.common.climb`). The paper takes ``K + 1 =
    log2(R / r) + 1`` samples at ``r_k = 2^-k R``: ``pop_size`` sets their number here, and
    ``pop_size = log2(R / r) + 1`` gives exactly the paper's radii. ``x0`` is not evaluated,
    so the first generation always moves to its best sample.

    A :class:`~evolax.algorithms.base.DistributionAlgorithm`: the state is a current point and
    a positive spread (``std``: the largest radius ``R``), and since the search is elitist the
    current point is the fittest genome told so far, the solution to deploy (:meth:`best`
    returns it). The paper leaves ``R`` (the search space's diameter) and ``r`` (the accuracy
    sought) to the problem; the defaults are evosax's (``radius_max = 0.2``,
    ``radius_min = 0.001``). evosax's ``GradientlessDescent`` samples ``N(0, r_k^2 I)`` (norm
    about ``r_k sqrt(D)``, not at most ``r_k``) at radii ``r + 2^(-k / 5) (R - r)``.

    Args:
        pop_size: samples per generation (``K + 1``), one per radius.
        init_std: the largest search radius ``R``, positive.
        min_radius: the smallest search radius ``r``, positive and at most ``init_std``.
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 0.2
    min_radius: float = 0.001

    def __check_init__(self):
        check_positive("init_std", self.init_std)
        check_positive("min_radius", self.min_radius)
        largest, smallest = concrete_number(self.init_std), concrete_number(self.min_radius)
        if largest is not None and smallest is not None and smallest > largest:
            raise ValueError(
                f"min_radius must be at most init_std (the largest radius, {self.init_std}), "
                f"got {self.min_radius}"
            )

    def _init(self, key, x0):
        del key
        return GradientlessDescentState(**climb_start(x0, self.init_std))

    def radii(self, state: GradientlessDescentState) -> Float[Array, " pop"]:
        """The search radii of ``state``'s next generation, ``[pop]``, largest first."""
        return search_radii(self.pop_size, state.std, jnp.asarray(self.min_radius, state.std.dtype))

    def _ask(self, key, state):
        steps = ball(key, self.radii(state), state.mean.shape[0])
        return state.mean[None] + steps, state

    def _tell(self, key, state, x, fitness):
        del key
        mean, current, moved = climb(state.mean, state.fitness, x, fitness)
        step = jnp.linalg.norm(mean - state.mean)
        new_state = state.replace(mean=mean, fitness=current)
        return new_state, {"moved": moved.astype(jnp.float32), "step": step}
