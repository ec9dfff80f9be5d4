"""iAMaLGaM with a full covariance matrix (Bosman, Grahl & Thierens, 2013)."""

from __future__ import annotations

from typing import ClassVar

import chex
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular
from jaxtyping import Array, Float

from evolax.algorithms.base import HIGHEST
from evolax.algorithms.cma.amalgam import AMaLGaMState, Guideline, IAMaLGaM, guideline_pop_size
from evolax.algorithms.unbatched import one_at_a_time

__all__ = ["IAMaLGaMFull", "IAMaLGaMFullState", "default_pop_size"]

# vmapped (over seeds, say), one matrix per LAPACK call (see evolax.algorithms.unbatched)
_cholesky = one_at_a_time(jnp.linalg.cholesky)
_solve_lower = one_at_a_time(lambda factor, v: solve_triangular(factor, v, lower=True))

FULL = Guideline(pop_coefficient=10.0, cov=(-1.1, 1.2, 1.6), shift=(-1.2, 0.31, 0.5))
"""The paper's settings for a full covariance: ``n = 10 sqrt(l)``, ``eta_Sigma = 1 -
exp(-1.1 |S|^1.2 / l^1.6)``, ``eta_shift = 1 - exp(-1.2 |S|^0.31 / l^0.5)``."""


def default_pop_size(dim: int, selection_ratio: float = 0.35, elitist: bool = True) -> int:
    """The paper's population size ``n = 10 sqrt(l)`` (at least ``floor(2 / tau + 1)``) as
    ``pop_size``: ``n - 1`` new samples besides the elite (``n`` without elitism)."""
    return guideline_pop_size(dim, FULL.pop_coefficient, selection_ratio, elitist)


@chex.dataclass(frozen=True, kw_only=True)
class IAMaLGaMFullState(AMaLGaMState):
    """iAMaLGaM-Full state: the shared fields plus ``Sigma`` and its Cholesky factor.

    Attributes:
        cov: the covariance matrix ``Sigma``, ``[D, D]``, symmetric.
        cholesky: its lower Cholesky factor ``L`` (``L L^T = Sigma``), ``[D, D]``.
    """

    cov: Float[Array, "dim dim"]
    cholesky: Float[Array, "dim dim"]


class IAMaLGaMFull(IAMaLGaM[IAMaLGaMFullState]):
    """iAMaLGaM with a full covariance (Bosman, Grahl & Thierens, 2013, "Benchmarking
    Parameter-Free AMaLGaM on Functions With and Without Noise", Evolutionary Computation
    21(3); AMaLGaM: Bosman, Grahl & Thierens, 2008, "Enhancing the Performance of
    Maximum-Likelihood Gaussian EDAs Using Anticipated Mean Shift", PPSN X).

    Samples ``x = mu + sqrt(c_mult) L z`` (``L L^T = Sigma``); the first ``floor(tau n / 2)``
    move ahead by AMS, ``+ delta_AMS c_mult mu_shift``. With ``n = pop_size + 1`` (the elite,
    the best solution so far, is kept and not evaluated again), ``tell``:

    - AVS: if some sample beats the best so far, ``SDR`` is the largest ``|z_i|`` of ``z =
      (sqrt(c_mult) L)^{-1} (mean of those samples - mu)``; ``c_mult`` then follows
      :func:`~evolax.algorithms.cma.amalgam.adapt_multiplier`;
    - selects the ``|S| = floor(tau n)`` best and estimates ``mu <- <x>_S`` (the best
      selected instead while ``c_mult < 1``), ``Sigma_hat = <(x - mu)(x - mu)^T>_S`` around
      the new mean, and learns ``Sigma <- (1 - eta_Sigma) Sigma + eta_Sigma Sigma_hat`` and
      ``mu_shift <- (1 - eta_shift) mu_shift + eta_shift (mu - mu_old)``.

    The first ``tell`` plays the paper's initial population: ``Sigma`` becomes the diagonal of
    ``Sigma_hat`` and AVS and the shift wait; the second sets ``mu_shift = mu - mu_old``
    (Bosman's reference code). Defaults are the paper's parameter-free settings (rates:
    :data:`FULL`, population size: :func:`default_pop_size`) without its restarts of doubling
    population size. A generation costs ``O(n D^2 + D^3)`` (one Cholesky factorisation).

    Its fields are :class:`~evolax.algorithms.cma.amalgam.IAMaLGaM`'s; those below read
    differently here.

    Args:
        pop_size: new samples per generation, ``n - 1`` of the paper's ``n`` (``n`` without
            elitism); the paper's is :func:`default_pop_size` (``n = 10 sqrt(D)``).
        cov_lr: ``eta_Sigma`` in ``(0, 1]``; ``None`` for the paper's ``1 - exp(-1.1
            |S|^1.2 / D^1.6)``.
        shift_lr: ``eta_shift`` in ``(0, 1]``; ``None`` for the paper's ``1 - exp(-1.2
            |S|^0.31 / D^0.5)``.
    """

    guideline: ClassVar[Guideline] = FULL

    def _init(self, key, x0):
        del key
        return IAMaLGaMFullState(**self._init_common(x0))

    def _init_covariance(self, x0):
        eye = jnp.eye(x0.shape[0], dtype=x0.dtype)
        return dict(cov=self.init_std**2 * eye, cholesky=self.init_std * eye)

    def _sample(self, state, z):
        return jnp.dot(z, state.cholesky.T, precision=HIGHEST)

    def _whiten(self, state, v):
        return _solve_lower(state.cholesky, v)

    def _estimate(self, deviations, weights):
        return jnp.dot(deviations.T * weights[None], deviations, precision=HIGHEST)

    def _update_covariance(self, state, estimate, first, lr):
        blended = (1 - lr) * state.cov + lr * estimate
        cov = jnp.where(first, jnp.diag(jnp.diagonal(estimate)), blended)
        cov = 0.5 * (cov + cov.T)
        return dict(cov=cov, cholesky=_cholesky(cov))  # NaN if not positive definite: skipped

    def _variances(self, covariance):
        return jnp.diagonal(covariance["cov"])
