"""iAMaLGaM with a diagonal covariance (Bosman, Grahl & Thierens, 2013)."""

from __future__ import annotations

from typing import ClassVar

import chex
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.algorithms.base import HIGHEST
from evolax.algorithms.cma.amalgam import AMaLGaMState, Guideline, IAMaLGaM, guideline_pop_size

__all__ = ["IAMaLGaMUnivariate", "IAMaLGaMUnivariateState", "default_pop_size"]

UNIVARIATE = Guideline(pop_coefficient=4.0, cov=(-0.40, 0.15, -0.034), shift=(-0.31, 0.27, 0.067))
"""The paper's settings for a diagonal covariance: ``n = 4 sqrt(l)``, ``eta_Sigma = 1 -
exp(-0.40 |S|^0.15 / l^-0.034)``, ``eta_shift = 1 - exp(-0.31 |S|^0.27 / l^0.067)``."""


def default_pop_size(dim: int, selection_ratio: float = 0.35, elitist: bool = True) -> int:
    """The paper's population size ``n = 4 sqrt(l)`` (at least ``floor(2 / tau + 1)``) as
    ``pop_size``: ``n - 1`` new samples besides the elite (``n`` without elitism)."""
    return guideline_pop_size(dim, UNIVARIATE.pop_coefficient, selection_ratio, elitist)


@chex.dataclass(frozen=True, kw_only=True)
class IAMaLGaMUnivariateState(AMaLGaMState):
    """iAMaLGaM-Univariate state: the shared fields plus the variances.

    Attributes:
        cov_diag: the diagonal of ``Sigma``, ``[D]``.
    """

    cov_diag: Float[Array, " dim"]


class IAMaLGaMUnivariate(IAMaLGaM[IAMaLGaMUnivariateState]):
    """iAMaLGaM with a diagonal covariance (Bosman, Grahl & Thierens, 2013, "Benchmarking
    Parameter-Free AMaLGaM on Functions With and Without Noise", Evolutionary Computation
    21(3): the univariate factorisation).

    :class:`~evolax.algorithms.cma.iamalgam_full.IAMaLGaMFull` with ``Sigma`` restricted to its
    diagonal: samples ``x = mu + sqrt(c_mult Sigma_ii) z``, the SDR whitens coordinate by
    coordinate, ``Sigma_ii <- (1 - eta_Sigma) Sigma_ii + eta_Sigma <(x_i - mu_i)^2>_S``; the
    rest (elitism, AMS, AVS, the first two ``tell`` s) is the same
    (:class:`~evolax.algorithms.cma.amalgam.IAMaLGaM`). Its own guideline (:data:`UNIVARIATE`)
    learns faster and needs a smaller population, ``n = 4 sqrt(D)``. A generation costs ``O(n
    D)``, but it cannot follow a rotated valley.

    Its fields are :class:`~evolax.algorithms.cma.amalgam.IAMaLGaM`'s; those below read
    differently here.

    Args:
        pop_size: new samples per generation, ``n - 1`` of the paper's ``n`` (``n`` without
            elitism); the paper's is :func:`default_pop_size` (``n = 4 sqrt(D)``).
        cov_lr: ``eta_Sigma`` in ``(0, 1]``; ``None`` for the paper's ``1 - exp(-0.40
            |S|^0.15 / D^-0.034)``.
        shift_lr: ``eta_shift`` in ``(0, 1]``; ``None`` for the paper's ``1 - exp(-0.31
            |S|^0.27 / D^0.067)``.
    """

    guideline: ClassVar[Guideline] = UNIVARIATE

    def _init(self, key, x0):
        del key
        return IAMaLGaMUnivariateState(**self._init_common(x0))

    def _init_covariance(self, x0):
        return dict(cov_diag=jnp.full_like(x0, self.init_std**2))

    def _sample(self, state, z):
        return jnp.sqrt(state.cov_diag)[None] * z

    def _whiten(self, state, v):
        return v / jnp.sqrt(state.cov_diag)

    def _estimate(self, deviations, weights):
        return jnp.dot(weights, deviations**2, precision=HIGHEST)

    def _update_covariance(self, state, estimate, first, lr):
        blended = (1 - lr) * state.cov_diag + lr * estimate
        return dict(cov_diag=jnp.where(first, estimate, blended))

    def _variances(self, covariance):
        return covariance["cov_diag"]
