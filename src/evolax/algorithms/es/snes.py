"""SNES: separable natural evolution strategies (Schaul, Glasmachers & Schmidhuber, 2011)."""

from __future__ import annotations

import math

import chex
import equinox as eqx
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from evolax.algorithms.base import (
    HIGHEST,
    GradientESState,
    check_min_pop_size,
    normal,
)
from evolax.algorithms.es.seeded import SeededES
from evolax.algorithms.shaping import Shaping, nes_utilities
from evolax.optim import optimizer_field
from evolax.seeded import noise_sums
from evolax.validation import check_positive


@chex.dataclass(frozen=True, kw_only=True)
class SNESState(GradientESState):
    """SNES state: the search distribution ``N(mean, diag(std^2))`` (``std``: ``[D]``) and
    the optimizer's state."""


def default_std_lr(dim: int) -> float:
    """Wierstra et al. (2014), table 1: ``(3 + log d) / (5 sqrt d)``."""
    return (3 + math.log(dim)) / (5 * math.sqrt(dim))


class SNES(SeededES[SNESState]):
    """Separable NES (Schaul et al., 2011; Wierstra et al., 2014, algorithm 6).

    Samples ``x_k = mean + std * s_k`` with ``s_k ~ N(0, I)``, shapes fitness into utilities
    ``u_k`` (NES utilities by default) and follows the natural gradient: the mean steps along
    ``std * sum_k u_k s_k`` (with ``optimizer``; the paper's ``eta_mu = 1`` is
    ``optax.sgd(1.0)``) and ``std *= exp(std_lr / 2 * sum_k u_k (s_k^2 - 1))``.

    Args:
        pop_size: number of samples, at least 2 (the paper's default is
            :func:`~evolax.algorithms.cma.cma_es.default_pop_size`).
        optimizer: optax transformation for the mean's step; it receives the negated
            natural gradient, like a loss gradient.
        std_lr: learning rate of the standard deviation; ``None`` uses the paper's
            :func:`default_std_lr` of the genome's dimension.
        init_std: initial standard deviation, positive.
        fitness_shaping: ``(fitness, x) -> utilities`` (:mod:`evolax.algorithms.shaping`).
        seeded: hold the population as seeds (:mod:`evolax.seeded`), as
            :class:`~evolax.algorithms.PGPE`'s ``seeded``: memory ``O(D)``, not ``O(pop D)``.
    """

    pop_size: int = eqx.field(static=True)
    optimizer: optax.GradientTransformation = optimizer_field(optax.sgd, 1.0)
    std_lr: float | None = None
    init_std: float = 1.0
    fitness_shaping: Shaping = eqx.field(static=True, default=nes_utilities)
    seeded: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 2, "to rank samples")
        if self.std_lr is not None:
            check_positive("std_lr", self.std_lr)
        check_positive("init_std", self.init_std)

    def _init(self, key, x0):
        del key
        std = jnp.full(x0.shape, self.init_std, x0.dtype)
        return SNESState(**self._start(x0, std))

    def _ask(self, key, state):
        s = normal(key, (self.pop_size, state.mean.shape[0]), state.mean)
        return state.mean[None] + state.std[None] * s, state

    def _tell_seeds(self, state, population, fitness):
        utility = self.fitness_shaping(fitness, None)
        noise, squares = (ravel_pytree(s)[0] for s in noise_sums(population, utility, utility))
        return self._update(state, noise, squares - jnp.sum(utility))

    def _tell(self, key, state, x, fitness):
        s = (x - state.mean[None]) / state.std[None]
        utility = self.fitness_shaping(fitness, x)
        # population sums as products (XLA's CPU column reductions are slow)
        grad_mean = jnp.dot(utility, s, precision=HIGHEST)
        return self._update(state, grad_mean, jnp.dot(utility, s**2 - 1.0, precision=HIGHEST))

    def _update(self, state, grad_mean, grad_std):
        """The update from ``sum_k u_k s_k`` and ``sum_k u_k (s_k^2 - 1)``."""
        dim = state.mean.shape[0]
        std_lr = default_std_lr(dim) if self.std_lr is None else self.std_lr
        std = state.std * jnp.exp(0.5 * std_lr * grad_std)
        new_state = state.replace(std=std, **self._ascend(state, state.std * grad_mean))
        return new_state, {"std": jnp.mean(std), "grad_norm": jnp.linalg.norm(grad_mean)}
