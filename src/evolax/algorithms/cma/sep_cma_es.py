"""Sep-CMA-ES: CMA-ES with a diagonal covariance matrix (Ros & Hansen, 2008; pycma's
``CMA_diagonal``)."""

from __future__ import annotations

import math
from typing import ClassVar

import chex
import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.algorithms.base import HIGHEST
from evolax.algorithms.cma.cma_family import (
    CMAFamily,
    CMAParameters,
    CMAState,
    cma_parameters,
    moved,
)


@chex.dataclass(frozen=True, kw_only=True)
class SepCMAESState(CMAState):
    """Sep-CMA-ES state: the family's fields plus the diagonal of ``C``.

    Attributes:
        cov_diag: the diagonal of ``C``, ``[D]``.
    """

    cov_diag: Float[Array, " dim"]


class SepCMAES(CMAFamily[SepCMAESState]):
    """Separable CMA-ES: CMA-ES with a diagonal covariance matrix (Ros & Hansen, 2008, "A Simple
    Modification in CMA-ES Achieving Linear Time and Space Complexity"), as pycma's
    ``CMA_diagonal=True``.

    CMA-ES (:class:`~evolax.algorithms.cma.cma_family.CMAFamily`) restricted to a diagonal ``C``,
    so that sampling and updates cost ``O(n)`` per individual. The update is pycma 4's
    (``CMAEvolutionStrategy.tell`` with ``flg_diagonal``, ``transformations.DiagonalDecoding.
    update``): with ``z_k = C^{-1/2} y_k``, ``p_c`` accumulating whitened mean steps
    (:attr:`~evolax.algorithms.cma.cma_family.CMAFamily.whitened_c_path`) and ``c1a = c1 (1 - (1 -
    h_sigma) c_c (2 - c_c))``,

    ``C_ii <- C_ii exp(ln 2 [c1a (p_c,i^2 - 1) + c_mu sum_k w_k (z_k,i^2 - 1)])``,

    a multiplicative update that keeps ``C`` positive although the worse half of the
    population has negative weights (active, as in pycma; Ros & Hansen weight only the ``mu``
    best, and ``tell`` then read only their rows). The learning rates are pycma's for
    ``CMA_diagonal`` (:func:`~evolax.algorithms.cma.cma_family.cma_parameters` with
    ``separable``), close to Ros & Hansen's ``(n + 2) / 3`` times CMA-ES's.

    Args:
        pop_size: ``lambda``, at least 2.
        init_std: the initial step size ``sigma_0``, positive.
        tol_x: TolX of ``should_stop``; ``None`` means ``1e-12 * init_std``.
        tol_fun: TolFun of ``should_stop``.
        tol_condition: ``should_stop`` fires when ``max C_ii / min C_ii`` exceeds this.
        fitness_history: record each generation's best, median and worst fitness for the
            termination criteria TolFun, EqualFunValues and Stagnation of ``should_stop``;
            ``False`` leaves them out (they never fire) and ``tell`` launches about 20 kernels
            fewer (docs/results.md, kernels per generation).
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0
    tol_x: float | None = None
    tol_fun: float = 1e-12
    tol_condition: float = 1e14
    fitness_history: bool = eqx.field(static=True, default=True)
    whitened_c_path: ClassVar[bool] = True

    def parameters(self, dim: int) -> CMAParameters:
        """pycma's ``CMA_diagonal`` strategy parameters for dimension ``dim``."""
        return cma_parameters(dim, self.pop_size, active=True, separable=True)

    def _init(self, key, x0):
        del key
        return SepCMAESState(**self._init_paths(x0), cov_diag=jnp.ones_like(x0))

    def _sample(self, state, z):
        return jnp.sqrt(state.cov_diag)[None] * z

    def _inverse_sqrt(self, state, v):
        return v / jnp.sqrt(state.cov_diag)

    def _covariance(self, state, p, y, weights, p_c, h_sigma, generation):
        c1a = p.c1 * (1 - (1 - h_sigma) * p.c_c * (2 - p.c_c))
        # sum_k w_k (z_k^2 - 1) with z_k = y_k / sqrt(C): one product over y^2, not over z
        rank_mu = jnp.dot(weights, y**2, precision=HIGHEST) / state.cov_diag - jnp.sum(weights)
        cov_diag = state.cov_diag * jnp.exp(math.log(2) * (c1a * (p_c**2 - 1) + p.c_mu * rank_mu))
        return dict(cov_diag=jnp.maximum(cov_diag, jnp.max(cov_diag) * 1e-20))

    def _axis_lengths(self, state):
        return jnp.sqrt(state.cov_diag)

    def _diagonal(self, state):
        return state.cov_diag

    def _no_effect_axis(self, state):
        axes = 0.1 * state.std * jnp.sqrt(state.cov_diag)
        return jnp.any(~moved(state.mean, state.mean_residual, axes))
