"""CR-FM-NES: fast moving natural evolution strategy with restricted covariance
(Nomura & Ono, 2022)."""

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
    check_antithetic_pop_size,
    mirrored,
    normal,
)
from evolax.algorithms.cma import cma_es
from evolax.validation import check_positive


def default_pop_size(dim: int) -> int:
    """:func:`~evolax.algorithms.cma.cma_es.default_pop_size`, ``4 + floor(3 ln d)``, rounded up
    to an even number (samples come in mirrored pairs)."""
    pop = cma_es.default_pop_size(dim)
    return pop + pop % 2


def distance_weight_factor(dim: int) -> float:
    """``h^{-1}``, the constant in the rate of the distance weights (Nomura & Ono, 2022, from
    FM-NES): the root ``a > 0`` of ``(1 + a^2) exp(a^2 / 2) / 0.24 - 10 - d``, found by
    bisection to double precision."""

    def f(a):
        return (1 + a * a) * math.exp(a * a / 2) / 0.24 - 10 - dim

    low, high = 0.0, 1.0
    while f(high) < 0:
        high *= 2
    for _ in range(200):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if f(mid) < 0 else (low, mid)
    return 0.5 * (low + high)


class CRFMNESParameters(NamedTuple):
    """The constants of CR-FM-NES (Nomura & Ono, 2022) for a dimension and population size.

    ``w_rank_hat`` and ``w_rank`` are by rank, best first; the rates that depend on the number
    of feasible samples ``lambda_F`` are computed in :meth:`CRFMNES.tell`.
    """

    w_rank_hat: np.ndarray
    w_rank: np.ndarray
    mu_eff: float
    c_sigma: float
    c_c: float
    c1_cma: float
    chi_n: float
    h_inv: float


@functools.lru_cache(maxsize=128)
def crfmnes_parameters(dim: int, pop_size: int) -> CRFMNESParameters:
    """Default constants of CR-FM-NES for dimension ``dim`` and ``lambda = pop_size``."""
    lam = pop_size
    w_hat = np.maximum(0.0, math.log(lam / 2 + 1) - np.log(np.arange(1, lam + 1)))
    w_rank = w_hat / w_hat.sum() - 1.0 / lam
    mu_eff = 1.0 / float(np.sum((w_rank + 1.0 / lam) ** 2))
    return CRFMNESParameters(
        w_rank_hat=w_hat,
        w_rank=w_rank,
        mu_eff=mu_eff,
        c_sigma=(mu_eff + 2) / (dim + mu_eff + 5),
        c_c=(4 + mu_eff / dim) / (dim + 4 + 2 * mu_eff / dim),
        c1_cma=2 / ((dim + 1.3) ** 2 + mu_eff),
        chi_n=math.sqrt(dim) * (1 - 1 / (4 * dim) + 1 / (21 * dim**2)),
        h_inv=distance_weight_factor(dim),
    )


@chex.dataclass(frozen=True, kw_only=True)
class CRFMNESState(DistributionState):
    """CR-FM-NES state: ``N(mean, std^2 D (I + v v^T) D)``.

    Attributes:
        mean: the mean ``m``, ``[D]``.
        std: the step size ``sigma``, ``[]``.
        v: the rank-one direction of the restricted covariance, ``[D]``.
        d: the diagonal scaling ``D``, ``[D]``, positive.
        p_sigma: the evolution path of ``sigma``, ``[D]``.
        p_c: the evolution path of the rank-one update, ``[D]``.
    """

    v: Float[Array, " dim"]
    d: Float[Array, " dim"]
    p_sigma: Float[Array, " dim"]
    p_c: Float[Array, " dim"]


def _steps(state: CRFMNESState, z: Float[Array, "pop dim"]) -> Float[Array, "pop dim"]:
    """The steps ``sigma D y(z)`` of :meth:`CRFMNES.sample`, linear in ``z``."""
    norm_v2 = jnp.dot(state.v, state.v, precision=HIGHEST)
    v_bar = state.v / jnp.sqrt(norm_v2)
    along = jnp.dot(z, v_bar, precision=HIGHEST)
    y = z + (jnp.sqrt(1 + norm_v2) - 1) * along[:, None] * v_bar[None]
    return state.std * y * state.d[None]


