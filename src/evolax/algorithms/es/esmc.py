"""ESMC: evolution strategies with meta-loss clipping (Merchant et al., 2021)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
import optax

from evolax.algorithms.base import (
    HIGHEST,
    GradientES,
    GradientESState,
    check_min_pop_size,
    check_std_decay,
    decayed_std,
    mirrored,
    normal,
)
from evolax.algorithms.shaping import Shaping, raw
from evolax.optim import optimizer_field
from evolax.validation import check_positive


@chex.dataclass(frozen=True, kw_only=True)
class ESMCState(GradientESState):
    """ESMC state: ``mean``, the isotropic ``std`` (``[]``) and the optimizer's state."""


class ESMC(GradientES[ESMCState]):
    """ES with meta-loss clipping (Merchant, Metz, Schoenholz & Cubuk, 2021, "Learn2Hop:
    Learned Optimization on Rough Landscapes").

    Antithetic ES whose control variate is the unperturbed mean's own fitness ``f_0``: each
    generation evaluates the mean itself (``b`` = 1 or 2 copies, averaged) and ``n =
    (pop_size - 1) // 2`` pairs ``mean +- std eps_i``, ``eps_i ~ N(0, I)``; the population is
    laid out ``[mean x b, mean + std eps_1..n, mean - std eps_1..n]``. A perturbation that is
    worse than the mean counts as the mean (the paper's loss clipped at the unperturbed loss,
    ``min(L(theta + std eps), L(theta))``; in fitness ``max(f, f_0)``), so on rough landscapes
    only improvements move the mean:
    ``g = sum_i [max(f_i+, f_0) - max(f_i-, f_0)] eps_i / (2 n std)``, followed with any optax
    optimizer. ``std`` decays geometrically to ``std_min``.

    Default hyper-parameters are evolax's :class:`~evolax.algorithms.OpenES` ones (the paper's
    meta-training settings are specific to learned optimizers); evosax's ``ESMC`` divides the
    estimate by ``n`` only, without ``2 std`` (a constant factor: the same up to the learning
    rate).

    Args:
        pop_size: number of evaluations, at least 3: one (odd ``pop_size``) or two (even) of
            the mean and ``(pop_size - 1) // 2`` antithetic pairs.
        optimizer: optax transformation for the mean (default ``optax.adam(0.01)``); it
            receives ``-g``, like a loss gradient.
        init_std: initial noise standard deviation, positive.
        std_decay: factor applied to ``std`` after each update, in ``(0, 1]``.
        std_min: floor of ``std``, ``>= 0``.
        fitness_shaping: ``(fitness, x) -> utilities`` applied to the whole population, the
            mean's evaluations included (default :func:`~evolax.algorithms.shaping.raw`, the
            paper's; a non-finite fitness counts as the generation's worst finite one).
    """

    pop_size: int = eqx.field(static=True)
    optimizer: optax.GradientTransformation = optimizer_field(optax.adam, 0.01)
    init_std: float = 0.1
    std_decay: float = 1.0
    std_min: float = 0.0
    fitness_shaping: Shaping = eqx.field(static=True, default=raw)

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 3, "for the mean and one antithetic pair")
        check_positive("init_std", self.init_std)
        check_std_decay(self.std_decay, self.std_min)

    @property
    def n_pairs(self) -> int:
        """``n``, the number of antithetic pairs per generation."""
        return (self.pop_size - 1) // 2

    @property
    def n_baseline(self) -> int:
        """``b``, the number of evaluations of the mean per generation (1 or 2)."""
        return self.pop_size - 2 * self.n_pairs

    def _init(self, key, x0):
        del key
        return ESMCState(**self._start(x0, jnp.asarray(self.init_std, x0.dtype)))

    def _ask(self, key, state):
        dim = state.mean.shape[0]
        eps = normal(key, (self.n_pairs, dim), state.mean)
        centre = jnp.broadcast_to(state.mean, (self.n_baseline, dim))
        return jnp.concatenate([centre, mirrored(state.mean, state.std * eps)]), state

    def _tell(self, key, state, x, fitness):
        b, n = self.n_baseline, self.n_pairs
        utility = self.fitness_shaping(fitness, x)
        baseline = jnp.mean(utility[:b])
        # each perturbation at least as good as the mean: only improvements count
        plus = jnp.maximum(utility[b : b + n], baseline)
        minus = jnp.maximum(utility[b + n :], baseline)
        eps = (x[b : b + n] - state.mean[None]) / state.std
        grad = jnp.dot(plus - minus, eps, precision=HIGHEST) / (2 * n * state.std)
        std = decayed_std(state.std, self.std_decay, self.std_min)
        new_state = state.replace(std=std, **self._ascend(state, grad))
        metrics = {"std": std, "grad_norm": jnp.linalg.norm(grad), "baseline": baseline}
        return new_state, metrics
