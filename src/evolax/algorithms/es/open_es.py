"""OpenAI-ES: the natural-evolution-strategy gradient of Salimans et al. (2017)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from evolax.algorithms.base import HIGHEST, GradientESState, decayed_std, mirrored, normal
from evolax.algorithms.es.common import check_open_es_settings, noise_weights
from evolax.algorithms.es.seeded import SeededES
from evolax.algorithms.shaping import Shaping, centered_rank
from evolax.optim import optimizer_field
from evolax.seeded import noise_sums


@chex.dataclass(frozen=True, kw_only=True)
class OpenESState(GradientESState):
    """OpenES state: ``mean``, the isotropic ``std`` (``[]``) and the optimizer's state."""


class OpenES(SeededES[OpenESState]):
    """OpenAI-ES (Salimans, Ho, Chen, Sidor & Sutskever, 2017, "Evolution Strategies as a
    Scalable Alternative to Reinforcement Learning").

    Samples ``x_i = mean + std * eps_i`` with ``eps_i ~ N(0, I)`` (antithetic pairs ``+-eps``
    by default, laid out ``[mean + std eps_1..n, mean - std eps_1..n]``), shapes fitness into
    utilities ``u_i`` (centred ranks by default; chain :func:`~evolax.algorithms.shaping.
    weight_decay` before them for the paper's L2 penalty), and follows the search-gradient
    estimate ``g = sum_i u_i eps_i / (pop_size * std)`` with any optax optimizer. ``std``
    decays geometrically to ``std_min``.

    Args:
        pop_size: number of individuals (even when ``antithetic``).
        optimizer: optax transformation for the mean (default ``optax.adam(0.01)``); it
            receives ``-g``, like a loss gradient.
        init_std: initial noise standard deviation, positive.
        std_decay: factor applied to ``std`` after each update, in ``(0, 1]``.
        std_min: floor of ``std``, ``>= 0``.
        antithetic: sample mirrored pairs (halves the variance of the estimate).
        fitness_shaping: ``(fitness, x) -> utilities`` (:mod:`evolax.algorithms.shaping`).
        seeded: hold the population as seeds (:mod:`evolax.seeded`), as
            :class:`~evolax.algorithms.PGPE`'s ``seeded``: memory ``O(D)``, not ``O(pop D)``
            (:class:`~evolax.algorithms.LowRankES` adds low-rank members).
    """

    pop_size: int = eqx.field(static=True)
    optimizer: optax.GradientTransformation = optimizer_field(optax.adam, 0.01)
    init_std: float = 0.1
    std_decay: float = 1.0
    std_min: float = 0.0
    antithetic: bool = eqx.field(static=True, default=True)
    fitness_shaping: Shaping = eqx.field(static=True, default=centered_rank)
    seeded: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        check_open_es_settings(self)

    def _init(self, key, x0):
        del key
        return OpenESState(**self._start(x0, jnp.asarray(self.init_std, x0.dtype)))

    def _ask(self, key, state):
        dim = state.mean.shape[0]
        if self.antithetic:
            x = mirrored(state.mean, state.std * normal(key, (self.pop_size // 2, dim), state.mean))
        else:
            x = state.mean[None] + state.std * normal(key, (self.pop_size, dim), state.mean)
        return x, state

    def _seed_form(self):
        return 0, self.antithetic

    def _weights(self, utility):
        return noise_weights(utility, self.antithetic)

    def _tell_seeds(self, state, population, fitness):
        noise, _ = noise_sums(population, self._weights(self.fitness_shaping(fitness, None)))
        return self._update(state, ravel_pytree(noise)[0])

    def _tell(self, key, state, x, fitness):
        weights = self._weights(self.fitness_shaping(fitness, x))
        eps = (x[: weights.shape[0]] - state.mean[None]) / state.std  # the first half's
        # the population sum as a product (XLA's CPU column reductions are slow)
        return self._update(state, jnp.dot(weights, eps, precision=HIGHEST))

    def _update(self, state, noise):
        """The update from ``sum_i w_i eps_i``."""
        grad = noise / (self.pop_size * state.std)
        std = decayed_std(state.std, self.std_decay, self.std_min)
        new_state = state.replace(std=std, **self._ascend(state, grad))
        return new_state, {"std": std, "grad_norm": jnp.linalg.norm(grad)}