class CRFMNES(DistributionAlgorithm[CRFMNESState]):
    """CR-FM-NES (Nomura & Ono, 2022, "Fast Moving Natural Evolution Strategy for
    High-Dimensional Problems", with the restricted covariance ``A A^T = D (I + v v^T) D``).

    Samples mirrored pairs ``z, -z`` (``z ~ N(0, I)``; the population is laid out
    ``[z_1..n, -z_1..n]``), ``y = z + (sqrt(1 + |v|^2) - 1) vbar vbar^T z`` and ``x = m + sigma
    D y`` (``sigma`` is ``std``). ``tell`` recovers ``z`` from the population, ranks it,
    switches between the rank weights and FM-NES's distance weights (when ``|p_sigma| >=
    chi_n``, the distribution is moving) and the matching learning rate of ``sigma``, moves the
    mean, and updates ``v`` and ``D`` by the natural gradient restricted to that family (with
    the rank-one term of ``p_c``), ``D`` normalised so ``det(A) = 1``. All costs are
    ``O(lambda d)``. :meth:`init` starts from ``D = 1``, zero paths and ``v ~ N(0, I / d)``
    drawn with its key.

    Fitness is maximised. A sample with a non-finite fitness (``-inf`` when ``tell`` sees it)
    is *infeasible* in the sense of the paper (its ``+inf`` when minimising): infeasible
    samples rank after the feasible ones, ordered by ``|z|`` (closest first), and the rates use
    the number of feasible samples ``lambda_F``.

    Follows the authors' reference implementation (PyPI ``crfmnes`` 1.0.0), which the tests
    match update by update; like it, the rank-one rate ``c1`` carries the factor ``(d - 5) /
    6``, so it is meant for ``d > 5``.

    Args:
        pop_size: ``lambda``, even (the default is :func:`default_pop_size`).
        init_std: the initial step size ``sigma``, positive.
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0

    def __check_init__(self):
        check_antithetic_pop_size(self.pop_size)
        check_positive("init_std", self.init_std)

    def _init(self, key, x0):
        dim = x0.shape[0]
        zeros = jnp.zeros(dim, x0.dtype)
        return CRFMNESState(
            mean=x0,
            std=jnp.asarray(self.init_std, x0.dtype),
            v=normal(key, (dim,), x0) / math.sqrt(dim),
            d=jnp.ones(dim, x0.dtype),
            p_sigma=zeros,
            p_c=zeros,
        )

    def sample(self, state: CRFMNESState, z: Float[Array, "pop dim"]) -> Float[Array, "pop dim"]:
        """The flat population ``x = m + sigma D y(z)`` for given standard normal rows ``z``."""
        return state.mean[None] + _steps(state, z)

    def _ask(self, key, state):
        z = normal(key, (self.pop_size // 2, state.mean.shape[0]), state.mean)
        return mirrored(state.mean, _steps(state, z)), state  # y(-z) = -y(z)

    def _tell(self, key, state, x, fitness):
        del key
        dtype = state.mean.dtype
        dim, lam = state.mean.shape[0], self.pop_size
        p = crfmnes_parameters(dim, lam)
        sigma, v, d = state.std, state.v, state.d

        norm_v2 = jnp.dot(v, v, precision=HIGHEST)
        norm_v = jnp.sqrt(norm_v2)
        v_bar = v / norm_v
        gamma_v = 1 + norm_v2
        # invert the sampling: y = (x - m) / (sigma D), z = (I + (1/sqrt(gamma) - 1) vbar vbar^T) y
        y = (x - state.mean[None]) / (sigma * d[None])
        along = jnp.dot(y, v_bar, precision=HIGHEST)
        z = y + (1 / jnp.sqrt(gamma_v) - 1) * along[:, None] * v_bar[None]

        # rank: feasible by fitness (best first), then infeasible by |z| (closest first)
        feasible = fitness > -jnp.inf  # the template hands every non-finite fitness as -inf
        z_sq = jnp.sum(z**2, axis=1)
        order = jnp.lexsort((jnp.where(feasible, -fitness, z_sq), ~feasible))
        z_sq = z_sq[order]  # the weights below are by rank; the rows of z and y stay put
        lam_f = jnp.sum(feasible).astype(dtype)

        def unsorted(w):  # weights by rank -> weights of the rows as told
            return jnp.zeros_like(w).at[order].set(w)

        w_rank = jnp.asarray(p.w_rank, dtype)
        p_sigma = (1 - p.c_sigma) * state.p_sigma + math.sqrt(
            p.c_sigma * (2 - p.c_sigma) * p.mu_eff
        ) * jnp.dot(unsorted(w_rank), z, precision=HIGHEST)
        p_sigma_norm = jnp.linalg.norm(p_sigma)

        # distance weights w_hat_i exp(alpha |z_i|), normalised in log space (no overflow)
        alpha = p.h_inv * min(1.0, math.sqrt(lam / dim)) * jnp.sqrt(lam_f / lam)
        positive = p.w_rank_hat > 0
        log_w_hat = jnp.asarray(np.log(np.where(positive, p.w_rank_hat, 1.0)), dtype)
        log_w = jnp.where(positive, log_w_hat + alpha * jnp.sqrt(z_sq), -jnp.inf)
        w_dist = jnp.exp(log_w - jnp.max(log_w))
        w_dist = w_dist / jnp.sum(w_dist) - 1.0 / lam
        moving = p_sigma_norm >= p.chi_n
        weights = jnp.where(moving, w_dist, w_rank)
        eta_stag = jnp.tanh((0.024 * lam_f + 0.7 * dim + 20) / (dim + 12))
        eta_conv = 2 * jnp.tanh((0.025 * lam_f + 0.75 * dim + 10) / (dim + 4))
        eta_sigma = jnp.where(
            moving, 1.0, jnp.where(p_sigma_norm >= 0.1 * p.chi_n, eta_stag, eta_conv)
        )

        grad_sigma = jnp.dot(weights, z_sq - dim, precision=HIGHEST) / dim
        weights = unsorted(weights)

        # mean (eta_m = 1) and p_c; x_i - m = sigma D y_i
        step_y = jnp.dot(weights, y, precision=HIGHEST)
        p_c = (1 - p.c_c) * state.p_c + math.sqrt(p.c_c * (2 - p.c_c) * p.mu_eff) * d * step_y
        mean = state.mean + sigma * d * step_y

        # natural gradient of v and D on the rows [y_1..y_lambda, p_c / D]
        ex_y = jnp.concatenate([y, (p_c / d)[None]])
        ip_y = jnp.dot(ex_y, v_bar, precision=HIGHEST)
        v_bar2 = v_bar**2
        norm_v4 = norm_v2**2
        alpha_vd = jnp.minimum(
            1.0,
            jnp.sqrt(norm_v4 + (2 * gamma_v - jnp.sqrt(gamma_v)) / jnp.max(v_bar2)) / (2 + norm_v2),
        )
        t = ex_y * ip_y[:, None] - v_bar[None] * (0.5 * (ip_y**2 + gamma_v))[:, None]
        b = -(1 - alpha_vd**2) * norm_v4 / gamma_v + 2 * alpha_vd**2
        inv_h = 1 / (2 - (b + 2 * alpha_vd**2) * v_bar2)
        s = ex_y**2 - norm_v2 / gamma_v * ex_y * v_bar[None] * ip_y[:, None] - 1
        ip_vt = jnp.dot(t, v_bar, precision=HIGHEST)
        s = s - alpha_vd / gamma_v * (
            (2 + norm_v2) * t * v_bar[None] - norm_v2 * v_bar2[None] * ip_vt[:, None]
        )
        inv_h_v2 = inv_h * v_bar2
        ip_s = jnp.dot(s, inv_h_v2, precision=HIGHEST)
        s = s * inv_h[None] - (b / (1 + b * jnp.dot(v_bar2, inv_h_v2, precision=HIGHEST))) * (
            ip_s[:, None] * inv_h_v2[None]
        )
        ip_sv2 = jnp.dot(s, v_bar2, precision=HIGHEST)
        t = t - alpha_vd * ((2 + norm_v2) * s * v_bar[None] - v_bar[None] * ip_sv2[:, None])

        eta_b = jnp.tanh((jnp.minimum(0.02 * lam_f, 3 * math.log(dim)) + 5) / (0.23 * dim + 25))
        c1 = p.c1_cma * (dim - 5) / 6 * lam_f / lam
        ex_w = jnp.concatenate([eta_b * weights, c1[None]])
        new_v = v + jnp.dot(ex_w, t, precision=HIGHEST) / norm_v
        new_d = d + jnp.dot(ex_w, s, precision=HIGHEST) * d
        log_det = jnp.sum(jnp.log(new_d)) / dim + jnp.log1p(jnp.sum(new_v**2)) / (2 * dim)
        new_d = new_d / jnp.exp(log_det)  # a non-positive entry makes it NaN: skipped

        std = sigma * jnp.exp(0.5 * eta_sigma * grad_sigma)

        new_state = state.replace(mean=mean, std=std, v=new_v, d=new_d, p_sigma=p_sigma, p_c=p_c)
        metrics = {"std": std, "p_sigma_norm": p_sigma_norm, "feasible": lam_f}
        return new_state, metrics
