"""xNES: exponential natural evolution strategies (Glasmachers et al., 2010)."""

from __future__ import annotations

import math

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jax.scipy.linalg import expm
from jaxtyping import Array, Float

from evolax.algorithms.base import (
    Algorithm,
    check_fitness,
    flatten_population,
    unflatten_population,
)
from evolax.algorithms.noise import gaussian
from evolax.algorithms.shaping import nes_utilities
from evolax.types import Fitness, Metrics, Params, Population, PRNGKey
from evolax.validation import check_positive, check_positive_int

HIGHEST = jax.lax.Precision.HIGHEST


def default_pop_size(dim: int) -> int:
    """Wierstra et al. (2014), table 1: ``4 + floor(3 ln d)``."""
    return 4 + int(3 * math.log(dim))


def default_lr(dim: int) -> float:
    """Wierstra et al. (2014), table 1, the rate of ``sigma`` and ``B`` in xNES:
    ``3 (3 + ln d) / (5 d sqrt d)``."""
    return 3 * (3 + math.log(dim)) / (5 * dim * math.sqrt(dim))


@chex.dataclass(frozen=True)
class XNESState:
    """xNES state: the search distribution ``N(mean, sigma^2 B B^T)``, i.e. ``A = sigma B``.

    Attributes:
        mean: the mean ``mu``, a genome pytree (what :meth:`XNES.best` returns).
        sigma: the step size ``sigma = |det A|^(1/d)``, ``f32[]``.
        b: the normalised factor ``B`` (``det B = 1``), ``f32[D, D]``.
    """

    mean: Params
    sigma: Float[Array, ""]
    b: Float[Array, "dim dim"]


class XNES(Algorithm):
    """Exponential NES (Glasmachers, Schaul, Sun, Wierstra & Schmidhuber, 2010; Wierstra et
    al., 2014, "Natural Evolution Strategies", algorithm 5 with the defaults of table 1).

    Samples ``x_k = mu + sigma B s_k`` with ``s_k ~ N(0, I)``, ranks them into NES utilities
    ``u_k`` (:func:`~evolax.algorithms.shaping.nes_utilities`; NaN fitness ranks last) and
    follows the natural gradient in local coordinates: ``G_delta = sum u_k s_k``, ``G_M = sum
    u_k (s_k s_k^T - I)``, ``G_sigma = tr(G_M) / d``, ``G_B = G_M - G_sigma I``; then ``mu +=
    eta_mu sigma B G_delta``, ``sigma *= exp(eta_sigma / 2 G_sigma)`` and ``B <- B
    expm(eta_B / 2 G_B)``. Algorithm 5 prints ``B^T s_k`` in the sampling line; ``B s_k`` is
    the form consistent with its updates of ``mu`` and ``B`` (the same while ``B`` is
    symmetric). A generation whose update is not finite (a float32 breakdown once ``sigma`` is
    far below the resolution of the mean) is skipped: the state is kept. As with any float32
    ES, stop before ``sigma`` reaches about ``1e-7 |mean|``: beyond it the samples recovered
    from the population are rounding noise.

    ``tell`` recovers ``s_k`` from the population by solving with ``B``; memory is ``O(d^2)``
    and a generation costs ``O(d^3)`` (one ``expm``), so it suits ``d`` up to a few hundred.

    Args:
        pop_size: ``lambda``, at least 2 (the paper's default is :func:`default_pop_size`).
        init_std: the initial ``sigma`` (``B`` starts at the identity), positive.
        center_lr: ``eta_mu`` (the paper: 1).
        std_lr: ``eta_sigma``; ``None`` uses :func:`default_lr` of the dimension.
        b_lr: ``eta_B``; ``None`` uses :func:`default_lr` of the dimension.
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0
    center_lr: float = 1.0
    std_lr: float | None = None
    b_lr: float | None = None

    def __check_init__(self):
        check_positive_int("pop_size", self.pop_size)
        if self.pop_size < 2:
            raise ValueError(f"pop_size must be at least 2 to rank samples, got {self.pop_size}")
        check_positive("init_std", self.init_std)
        check_positive("center_lr", self.center_lr)
        for name in ("std_lr", "b_lr"):
            if getattr(self, name) is not None:
                check_positive(name, getattr(self, name))

    def init(self, key: PRNGKey, x0: Params) -> XNESState:
        del key
        flat, _ = ravel_pytree(x0)
        return XNESState(
            mean=jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), x0),
            sigma=jnp.asarray(self.init_std, jnp.float32),
            b=jnp.eye(flat.shape[0], dtype=jnp.float32),
        )

    def ask(self, key: PRNGKey, state: XNESState) -> tuple[Population, XNESState]:
        mean, _ = ravel_pytree(state.mean)
        s = gaussian(key, (self.pop_size, mean.shape[0]))
        y = jnp.dot(s, state.b.T, precision=HIGHEST)  # rows B s_k
        return unflatten_population(mean[None] + state.sigma * y, state.mean), state

    def tell(
        self, state: XNESState, population: Population, fitness: Fitness
    ) -> tuple[XNESState, Metrics]:
        fitness = check_fitness(fitness, self.pop_size)
        mean, unravel = ravel_pytree(state.mean)
        dim = mean.shape[0]
        y = (flatten_population(population) - mean[None]) / state.sigma
        s = jnp.linalg.solve(state.b, y.T).T  # s_k = B^{-1} y_k
        utility = nes_utilities(fitness)
        grad_delta = jnp.dot(utility, s, precision=HIGHEST)
        grad_m = jnp.dot(s.T * utility[None], s, precision=HIGHEST)
        grad_m = 0.5 * (grad_m + grad_m.T) - jnp.sum(utility) * jnp.eye(dim)
        grad_sigma = jnp.trace(grad_m) / dim
        grad_b = grad_m - grad_sigma * jnp.eye(dim)

        std_lr = default_lr(dim) if self.std_lr is None else self.std_lr
        b_lr = default_lr(dim) if self.b_lr is None else self.b_lr
        step = jnp.dot(state.b, grad_delta, precision=HIGHEST)
        new_mean = mean + self.center_lr * state.sigma * step
        sigma = state.sigma * jnp.exp(0.5 * std_lr * grad_sigma)
        b = jnp.dot(state.b, expm(0.5 * b_lr * grad_b), precision=HIGHEST)
        # a float32 breakdown (sigma far below the mean's resolution) skips the generation
        finite = (
            (sigma > 0)
            & jnp.isfinite(sigma)
            & jnp.all(jnp.isfinite(b))
            & jnp.all(jnp.isfinite(new_mean))
        )
        new_state = XNESState(mean=unravel(new_mean), sigma=sigma, b=b)
        new_state = jax.tree.map(lambda a, o: jnp.where(finite, a, o), new_state, state)
        metrics = {
            "sigma": new_state.sigma,
            "grad_norm": jnp.linalg.norm(grad_delta),
            "skipped": 1.0 - finite.astype(jnp.float32),
        }
        return new_state, metrics

    def best(self, state: XNESState) -> Params:
        return state.mean
