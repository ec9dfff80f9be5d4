"""SNES: separable natural evolution strategies (Schaul, Glasmachers & Schmidhuber, 2011)."""

from __future__ import annotations

import math

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
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


@chex.dataclass(frozen=True)
class SNESState:
    """SNES state: the search distribution ``N(center, diag(std^2))``.

    Attributes:
        center: the mean, a genome pytree (what :meth:`SNES.best` returns).
        std: per-parameter standard deviation, ``f32[D]``.
    """

    center: Params
    std: Float[Array, " dim"]


def default_std_lr(dim: int) -> float:
    """Wierstra et al. (2014), table 1: ``(3 + log d) / (5 sqrt d)``."""
    return (3 + math.log(dim)) / (5 * math.sqrt(dim))


def default_pop_size(dim: int) -> int:
    """Wierstra et al. (2014), table 1: ``4 + floor(3 log d)``."""
    return 4 + int(3 * math.log(dim))


class SNES(Algorithm):
    """Separable NES (Schaul et al., 2011; Wierstra et al., 2014, algorithm 6).

    Samples ``x_k = center + std * s_k`` with ``s_k ~ N(0, I)``, ranks the samples into NES
    utilities ``u_k`` (:func:`~evolax.algorithms.shaping.nes_utilities`) and follows the
    natural gradient: ``center += center_lr * std * sum_k u_k s_k`` and ``std *=
    exp(std_lr / 2 * sum_k u_k (s_k^2 - 1))``.

    Args:
        pop_size: number of samples (the paper's default is :func:`default_pop_size`).
        center_lr: learning rate of the mean (the paper: 1).
        std_lr: learning rate of the standard deviation; ``None`` uses the paper's
            :func:`default_std_lr` of the genome's dimension.
        init_std: initial standard deviation, positive.
    """

    pop_size: int = eqx.field(static=True)
    center_lr: float = 1.0
    std_lr: float | None = None
    init_std: float = 1.0

    def __check_init__(self):
        check_positive_int("pop_size", self.pop_size)
        if self.pop_size < 2:
            raise ValueError(f"pop_size must be at least 2 to rank samples, got {self.pop_size}")
        check_positive("center_lr", self.center_lr)
        if self.std_lr is not None:
            check_positive("std_lr", self.std_lr)
        check_positive("init_std", self.init_std)

    def init(self, key: PRNGKey, x0: Params) -> SNESState:
        del key
        flat, _ = ravel_pytree(x0)
        center = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), x0)
        return SNESState(center=center, std=jnp.full(flat.shape, self.init_std, jnp.float32))

    def ask(self, key: PRNGKey, state: SNESState) -> tuple[Population, SNESState]:
        center, _ = ravel_pytree(state.center)
        s = gaussian(key, (self.pop_size, center.shape[0]))
        return unflatten_population(center[None] + state.std[None] * s, state.center), state

    def tell(
        self, state: SNESState, population: Population, fitness: Fitness
    ) -> tuple[SNESState, Metrics]:
        fitness = check_fitness(fitness, self.pop_size)
        center, unravel = ravel_pytree(state.center)
        s = (flatten_population(population) - center[None]) / state.std[None]
        utility = nes_utilities(fitness)
        # population sums as products (XLA's CPU column reductions are slow)
        grad_center = jnp.dot(utility, s, precision="highest")
        grad_std = jnp.dot(utility, s**2 - 1.0, precision="highest")
        std_lr = default_std_lr(center.shape[0]) if self.std_lr is None else self.std_lr
        center = center + self.center_lr * state.std * grad_center
        std = state.std * jnp.exp(0.5 * std_lr * grad_std)
        new_state = SNESState(center=unravel(center), std=std)
        return new_state, {"std_mean": jnp.mean(std), "grad_norm": jnp.linalg.norm(grad_center)}

    def best(self, state: SNESState) -> Params:
        return state.center
