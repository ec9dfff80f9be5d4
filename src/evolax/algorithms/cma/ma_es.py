"""MA-ES: the matrix adaptation evolution strategy (Beyer & Sendhoff, 2017)."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import chex
import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from evolax.algorithms.base import (
    HIGHEST,
    DistributionAlgorithm,
    DistributionState,
    check_min_pop_size,
    normal,
)
from evolax.algorithms.cma.cma_family import advance_mean, around_mean, cma_parameters
from evolax.algorithms.unbatched import one_at_a_time
from evolax.validation import check_positive

# vmapped (over seeds, say), one matrix per LAPACK call (see evolax.algorithms.unbatched)
_solve = one_at_a_time(jnp.linalg.solve)


class MAESParameters(NamedTuple):
    """The strategy parameters of Beyer & Sendhoff (2017), fig. 3 (Python numbers), see
    :func:`maes_parameters`. ``weights`` holds ``w_1 .. w_lambda`` by rank, best first."""

    mu: int
    weights: np.ndarray
    mu_eff: float
    c_sigma: float
    d_sigma: float
    c1: float
    c_w: float
    chi_n: float


@functools.lru_cache(maxsize=128)
def maes_parameters(dim: int, pop_size: int) -> MAESParameters:
    """The default parameters of Beyer & Sendhoff (2017), those of CMA-ES in Hansen's tutorial
    without its pycma refinements: the weights ``w_i ∝ ln((lambda + 1) / 2) - ln i`` of the
    ``mu = floor(lambda / 2)`` best (summing to 1, no negative weights) and ``mu_eff = 1 / sum
    w_i^2`` (:func:`~evolax.algorithms.cma.cma_family.cma_parameters` with ``active=False``),
    ``c_sigma = (mu_eff + 2) / (n + mu_eff + 5)``, ``d_sigma = 1 + c_sigma + 2 max(0, sqrt((mu_eff
    - 1) / (n + 1)) - 1)``, ``c1 = 2 / ((n + 1.3)^2 + mu_eff)``, ``c_w = min(1 - c1, 2 (mu_eff +
    1 / mu_eff - 2) / ((n + 2)^2 + mu_eff))`` and ``chi_n = E|N(0, I)|`` (exactly; the paper
    quotes the approximation ``sqrt(n) (1 - 1 / (4 n) + 1 / (21 n^2))``).

    Args:
        dim: ``n``; pop_size: ``lambda``, at least 2.
    """
    n = dim
    cma = cma_parameters(dim, pop_size, active=False)
    mu_eff = cma.mu_eff
    c_sigma = (mu_eff + 2) / (n + mu_eff + 5)
    c1 = 2 / ((n + 1.3) ** 2 + mu_eff)
    return MAESParameters(
        mu=cma.mu,
        weights=cma.weights,
        mu_eff=mu_eff,
        c_sigma=c_sigma,
        d_sigma=1 + c_sigma + 2 * max(0.0, math.sqrt((mu_eff - 1) / (n + 1)) - 1),
        c1=c1,
        c_w=min(1 - c1, 2 * (mu_eff + 1 / mu_eff - 2) / ((n + 2) ** 2 + mu_eff)),
        chi_n=cma.chi_n,
    )


@chex.dataclass(frozen=True, kw_only=True)
class MAESState(DistributionState):
    """MA-ES state: ``N(mean, std^2 M M^T)`` and the search path.

    Attributes:
        mean: the mean ``y``, ``[D]``.
        std: the step size ``sigma``, ``[]``.
        mean_residual: in float32, the rounding error of ``mean`` (the mean is ``mean +
            mean_residual``, see :class:`~evolax.algorithms.cma.cma_family.CMAState`); zero
            in float64.
        p_sigma: the search path ``s`` (CMA-ES's ``p_sigma``), ``[D]``.
        matrix: the transformation matrix ``M``, ``[D, D]``.
    """

    mean_residual: Float[Array, " dim"]
    p_sigma: Float[Array, " dim"]
    matrix: Float[Array, "dim dim"]


class MAES(DistributionAlgorithm[MAESState]):
    """MA-ES (Beyer & Sendhoff, 2017, "Simplify Your Covariance Matrix Adaptation Evolution
    Strategy", IEEE TEVC 21(5), fig. 3, with the defaults of :func:`maes_parameters`).

    CMA-ES without the covariance matrix and its evolution path ``p_c``: samples ``d_l = M z_l``
    with ``z_l ~ N(0, I)`` and ``x_l = y + sigma d_l`` (``sigma`` is ``std``), then, with
    ``<.>_w`` the weighted sum over the ``mu`` best (a non-finite fitness gets no weight):

    - (M9) ``y <- y + sigma <d>_w``;
    - (M10) ``s <- (1 - c_sigma) s + sqrt(mu_eff c_sigma (2 - c_sigma)) <z>_w``;
    - (M11) ``M <- M [I + c1 / 2 (s s^T - I) + c_w / 2 (<z z^T>_w - I)]``;
    - (M12) ``sigma <- sigma exp(c_sigma / d_sigma (|s| / E|N(0, I)| - 1))``.

    (M11) is applied as ``(1 - c1 / 2 - c_w / 2) M + c1 / 2 (M s) s^T + c_w / 2 sum_i w_i d_i
    z_i^T``, ``O(mu D^2)``. ``tell`` recovers the ``z`` of the ``mu`` best from the population by
    solving with ``M``, so a generation costs ``O(D^3)`` and memory is ``O(D^2)``: it suits ``D``
    up to a few hundred (:class:`~evolax.algorithms.cma.lm_ma_es.LMMAES` is its large-scale
    version).
    In float32 the mean keeps its rounding error (``mean_residual``), so mean steps below its
    last bit still add up; the samples themselves are float32 genomes.

    Args:
        pop_size: ``lambda``, at least 2 (the paper's default is
            :func:`~evolax.algorithms.cma.cma_family.default_pop_size`).
        init_std: the initial step size ``sigma``, positive (``M`` starts at the identity).
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 2, "to select parents")
        check_positive("init_std", self.init_std)

    def parameters(self, dim: int) -> MAESParameters:
        """The paper's strategy parameters for dimension ``dim``."""
        return maes_parameters(dim, self.pop_size)

    def _init(self, key, x0):
        del key
        return MAESState(
            mean=x0,
            mean_residual=jnp.zeros_like(x0),
            std=jnp.asarray(self.init_std, x0.dtype),
            p_sigma=jnp.zeros_like(x0),
            matrix=jnp.eye(x0.shape[0], dtype=x0.dtype),
        )

    def _ask(self, key, state):
        z = normal(key, (self.pop_size, state.mean.shape[0]), state.mean)
        d = jnp.dot(z, state.matrix.T, precision=HIGHEST)  # rows M z_l
        return around_mean(state.mean, state.mean_residual, state.std * d), state

    def _tell(self, key, state, x, fitness):
        del key
        dim = state.mean.shape[0]
        p = self.parameters(dim)
        # only the mu best carry weight: read just their rows (a non-finite fitness: 0)
        best = jnp.argsort(-fitness, stable=True)[: p.mu]  # best first, non-finite last
        by_rank = jnp.asarray(p.weights[: p.mu], x.dtype)
        weights = jnp.where(fitness[best] > -jnp.inf, by_rank, 0.0)
        d = (x[best] - state.mean[None] - state.mean_residual[None]) / state.std  # M z_i
        z = _solve(state.matrix, d.T).T  # z_i = M^{-1} d_i
        d_w = jnp.dot(weights, d, precision=HIGHEST)
        z_w = jnp.dot(weights, z, precision=HIGHEST)

        mean, mean_residual = advance_mean(state.mean, state.mean_residual, state.std * d_w)  # (M9)
        p_sigma = (1 - p.c_sigma) * state.p_sigma + math.sqrt(  # (M10)
            p.mu_eff * p.c_sigma * (2 - p.c_sigma)
        ) * z_w
        m_path = jnp.dot(state.matrix, p_sigma, precision=HIGHEST)
        rank_w = jnp.dot(d.T * weights[None], z, precision=HIGHEST)  # sum_i w_i d_i z_i^T
        matrix = (  # (M11)
            (1 - 0.5 * p.c1 - 0.5 * p.c_w) * state.matrix
            + 0.5 * p.c1 * jnp.outer(m_path, p_sigma)
            + 0.5 * p.c_w * rank_w
        )
        norm = jnp.linalg.norm(p_sigma)
        std = state.std * jnp.exp(p.c_sigma / p.d_sigma * (norm / p.chi_n - 1))  # (M12)
        new_state = state.replace(
            mean=mean, mean_residual=mean_residual, std=std, p_sigma=p_sigma, matrix=matrix
        )
        return new_state, {"std": std, "p_sigma_norm": norm}
