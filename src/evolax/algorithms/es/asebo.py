"""ASEBO: adaptive ES-active subspaces (Choromanski, Pacchiano, Parker-Holder, Tang &
Sindhwani, 2019)."""

from __future__ import annotations

import math

import chex
import equinox as eqx
import jax.numpy as jnp
import optax
from jaxtyping import Array, Bool, Float

from evolax.algorithms.base import (
    HIGHEST,
    GradientES,
    GradientESState,
    check_antithetic_pop_size,
    mirrored,
)
from evolax.algorithms.es.common import principal_directions, subspace_sample
from evolax.algorithms.shaping import Shaping, raw
from evolax.optim import optimizer_field
from evolax.validation import (
    check_in_interval,
    check_positive,
    check_positive_int,
    concrete_number,
)


@chex.dataclass(frozen=True, kw_only=True)
class ASEBOState(GradientESState):
    """ASEBO state: ``mean``, the step size ``std`` (``[]``), the optimizer's state and the
    leading eigenpairs of the gradients' decayed second moment ``Cov_t``.

    Attributes:
        basis: ``Cov_t``'s leading eigenvectors as orthonormal rows, ``[m, D]`` (``m =
            min(max_rank, D)``; rows of negligible eigenvalues are 0), largest first.
        eigenvalues: their eigenvalues, ``[m]``, descending (0 where negligible).
        trace: ``trace(Cov_t)``, ``[]``: the total variance the PCA threshold refers to.
        alpha: the weight of the isotropic part of the next sampling covariance, ``[]``.
    """

    basis: Float[Array, "rank dim"]
    eigenvalues: Float[Array, " rank"]
    trace: Float[Array, ""]
    alpha: Float[Array, ""]


