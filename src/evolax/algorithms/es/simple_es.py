"""Simple ES: the classic (mu/mu, lambda)-ES with a per-coordinate spread estimated from the
selected steps, as evosax's ``SimpleES``."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
import numpy as np

from evolax.algorithms.base import (
    HIGHEST,
    DistributionAlgorithm,
    DistributionState,
    check_min_pop_size,
    normal,
)
from evolax.algorithms.shaping import rank_utilities
from evolax.validation import check_in_interval, check_positive, check_positive_int


@chex.dataclass(frozen=True, kw_only=True)
class SimpleESState(DistributionState):
    """Simple ES state: the search distribution ``N(mean, diag(std^2))`` (``std``: ``[D]``)."""


class SimpleES(DistributionAlgorithm[SimpleESState]):
    """The (mu/mu_I, lambda)-ES of Rechenberg (1973, "Evolutionsstrategie: Optimierung
    technischer Systeme nach Prinzipien der biologischen Evolution") and Beyer & Schwefel
    (2002, "Evolution strategies - A comprehensive introduction"), with the spread update of
    evosax's ``SimpleES``.

    Samples ``x_i = mean + std * z_i`` with ``z_i ~ N(0, I)`` (``std`` is one deviation per
    coordinate), selects the ``mu`` best and recombines them with equal weights ``w = 1 / mu``
    (intermediate recombination; a non-finite fitness gets no weight): ``mean <- mean + sum_i
    w_i (x_i:lambda - mean)``. The spread follows the selected steps' root mean square around
    the old mean, coordinate by coordinate: ``std <- (1 - std_lr) std + std_lr sqrt(sum_i w_i
    (x_i:lambda - mean)^2)``. This spread rule is evosax's (the "simple Gaussian ES" of Ha,
    2017, "A Visual Guide to Evolution Strategies", smoothed), not Beyer & Schwefel's mutative
    self-adaptation of ``sigma``: it shrinks the spread only where selection prefers short
    steps, i.e. close to an optimum. Memory and time are ``O(lambda D)``.

    Args:
        pop_size: ``lambda``, at least 2.
        init_std: the initial deviation of every coordinate, positive.
        std_lr: the rate of the spread's moving average in ``(0, 1]`` (evosax's ``c_std``).
        n_parents: ``mu``, the number of selected parents, from 1 to ``pop_size - 1``;
            ``None`` for evosax's ``pop_size // 2``.
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0
    std_lr: float = 0.1
    n_parents: int | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 2, "to select parents")
        check_positive("init_std", self.init_std)
        check_in_interval("std_lr", self.std_lr, 0, 1, low_open=True)
        if self.n_parents is not None:
            check_positive_int("n_parents", self.n_parents)
            if self.n_parents >= self.pop_size:
                raise ValueError(
                    f"n_parents must be below pop_size = {self.pop_size} (select from the "
                    f"population), got {self.n_parents}"
                )

    @property
    def weights(self) -> np.ndarray:
        """The recombination weights by rank, best first: ``1 / mu`` for the ``mu`` best, then
        zeros."""
        mu = self.pop_size // 2 if self.n_parents is None else self.n_parents
        return np.where(np.arange(self.pop_size) < mu, 1.0 / mu, 0.0)

    def _init(self, key, x0):
        del key
        return SimpleESState(mean=x0, std=jnp.full(x0.shape, self.init_std, x0.dtype))

    def _ask(self, key, state):
        z = normal(key, (self.pop_size, state.mean.shape[0]), state.mean)
        return state.mean[None] + state.std[None] * z, state

    def _tell(self, key, state, x, fitness):
        del key
        weights = rank_utilities(fitness, self.weights)  # non-finite fitness: 0
        steps = x - state.mean[None]
        # population sums as products (XLA's CPU column reductions are slow)
        mean = state.mean + jnp.dot(weights, steps, precision=HIGHEST)
        spread = jnp.sqrt(jnp.dot(weights, steps**2, precision=HIGHEST))
        std = (1 - self.std_lr) * state.std + self.std_lr * spread
        return state.replace(mean=mean, std=std), {"std": jnp.mean(std)}
