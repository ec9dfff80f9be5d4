"""Sep-CMA-ES: CMA-ES with a diagonal covariance matrix (Ros & Hansen, 2008)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.algorithms.base import HIGHEST
from evolax.algorithms.cma_family import CMAFamily, CMAParameters, CMAState, cma_parameters


@chex.dataclass(frozen=True, kw_only=True)
class SepCMAESState(CMAState):
    """Sep-CMA-ES state: the family's fields plus the diagonal of ``C``.

    Attributes:
        cov_diag: the diagonal of ``C``, ``[D]``.
    """

    cov_diag: Float[Array, " dim"]


class SepCMAES(CMAFamily[SepCMAESState]):
    """Separable CMA-ES (Ros & Hansen, 2008, "A Simple Modification in CMA-ES Achieving Linear
    Time and Space Complexity").

    CMA-ES (:class:`~evolax.algorithms.cma_family.CMAFamily`) restricted to a diagonal ``C``:
    sampling, the paths and ``C_ii <- (1 + c1 delta(h_sigma) - c1 - c_mu) C_ii + c1 p_c,i^2 +
    c_mu sum_i w_i y_i,i^2`` cost ``O(n)`` per individual. The covariance learning rates
    ``c1, c_mu`` of the tutorial are multiplied by ``(n + 2) / 3`` (section 2.1); as in that
    paper, only the ``mu`` best get (positive) weights.

    Args:
        pop_size: ``lambda``, at least 2.
        init_std: the initial step size ``sigma_0``, positive.
        tol_x: TolX of ``should_stop``; ``None`` means ``1e-12 * init_std``.
        tol_fun: TolFun of ``should_stop``.
        tol_condition: ``should_stop`` fires when ``max C_ii / min C_ii`` exceeds this.
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0
    tol_x: float | None = None
    tol_fun: float = 1e-12
    tol_condition: float = 1e14

    def parameters(self, dim: int) -> CMAParameters:
        """The strategy parameters for dimension ``dim`` (no negative weights)."""
        return cma_parameters(dim, self.pop_size, active=False, separable=True)

    def _init(self, key, x0):
        del key
        return SepCMAESState(**self._init_paths(x0), cov_diag=jnp.ones_like(x0))

    def _sample(self, state, z):
        return jnp.sqrt(state.cov_diag)[None] * z

    def _whiten(self, state, y):
        return y / jnp.sqrt(state.cov_diag)[None]

    def _unwhiten(self, state, z):
        return z

    def _covariance(self, state, p, y, z, weights, p_c, h_sigma, generation):
        delta_h = (1 - h_sigma) * p.c_c * (2 - p.c_c)
        decay = 1 + p.c1 * delta_h - p.c1 - p.c_mu  # the weights sum to 1
        rank_mu = jnp.dot(weights, y**2, precision=HIGHEST)
        cov_diag = decay * state.cov_diag + p.c1 * p_c**2 + p.c_mu * rank_mu
        return dict(cov_diag=jnp.maximum(cov_diag, jnp.max(cov_diag) * 1e-20))

    def _axis_lengths(self, state):
        return jnp.sqrt(state.cov_diag)

    def _diagonal(self, state):
        return state.cov_diag

    def _no_effect_axis(self, state):
        return jnp.any(state.mean + 0.1 * state.std * jnp.sqrt(state.cov_diag) == state.mean)
