"""CMA-ES: covariance matrix adaptation (Hansen, 2016, "The CMA Evolution Strategy: A Tutorial")."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Bool, Float, Int

from evolax.algorithms.base import (
    Algorithm,
    check_fitness,
    flatten_population,
    unflatten_population,
)
from evolax.algorithms.noise import gaussian
from evolax.algorithms.shaping import sanitize_fitness
from evolax.types import Fitness, Metrics, Params, Population, PRNGKey
from evolax.validation import check_positive, check_positive_int

HIGHEST = jax.lax.Precision.HIGHEST


def default_pop_size(dim: int) -> int:
    """Hansen (2016), table 1: ``4 + floor(3 ln d)``."""
    return 4 + int(3 * math.log(dim))


class CMAParameters(NamedTuple):
    """The strategy parameters of Hansen (2016), table 1 (Python floats; ``weights`` by rank).

    ``weights`` holds ``w_1 .. w_lambda`` (best first): positive for the ``mu`` best, negative
    for the worst when active (eq. 53), summing to 1 over the positive ones.
    """

    mu: int
    weights: np.ndarray
    mu_eff: float
    c_sigma: float
    d_sigma: float
    c_c: float
    c1: float
    c_mu: float
    chi_n: float


@functools.lru_cache(maxsize=128)
def cma_parameters(
    dim: int, pop_size: int, active: bool = True, separable: bool = False
) -> CMAParameters:
    """Default parameters of Hansen (2016), table 1 (weights: eq. 49-53).

    ``c_mu = min(1 - c1, 2 (mu_eff - 2 + 1 / mu_eff) / ((n + 2)^2 + mu_eff))`` as in the 2016
    tutorial (its later revisions and pycma add 1/4 to the numerator's ``mu_eff - 2``).
    With ``separable`` the covariance learning rates are multiplied by ``(dim + 2) / 3``
    (Ros & Hansen, 2008, section 2.1), keeping ``c1 + c_mu <= 1``.

    Args:
        dim: search-space dimension ``n``.
        pop_size: ``lambda``, at least 2.
        active: give the worse half negative weights (eq. 53, active CMA); else zero.
        separable: the learning rates of sep-CMA-ES.
    """
    n, lam = dim, pop_size
    mu = lam // 2
    raw = math.log((lam + 1) / 2) - np.log(np.arange(1, lam + 1))  # eq. 49
    positive, negative = raw[raw > 0], raw[raw < 0]
    mu_eff = positive.sum() ** 2 / (positive**2).sum()  # eq. 50
    raw_neg = raw[mu:]
    mu_eff_neg = raw_neg.sum() ** 2 / (raw_neg**2).sum()
    alpha_cov = 2.0
    c_sigma = (mu_eff + 2) / (n + mu_eff + 5)  # table 1
    d_sigma = 1 + 2 * max(0.0, math.sqrt((mu_eff - 1) / (n + 1)) - 1) + c_sigma
    c_c = (4 + mu_eff / n) / (n + 4 + 2 * mu_eff / n)
    c1 = alpha_cov / ((n + 1.3) ** 2 + mu_eff)
    c_mu = min(
        1 - c1,
        alpha_cov * (mu_eff - 2 + 1 / mu_eff) / ((n + 2) ** 2 + alpha_cov * mu_eff / 2),
    )
    if separable:  # Ros & Hansen (2008): c_cov^sep = (n + 2) / 3 * c_cov
        c1 = min(1.0, c1 * (n + 2) / 3)
        c_mu = min(1.0 - c1, c_mu * (n + 2) / 3)
    weights = np.where(raw >= 0, raw / positive.sum(), 0.0)
    if active and c_mu > 0:  # eq. 51-53
        alpha_mu_neg = 1 + c1 / c_mu
        alpha_mu_eff_neg = 1 + 2 * mu_eff_neg / (mu_eff + 2)
        alpha_posdef_neg = (1 - c1 - c_mu) / (n * c_mu)
        scale = min(alpha_mu_neg, alpha_mu_eff_neg, alpha_posdef_neg)
        weights = np.where(raw < 0, scale * raw / -negative.sum(), weights)
    chi_n = math.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n**2))
    return CMAParameters(
        mu=mu,
        weights=weights,
        mu_eff=float(mu_eff),
        c_sigma=c_sigma,
        d_sigma=d_sigma,
        c_c=c_c,
        c1=c1,
        c_mu=c_mu,
        chi_n=chi_n,
    )


def eigen_interval(dim: int, pop_size: int) -> int:
    """Generations between eigendecompositions: ``max(1, ceil(1 / (10 n (c1 + c_mu))))``.

    Hansen (2016), appendix B.2, decomposes every ``1 / (10 n (c1 + c_mu))`` generations, which
    keeps the cost per evaluation ``O(n^2)``; the tutorial rounds the interval down, pycma
    (``lazy_update_gap``) waits until it has passed, i.e. rounds up. We follow pycma: at
    d = 1000, lambda = 128 the interval is 1.56, decomposed every 2nd generation, not every one.
    """
    p = cma_parameters(dim, pop_size)
    return max(1, math.ceil(1 / (10 * dim * (p.c1 + p.c_mu))))


def history_lengths(dim: int, pop_size: int) -> tuple[int, int, int]:
    """Sizes for :func:`history_criteria`: ``(n_fun, tol_stagnation, n_window)``.

    ``n_fun = 10 + ceil(30 n / lambda)`` generations for TolFun and EqualFunValues (Hansen,
    2016, B.3); ``tol_stagnation = int(100 + 100 n^1.5 / lambda)`` generations for Stagnation
    (pycma's ``tolstagnation``), compared as two windows of ``n_window = ceil(tol_stagnation /
    10)`` samples taken every 5th generation. ``n_window`` is 0 (Stagnation off) beyond 10,000
    samples, where pycma's capped history can never fire it either.
    """
    n_fun = 10 + math.ceil(30 * dim / pop_size)
    tol_stagnation = int(100 + 100 * dim**1.5 / pop_size)
    n_window = math.ceil(tol_stagnation / 10)
    return n_fun, tol_stagnation, n_window if n_window <= 10_000 else 0


@chex.dataclass(frozen=True)
class FitnessHistory:
    """Recent fitness, for the termination criteria (ring buffers).

    Attributes:
        best: best fitness of each of the last ``n_fun`` generations.
        last_worst: worst fitness of the latest generation.
        best_ever: best fitness so far.
        best_ever_generation: the generation (counted from 1) that found it.
        window_best: best fitness of every 5th generation, the last ``2 n_window`` of them.
        window_median: median fitness of the same generations.
    """

    best: Float[Array, " hist"]
    last_worst: Float[Array, ""]
    best_ever: Float[Array, ""]
    best_ever_generation: Int[Array, ""]
    window_best: Float[Array, " window"]
    window_median: Float[Array, " window"]


def init_history(dim: int, pop_size: int) -> FitnessHistory:
    """Empty histories (filled with ``-inf``; the criteria wait until they are full)."""
    n_fun, _, n_window = history_lengths(dim, pop_size)
    size = max(2 * n_window, 1)
    return FitnessHistory(
        best=jnp.full(n_fun, -jnp.inf),
        last_worst=jnp.asarray(-jnp.inf),
        best_ever=jnp.asarray(-jnp.inf),
        best_ever_generation=jnp.asarray(0, jnp.int32),
        window_best=jnp.full(size, -jnp.inf),
        window_median=jnp.full(size, -jnp.inf),
    )


def update_history(
    history: FitnessHistory, sorted_fitness: Float[Array, " pop"], generation: Int[Array, ""]
) -> FitnessHistory:
    """Record one generation's fitness (sanitized, sorted best first); ``generation`` is the
    number of generations told before this one."""
    n_fun, size = history.best.shape[0], history.window_best.shape[0]
    best, median = sorted_fitness[0], sorted_fitness[sorted_fitness.shape[0] // 2]
    count = generation + 1
    sample = count % 5 == 0  # pycma samples every 5th generation
    slot = (count // 5 - 1) % size
    improved = best > history.best_ever
    return FitnessHistory(
        best=history.best.at[generation % n_fun].set(best),
        last_worst=sorted_fitness[-1],
        best_ever=jnp.where(improved, best, history.best_ever),
        best_ever_generation=jnp.where(improved, count, history.best_ever_generation),
        window_best=jnp.where(sample, history.window_best.at[slot].set(best), history.window_best),
        window_median=jnp.where(
            sample, history.window_median.at[slot].set(median), history.window_median
        ),
    )


def history_criteria(
    history: FitnessHistory,
    generation: Int[Array, ""],
    tol_fun: float | Array,
    dim: int,
    pop_size: int,
) -> dict[str, Bool[Array, ""]]:
    """TolFun, EqualFunValues (Hansen, 2016, B.3) and pycma's Stagnation, for maximisation.

    ``tolfun``: the range of the best fitness of the last ``n_fun`` generations and of all of
    the latest generation is below ``tol_fun``; ``equalfunvals``: those best values are all
    equal. ``stagnation`` (pycma 4, ``tolstagnation = T``): after more than ``n (5 + 100 /
    lambda)`` and 500 generations, with no new best for ``T / 2`` generations, the median of
    the newest ``T / 2`` generations (sampled every 5th) is not better than that of the ``T /
    2`` before, both for the best and for the median fitness. pycma's windows also grow to a
    tenth of the history; here they stay ``T / 2``.

    Args:
        generation: the number of generations told.
    """
    n_fun, tol_stagnation, n_window = history_lengths(dim, pop_size)
    hist_max, hist_min = jnp.max(history.best), jnp.min(history.best)
    full = generation >= n_fun
    overall_min = jnp.minimum(hist_min, history.last_worst)
    criteria = {
        "tolfun": full & (hist_max - overall_min < tol_fun),
        "equalfunvals": full & (hist_max == hist_min),
    }
    if n_window == 0:
        criteria["stagnation"] = jnp.asarray(False)
        return criteria
    samples = generation // 5
    newest_first = (samples - 1 - jnp.arange(2 * n_window)) % (2 * n_window)

    def not_improving(values):
        ordered = values[newest_first]
        return jnp.median(ordered[:n_window]) <= jnp.median(ordered[n_window:])

    criteria["stagnation"] = (
        (generation > dim * (5 + 100 / pop_size))
        & (samples > max(100, 2 * n_window))
        & (generation - history.best_ever_generation > tol_stagnation / 2)
        & not_improving(history.window_best)
        & not_improving(history.window_median)
    )
    return criteria


def ranked_weights(
    fitness: Float[Array, " pop"], weights_by_rank: np.ndarray
) -> tuple[Float[Array, " pop"], Float[Array, " pop"]]:
    """Per-individual weights (the NaN rule: NaN ranks last) and the fitness sorted best first."""
    fitness = sanitize_fitness(fitness)
    order = jnp.argsort(-fitness, stable=True)
    by_rank = jnp.asarray(weights_by_rank, jnp.float32)
    return jnp.zeros_like(fitness).at[order].set(by_rank), fitness[order]


def h_sigma_and_paths(
    p: CMAParameters,
    p_sigma: Float[Array, " dim"],
    p_c: Float[Array, " dim"],
    whitened_step: Float[Array, " dim"],
    step: Float[Array, " dim"],
    generation: Int[Array, ""],
):
    """Evolution paths (Hansen, 2016, eq. 43 and 45) and ``h_sigma`` (below eq. 45).

    Args:
        whitened_step: ``C^{-1/2} <y>_w``.
        step: ``<y>_w``.
        generation: ``g + 1``, the number of the generation being told (from 1).
    """
    dim = p_sigma.shape[0]
    p_sigma = (1 - p.c_sigma) * p_sigma + math.sqrt(
        p.c_sigma * (2 - p.c_sigma) * p.mu_eff
    ) * whitened_step
    norm = jnp.linalg.norm(p_sigma)
    correction = jnp.sqrt(1 - (1 - p.c_sigma) ** (2 * generation.astype(jnp.float32)))
    h_sigma = (norm / correction < (1.4 + 2 / (dim + 1)) * p.chi_n).astype(jnp.float32)
    p_c = (1 - p.c_c) * p_c + h_sigma * math.sqrt(p.c_c * (2 - p.c_c) * p.mu_eff) * step
    return p_sigma, norm, h_sigma, p_c


@chex.dataclass(frozen=True)
class CMAESState:
    """CMA-ES state: the search distribution ``N(mean, sigma^2 C)`` and its evolution paths.

    Attributes:
        mean: the mean ``m``, a genome pytree (what :meth:`CMAES.best` returns).
        sigma: the step size, ``f32[]``.
        cov: the covariance matrix ``C``, ``f32[D, D]``, symmetric.
        eigvecs: ``B``, the eigenvectors of ``C`` at the last decomposition (columns).
        eigvals_sqrt: ``D``, square roots of its eigenvalues (clipped positive), ``f32[D]``.
        p_sigma: conjugate evolution path, ``f32[D]``.
        p_c: evolution path of ``C``, ``f32[D]``.
        generation: number of generations told.
        eigen_generation: the generation of the last eigendecomposition.
        history: recent fitness for :meth:`CMAES.should_stop`.
    """

    mean: Params
    sigma: Float[Array, ""]
    cov: Float[Array, "dim dim"]
    eigvecs: Float[Array, "dim dim"]
    eigvals_sqrt: Float[Array, " dim"]
    p_sigma: Float[Array, " dim"]
    p_c: Float[Array, " dim"]
    generation: Int[Array, ""]
    eigen_generation: Int[Array, ""]
    history: FitnessHistory


def decompose(cov: Float[Array, "dim dim"]) -> tuple[Float[Array, "dim dim"], Float[Array, " dim"]]:
    """``B, D`` with ``C = B diag(D^2) B^T``; eigenvalues are clipped to at least the largest
    times the dtype's machine epsilon (``2^-23`` in float32).

    ``eigh`` resolves eigenvalues only to about ``eps * max``; smaller ones are rounding noise,
    can be zero or negative, and ``C^{-1/2}`` built from them turns the next step into garbage
    (``sigma`` then overflows). Clipped, ``cond(C) <= 1 / eps`` and whitening stays accurate;
    ConditionCov fires at that limit (:meth:`CMAES.termination_criteria`).
    """
    eigvals, eigvecs = jnp.linalg.eigh(cov)
    floor = jnp.maximum(jnp.max(eigvals) * jnp.finfo(cov.dtype).eps, jnp.finfo(cov.dtype).tiny)
    return eigvecs, jnp.sqrt(jnp.maximum(eigvals, floor))


class CMAES(Algorithm):
    """CMA-ES with active covariance update (Hansen, 2016, "The CMA Evolution Strategy: A
    Tutorial", algorithm summary in appendix A, default parameters in table 1).

    Samples ``x_k = m + sigma B D z_k`` with ``z_k ~ N(0, I)``. ``tell`` ranks the samples
    (best first; NaN fitness ranks last, so it only receives a negative weight), moves the mean
    by the positive weights (eq. 41), updates the conjugate path and ``sigma`` (eq. 43-44), the
    path ``p_c`` with the stall ``h_sigma`` (eq. 45) and ``C`` by the rank-one and active
    rank-mu updates (eq. 46-47). ``B`` and ``D`` are recomputed by ``eigh`` only every
    :func:`eigen_interval` generations (appendix B.2), so ``tell`` costs ``O(lambda n^2)``
    amortised; ``C`` is kept symmetric, and its eigenvalues are clipped to at least ``eps``
    times the largest (float32 resolves no more: see :func:`decompose`).

    Args:
        pop_size: ``lambda``, at least 2 (the tutorial's default is :func:`default_pop_size`).
        init_std: the initial step size ``sigma_0``, positive.
        active: negative weights for the worse half (eq. 53); ``False`` gives zero weights.
        tol_x: TolX of :meth:`should_stop`; ``None`` means ``1e-12 * init_std``.
        tol_fun: TolFun of :meth:`should_stop` (the tutorial's ``1e-12``).
        tol_condition: :meth:`should_stop` fires when ``cond(C)`` exceeds this (``1e14``, as
            pycma in float64; in float32 it fires at about 4e6, see :func:`decompose`).
        eigen_interval: generations between eigendecompositions; ``None`` for the
            pycma's :func:`eigen_interval`.
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0
    active: bool = eqx.field(static=True, default=True)
    tol_x: float | None = None
    tol_fun: float = 1e-12
    tol_condition: float = 1e14
    eigen_interval: int | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        check_positive_int("pop_size", self.pop_size)
        if self.pop_size < 2:
            raise ValueError(f"pop_size must be at least 2 to rank samples, got {self.pop_size}")
        check_positive("init_std", self.init_std)
        if self.tol_x is not None:
            check_positive("tol_x", self.tol_x)
        check_positive("tol_fun", self.tol_fun)
        check_positive("tol_condition", self.tol_condition)
        if self.eigen_interval is not None:
            check_positive_int("eigen_interval", self.eigen_interval)

    def parameters(self, dim: int) -> CMAParameters:
        """The tutorial's default strategy parameters for dimension ``dim``."""
        return cma_parameters(dim, self.pop_size, self.active)

    def init(self, key: PRNGKey, x0: Params) -> CMAESState:
        del key
        flat, _ = ravel_pytree(x0)
        dim = flat.shape[0]
        eye = jnp.eye(dim, dtype=jnp.float32)
        return CMAESState(
            mean=jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), x0),
            sigma=jnp.asarray(self.init_std, jnp.float32),
            cov=eye,
            eigvecs=eye,
            eigvals_sqrt=jnp.ones(dim, jnp.float32),
            p_sigma=jnp.zeros(dim, jnp.float32),
            p_c=jnp.zeros(dim, jnp.float32),
            generation=jnp.asarray(0, jnp.int32),
            eigen_generation=jnp.asarray(0, jnp.int32),
            history=init_history(dim, self.pop_size),
        )

    def ask(self, key: PRNGKey, state: CMAESState) -> tuple[Population, CMAESState]:
        mean, _ = ravel_pytree(state.mean)
        z = gaussian(key, (self.pop_size, mean.shape[0]))
        # y_k = B D z_k, as rows: (z * D) B^T
        y = jnp.dot(z * state.eigvals_sqrt[None], state.eigvecs.T, precision=HIGHEST)
        return unflatten_population(mean[None] + state.sigma * y, state.mean), state

    def tell(
        self, state: CMAESState, population: Population, fitness: Fitness
    ) -> tuple[CMAESState, Metrics]:
        fitness = check_fitness(fitness, self.pop_size)
        mean, unravel = ravel_pytree(state.mean)
        dim = mean.shape[0]
        p = self.parameters(dim)
        weights, sorted_fitness = ranked_weights(fitness, p.weights)
        positive = jnp.maximum(weights, 0.0)

        y = (flatten_population(population) - mean[None]) / state.sigma
        # rows of z: D^{-1} B^T y_k, so ||C^{-1/2} y_k|| = ||z_k|| and C^{-1/2} y = B z
        z = jnp.dot(y, state.eigvecs, precision=HIGHEST) / state.eigvals_sqrt[None]
        step = jnp.dot(positive, y, precision=HIGHEST)  # <y>_w, eq. 41
        whitened_step = jnp.dot(
            state.eigvecs, jnp.dot(positive, z, precision=HIGHEST), precision=HIGHEST
        )
        generation = state.generation + 1
        p_sigma, ps_norm, h_sigma, p_c = h_sigma_and_paths(
            p, state.p_sigma, state.p_c, whitened_step, step, generation
        )
        new_mean = mean + state.sigma * step  # c_m = 1
        sigma = state.sigma * jnp.exp(p.c_sigma / p.d_sigma * (ps_norm / p.chi_n - 1))  # eq. 44

        # eq. 46-47: w_i° rescales the negative weights by n / ||C^{-1/2} y_i||^2
        sq_norms = jnp.sum(z**2, axis=1)
        circ = jnp.where(weights >= 0, weights, weights * dim / jnp.maximum(sq_norms, 1e-30))
        delta_h = (1 - h_sigma) * p.c_c * (2 - p.c_c)
        decay = 1 + p.c1 * delta_h - p.c1 - p.c_mu * float(np.sum(p.weights))
        rank_mu = jnp.dot(y.T * circ[None], y, precision=HIGHEST)
        cov = decay * state.cov + p.c1 * jnp.outer(p_c, p_c) + p.c_mu * rank_mu
        cov = 0.5 * (cov + cov.T)

        interval = self.eigen_interval or eigen_interval(dim, self.pop_size)
        due = generation - state.eigen_generation >= interval
        eigvecs, eigvals_sqrt = jax.lax.cond(
            due, decompose, lambda _: (state.eigvecs, state.eigvals_sqrt), cov
        )
        new_state = CMAESState(
            mean=unravel(new_mean),
            sigma=sigma,
            cov=cov,
            eigvecs=eigvecs,
            eigvals_sqrt=eigvals_sqrt,
            p_sigma=p_sigma,
            p_c=p_c,
            generation=generation,
            eigen_generation=jnp.where(due, generation, state.eigen_generation),
            history=update_history(state.history, sorted_fitness, state.generation),
        )
        metrics = {
            "sigma": sigma,
            "axis_ratio": jnp.max(eigvals_sqrt) / jnp.min(eigvals_sqrt),
            "h_sigma": h_sigma,
            "best_fitness": sorted_fitness[0],
        }
        return new_state, metrics

    def best(self, state: CMAESState) -> Params:
        return state.mean

    def termination_criteria(self, state: CMAESState) -> dict[str, Bool[Array, ""]]:
        """The termination criteria of Hansen (2016), appendix B.3 (as in pycma), by name.

        ``tolx``: ``sigma sqrt(C_ii)`` and ``sigma |p_c|_i`` below ``tol_x`` for all ``i``;
        ``tolfun``, ``equalfunvals``, ``stagnation``: see :func:`history_criteria`;
        ``noeffectaxis``: adding 0.1 std along a principal axis leaves the mean unchanged;
        ``noeffectcoord``: adding 0.2 std to a coordinate leaves it unchanged;
        ``conditioncov``: ``cond(C) > tol_condition``, or ``C`` as ill-conditioned as its
        dtype resolves (``cond(C) > 1 / (2 eps)``, about 4e6 in float32);
        ``tolupsigma``: ``sigma / sigma_0 > 1e20 max(D)`` (divergence).
        """
        mean, _ = ravel_pytree(state.mean)
        tol_x = 1e-12 * self.init_std if self.tol_x is None else self.tol_x
        std = state.sigma * jnp.sqrt(jnp.diagonal(state.cov))
        axes = 0.1 * state.sigma * state.eigvals_sqrt[None] * state.eigvecs  # columns: axes
        d_max, d_min = jnp.max(state.eigvals_sqrt), jnp.min(state.eigvals_sqrt)
        criteria = {
            "tolx": jnp.all(std < tol_x) & jnp.all(state.sigma * jnp.abs(state.p_c) < tol_x),
            "noeffectaxis": jnp.any(jnp.all(mean[:, None] + axes == mean[:, None], axis=0)),
            "noeffectcoord": jnp.any(mean + 0.2 * std == mean),
            "conditioncov": (d_max / d_min) ** 2
            > jnp.minimum(self.tol_condition, 0.5 / float(jnp.finfo(state.cov.dtype).eps)),
            "tolupsigma": state.sigma / self.init_std > 1e20 * d_max,
        }
        criteria.update(
            history_criteria(
                state.history, state.generation, self.tol_fun, mean.shape[0], self.pop_size
            )
        )
        return criteria

    def should_stop(self, state: CMAESState) -> Bool[Array, ""]:
        """Whether any of :meth:`termination_criteria` fires (jittable)."""
        criteria = self.termination_criteria(state)
        return jnp.any(jnp.stack(list(criteria.values())))