class ASEBO(GradientES[ASEBOState]):
    """Adaptive ES-active subspaces for blackbox optimization (Choromanski, Pacchiano,
    Parker-Holder, Tang & Sindhwani, 2019, "From Complexity to Simplicity: Adaptive
    ES-Active Subspaces for Blackbox Optimization", algorithm 1).

    Samples ``n = pop_size / 2`` antithetic pairs ``mean +- std g_i`` (laid out ``[mean +
    std g_1..n, mean - std g_1..n]``) with ``g_i ~ N(0, alpha / D I + (1 - alpha) / r U
    U^T)`` renormalised so that ``|g_i| ~ chi(D)`` (step 4: the norm of an isotropic draw),
    and estimates ``grad = sum_i (f_i+ - f_i-) g_i / (2 n std)``. ``U`` spans the active
    subspace: the ``r`` leading eigenvectors of the gradients' decayed second moment
    ``Cov_{t+1} = gamma Cov_t + (1 - gamma) grad grad^T``, ``r`` the fewest whose eigenvalues
    hold ``pca_threshold`` of its trace. ``alpha`` adapts the exploration as the authors'
    code does (in place of the bandit of the paper's algorithm 2, which needs extra
    evaluations): ``alpha = |(I - U U^T) grad| / |U U^T grad|`` clipped to ``[0, 1]``, large
    when the gradient leaves the subspace. The first ``warmup`` generations sample
    isotropically (the paper's ``l`` iterations of full sampling). The mean follows ``grad``
    with any optax optimizer (the paper's step ``theta += eta grad`` is ``optax.sgd(eta)``).

    Deviations from the paper, all for fixed shapes: the population is always ``pop_size``
    (the paper samples ``n_t = r`` directions), and ``Cov_t`` (``D x D``) is kept as its
    ``max_rank`` leading eigenpairs, updated each generation from the thin SVD of those and
    the new gradient (exact while ``Cov_t`` has rank at most ``max_rank``: the first
    ``max_rank`` generations). evosax's ``ASEBO`` instead takes a fixed number of directions
    from the centred last ``subspace_dims + 1`` gradients (centring removes the mean gradient
    direction, which the paper's uncentred ``Cov_t`` keeps first), ignores its ``grad_decay``,
    does not renormalise the samples, and rescales the gradient to norm ``D`` before its
    optimizer.

    Defaults: ``gamma = 0.99``, ``pca_threshold = 0.995``, ``warmup = 70``, ``std = 0.1`` and
    ``optax.adam(0.05)`` are the authors' code's (its ``decay, threshold, k, sigma`` and Adam
    learning rate); ``max_rank`` is evolax's.

    Args:
        pop_size: ``2 n``, even and at least 2.
        optimizer: optax transformation for the mean (default ``optax.adam(0.05)``); it
            receives ``-grad``, like a loss gradient.
        init_std: ``sigma``, the smoothing step size, positive (fixed): each coordinate of an
            isotropic perturbation has standard deviation ``sigma``.
        grad_decay: ``gamma``, the decay of the gradients' second moment, in ``[0, 1)``.
        pca_threshold: ``epsilon``, the fraction of ``trace(Cov_t)`` the active subspace
            holds, in ``(0, 1]``.
        max_rank: the number of eigenpairs of ``Cov_t`` kept (at most ``D``), at least 1.
        warmup: the number of generations of isotropic sampling, ``>= 0``.
        fitness_shaping: ``(fitness, x) -> utilities`` (default
            :func:`~evolax.algorithms.shaping.raw`, the paper's function values; the authors'
            code standardises them, :func:`~evolax.algorithms.shaping.z_score`).
    """

    pop_size: int = eqx.field(static=True)
    optimizer: optax.GradientTransformation = optimizer_field(optax.adam, 0.05)
    init_std: float = 0.1
    grad_decay: float = 0.99
    pca_threshold: float = 0.995
    max_rank: int = eqx.field(static=True, default=50)
    warmup: int = 70
    fitness_shaping: Shaping = eqx.field(static=True, default=raw)

    def __check_init__(self):
        check_antithetic_pop_size(self.pop_size)
        check_positive("init_std", self.init_std)
        check_in_interval("grad_decay", self.grad_decay, 0, 1, high_open=True)
        check_in_interval("pca_threshold", self.pca_threshold, 0, 1, low_open=True)
        check_positive_int("max_rank", self.max_rank)
        warmup = concrete_number(self.warmup)
        if isinstance(self.warmup, bool) or (
            warmup is not None and not (math.isfinite(warmup) and warmup >= 0 and warmup % 1 == 0)
        ):
            raise ValueError(f"warmup must be a non-negative integer, got {self.warmup!r}")

    def _init(self, key, x0):
        del key
        rank = min(self.max_rank, x0.shape[0])
        zero = jnp.zeros([], x0.dtype)
        return ASEBOState(
            **self._start(x0, jnp.asarray(self.init_std, x0.dtype)),
            basis=jnp.zeros((rank, x0.shape[0]), x0.dtype),
            eigenvalues=jnp.zeros(rank, x0.dtype),
            trace=zero,
            alpha=jnp.ones([], x0.dtype),
        )

    def active(self, state: ASEBOState) -> Bool[Array, " rank"]:
        """Which rows of ``state.basis`` span the active subspace: the fewest leading ones
        whose eigenvalues reach ``pca_threshold`` of ``trace(Cov_t)``."""
        held = jnp.cumsum(state.eigenvalues)
        r = 1 + jnp.sum(held < self.pca_threshold * state.trace)
        return (jnp.arange(state.eigenvalues.shape[0]) < r) & (state.eigenvalues > 0)

    def _ask(self, key, state):
        alpha = jnp.where(state.generation >= self.warmup, state.alpha, 1.0)
        g, z = subspace_sample(key, state.basis, self.active(state), alpha, self.pop_size // 2)
        norm = jnp.linalg.norm(g, axis=1, keepdims=True)
        g = g * jnp.linalg.norm(z, axis=1, keepdims=True) / jnp.where(norm > 0, norm, 1.0)
        return mirrored(state.mean, state.std * g), state

    def _tell(self, key, state, x, fitness):
        n = self.pop_size // 2
        utility = self.fitness_shaping(fitness, x)
        g = (x[:n] - state.mean[None]) / state.std  # the second half mirrors it
        grad = jnp.dot(utility[:n] - utility[n:], g, precision=HIGHEST) / (2 * n * state.std)

        # the gradient's share outside the subspace it was sampled in sets the exploration
        coefficients = jnp.dot(state.basis, grad, precision=HIGHEST) * self.active(state)
        inside = jnp.linalg.norm(coefficients)
        outside = jnp.linalg.norm(grad - jnp.dot(coefficients, state.basis, precision=HIGHEST))
        ratio = outside / jnp.where(inside > 0, inside, 1.0)
        alpha = jnp.where(inside > 0, jnp.clip(ratio, 0.0, 1.0), 1.0)

        # Cov_{t+1} = gamma Cov_t + (1 - gamma) grad grad^T, as its leading eigenpairs
        gamma = self.grad_decay
        rows = jnp.concatenate(
            [jnp.sqrt(gamma * state.eigenvalues)[:, None] * state.basis,
             jnp.sqrt(1 - gamma) * grad[None]]
        )  # fmt: skip
        values, directions = principal_directions(rows)
        rank = state.eigenvalues.shape[0]
        new_state = state.replace(
            basis=directions[:rank],
            eigenvalues=values[:rank],
            trace=gamma * state.trace + (1 - gamma) * jnp.dot(grad, grad, precision=HIGHEST),
            alpha=alpha,
            **self._ascend(state, grad),
        )
        metrics = {
            "std": state.std,
            "grad_norm": jnp.linalg.norm(grad),
            "alpha": alpha,
            "subspace_dims": jnp.sum(self.active(new_state)).astype(jnp.float32),
        }
        return new_state, metrics

    def _healthy(self, state):
        return super()._healthy(state) & jnp.all(jnp.isfinite(state.basis))
