"""The CMA family's shared base: the evolution paths, step-size control, weights and
termination criteria of CMA-ES (Hansen, 2016, "The CMA Evolution Strategy: A Tutorial"), with
the defaults of pycma 4 where they differ from the tutorial (see :func:`cma_parameters`,
:func:`h_sigma_and_paths`, :func:`step_size_factor`), which
:class:`~evolax.algorithms.cma.cma_es.CMAES` and :class:`~evolax.algorithms.cma.sep_cma_es.SepCMAES`
share; each writes only its covariance."""

from __future__ import annotations

import abc
import functools
import math
from typing import Any, ClassVar, NamedTuple

import chex
import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from evolax.algorithms.base import (
    HIGHEST,
    DistributionAlgorithm,
    DistributionState,
    S,
    check_min_pop_size,
    normal,
)
from evolax.algorithms.shaping import finite_fitness, rank_utilities
from evolax.compiled import compiled
from evolax.validation import check_positive


def default_pop_size(dim: int) -> int:
    """Hansen (2016), table 1: ``4 + floor(3 ln d)``."""
    return 4 + int(3 * math.log(dim))


class CMAParameters(NamedTuple):
    """The strategy parameters (Python floats; ``weights`` by rank), see :func:`cma_parameters`.

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


def expected_norm(dim: int) -> float:
    """``E|N(0, I_d)| = sqrt(2) Gamma((d + 1) / 2) / Gamma(d / 2)``, exactly (pycma's
    ``Mh.chiN`` tabulates these values; Hansen (2016) approximates them)."""
    return math.sqrt(2) * math.exp(math.lgamma((dim + 1) / 2) - math.lgamma(dim / 2))


@functools.lru_cache(maxsize=128)
def cma_parameters(
    dim: int, pop_size: int, active: bool = True, separable: bool = False
) -> CMAParameters:
    """The default strategy parameters of pycma 4 (``cma.evolution_strategy``), which refine
    Hansen (2016), table 1 (weights: eq. 49-53).

    Where pycma departs from the 2016 tutorial:

    - ``c_sigma = min(1/2, (mu_eff + 2) / (n + mu_eff + 3))``, not ``... / (n + mu_eff + 5)``
      (``sigma_adaptation.CMAAdaptSigmaCSA.compute_cs``).
    - ``d_sigma = 1 + c_sigma + 2 max(0, a sqrt((mu_eff - 1) / (n + 1)) - 1)`` with ``a =
      max(1, 3 (1 - 2^(-n / 9)))`` (``CMAAdaptSigmaCSA.compute_damps`` without mirrored
      sampling, which pycma uses only below ``lambda = 6``); the tutorial has ``a = 1``.
    - ``c1 = min(1, lambda / 6) 2 / ((n + 1.3)^2 + mu_eff)`` and ``c_mu = min(1 - c1, 2 (1/4 +
      mu_eff - 2 + 1 / mu_eff) / ((n + 2)^2 + mu_eff))`` (``interfaces.
      StatisticalModelSamplerWithZeroMeanBaseClass.parameters``; the tutorial has no ``1/4``
      and no ``lambda / 6``). The negative weights are scaled with these (``recombination_
      weights.RecombinationWeights.finalize_negative_weights``, the tutorial's eq. 53).
    - ``chi_n`` is exactly ``E|N(0, I)|`` (:func:`expected_norm`).

    pycma's ``h_sigma`` test and capped step-size change are in :func:`h_sigma_and_paths` and
    :func:`step_size_factor`. Not followed: below ``lambda = 6`` pycma samples mirrored pairs
    (``CMA_mirrors``), which also lowers its ``d_sigma``, and from ``d = 300`` it adapts
    ``sigma`` by TPA instead of CSA (``evolution_strategy.TPA_dimension``).

    With ``separable``, pycma's ``CMA_diagonal=True`` rates (``options_parameters.
    CMAEvolutionStrategyParameters.set``): ``c_c = (1 + 1/n + mu_eff/n) / (sqrt(n) + 1/n + 2
    mu_eff/n)``, ``c1 = 1 / (n + 2 sqrt(n) + mu_eff/n)``, ``c_mu = min(1 - c1, (1/4 + mu_eff +
    1/mu_eff - 2) / (n + 4 sqrt(n) + mu_eff/2))``, and the negative weights are not limited
    for positive definiteness (the diagonal update is multiplicative).

    Args:
        dim: search-space dimension ``n``.
        pop_size: ``lambda``, at least 2.
        active: give the worse half negative weights (eq. 53, active CMA); else zero.
        separable: the learning rates of a diagonal covariance.
    """
    n, lam = dim, pop_size
    mu = lam // 2
    raw = math.log((lam + 1) / 2) - np.log(np.arange(1, lam + 1))  # eq. 49
    positive, negative = raw[raw > 0], raw[raw < 0]
    mu_eff = positive.sum() ** 2 / (positive**2).sum()  # eq. 50
    raw_neg = raw[mu:]
    mu_eff_neg = raw_neg.sum() ** 2 / (raw_neg**2).sum()
    c_sigma = min(0.5, (mu_eff + 2) / (n + mu_eff + 3))
    damp = max(1.0, 3 * (1 - 0.5 ** (n / 9)))
    d_sigma = 1 + 2 * max(0.0, damp * math.sqrt((mu_eff - 1) / (n + 1)) - 1) + c_sigma
    if separable:
        c_c = (1 + 1 / n + mu_eff / n) / (math.sqrt(n) + 1 / n + 2 * mu_eff / n)
        c1 = 1 / (n + 2 * math.sqrt(n) + mu_eff / n)
        c_mu = min(1 - c1, (0.25 + mu_eff + 1 / mu_eff - 2) / (n + 4 * math.sqrt(n) + mu_eff / 2))
    else:
        c_c = (4 + mu_eff / n) / (n + 4 + 2 * mu_eff / n)
        c1 = min(1, lam / 6) * 2 / ((n + 1.3) ** 2 + mu_eff)
        c_mu = min(1 - c1, 2 * (0.25 + mu_eff - 2 + 1 / mu_eff) / ((n + 2) ** 2 + mu_eff))
    weights = np.where(raw >= 0, raw / positive.sum(), 0.0)
    if active and c_mu > 0:  # eq. 51-53
        alpha_mu_neg = 1 + c1 / c_mu
        alpha_mu_eff_neg = 1 + 2 * mu_eff_neg / (mu_eff + 2)
        alpha_posdef_neg = math.inf if separable else (1 - c1 - c_mu) / (n * c_mu)
        scale = min(alpha_mu_neg, alpha_mu_eff_neg, alpha_posdef_neg)
        weights = np.where(raw < 0, scale * raw / -negative.sum(), weights)
    return CMAParameters(  # Python floats: numpy scalars would promote float32 under x64
        mu=mu,
        weights=weights,
        mu_eff=float(mu_eff),
        c_sigma=float(c_sigma),
        d_sigma=float(d_sigma),
        c_c=float(c_c),
        c1=float(c1),
        c_mu=float(c_mu),
        chi_n=expected_norm(n),
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


def init_history(dim: int, pop_size: int, dtype=jnp.float32) -> FitnessHistory:
    """Empty histories (filled with ``-inf``; the criteria wait until they are full)."""
    n_fun, _, n_window = history_lengths(dim, pop_size)
    size = max(2 * n_window, 1)
    return FitnessHistory(
        best=jnp.full(n_fun, -jnp.inf, dtype),
        last_worst=jnp.asarray(-jnp.inf, dtype),
        best_ever=jnp.asarray(-jnp.inf, dtype),
        best_ever_generation=jnp.asarray(0, jnp.int32),
        window_best=jnp.full(size, -jnp.inf, dtype),
        window_median=jnp.full(size, -jnp.inf, dtype),
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
    # each buffer rewritten by one select (an in-place update of a buffer that is not donated
    # is a copy and an update: two kernels)
    at_slot = sample & (jnp.arange(size) == slot)
    return FitnessHistory(
        best=jnp.where(jnp.arange(n_fun) == generation % n_fun, best, history.best),
        last_worst=sorted_fitness[-1],
        best_ever=jnp.where(improved, best, history.best_ever),
        best_ever_generation=jnp.where(improved, count, history.best_ever_generation),
        window_best=jnp.where(at_slot, best, history.window_best),
        window_median=jnp.where(at_slot, median, history.window_median),
    )


HISTORY_CRITERIA = ("tolfun", "equalfunvals", "stagnation")
"""The termination criteria that read the fitness history (:func:`history_criteria`)."""


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


def h_sigma_and_paths(
    p: CMAParameters,
    p_sigma: Float[Array, " dim"],
    p_c: Float[Array, " dim"],
    whitened_step: Float[Array, " dim"],
    step: Float[Array, " dim"],
    generation: Int[Array, ""],
):
    """Evolution paths (Hansen, 2016, eq. 43 and 45) and the stall ``h_sigma``.

    ``h_sigma = 1`` iff ``|p_sigma|^2 / (1 - (1 - c_sigma)^(2 (g + 1))) / n < 2 + 4 / (n +
    1)``, pycma's squared-norm test (``sigma_adaptation.CMAAdaptSigmaBase.hsig``); the tutorial
    compares the norm with ``(1.4 + 2 / (n + 1)) E|N(0, I)|``, whose square is within 2% of
    this threshold (above it for n <= 10, below beyond).

    Args:
        whitened_step: ``C^{-1/2} <y>_w``.
        step: what ``p_c`` accumulates, ``<y>_w`` (or ``C^{-1/2} <y>_w``, see
            :attr:`CMAFamily.whitened_c_path`).
        generation: ``g + 1``, the number of the generation being told (from 1).
    """
    dim = p_sigma.shape[0]
    p_sigma = (1 - p.c_sigma) * p_sigma + math.sqrt(
        p.c_sigma * (2 - p.c_sigma) * p.mu_eff
    ) * whitened_step
    squared_norm = jnp.sum(p_sigma**2)
    correction = 1 - (1 - p.c_sigma) ** (2 * generation.astype(p_sigma.dtype))
    h_sigma = (squared_norm / correction / dim < 2 + 4 / (dim + 1)).astype(p_sigma.dtype)
    p_c = (1 - p.c_c) * p_c + h_sigma * math.sqrt(p.c_c * (2 - p.c_c) * p.mu_eff) * step
    return p_sigma, jnp.sqrt(squared_norm), h_sigma, p_c


def step_size_factor(p: CMAParameters, p_sigma_norm: Float[Array, ""]) -> Float[Array, ""]:
    """CSA's factor ``exp(min(1, c_sigma / d_sigma (|p_sigma| / E|N(0, I)| - 1)))`` (Hansen,
    2016, eq. 44), its exponent capped at 1 as in pycma (``CMAAdaptSigmaCSA.update2``,
    ``max_delta_log_sigma = 1``)."""
    return jnp.exp(jnp.minimum(1.0, p.c_sigma / p.d_sigma * (p_sigma_norm / p.chi_n - 1)))


def compensated(dtype) -> bool:
    """Whether the family keeps its mean's rounding error (:attr:`CMAState.mean_residual`):
    for float32 and narrower genomes; float64 computes as pycma does."""
    return jnp.finfo(dtype).bits < 64


def two_sum(a: Array, b: Array) -> tuple[Array, Array]:
    """``s, e`` with ``s = fl(a + b)`` and ``s + e = a + b`` exactly (Knuth's TwoSum)."""
    s = a + b
    b_part = s - a
    return s, (a - (s - b_part)) + (b - b_part)


def around_mean(mean: Array, residual: Array, steps: Array) -> Array:
    """The samples ``mean + steps`` (rows) of a mean held as ``mean + residual``: the residual
    joins the steps before they round (float32); float64 adds the steps to ``mean``."""
    if not compensated(mean.dtype):
        return mean[None] + steps
    return mean[None] + (residual[None] + steps)


def advance_mean(mean: Array, residual: Array, delta: Array) -> tuple[Array, Array]:
    """``mean + residual + delta`` as a new ``(mean, residual)`` pair: TwoSum in float32, so
    that what rounds off is kept; ``(mean + delta, residual)`` in float64, as pycma."""
    if not compensated(mean.dtype):
        return mean + delta, residual
    return two_sum(mean, residual + delta)


def moved(mean: Array, residual: Array, delta: Array) -> Array:
    """Whether adding ``delta`` moves the mean as the family holds it: in float64 ``mean +
    delta != mean`` (pycma's test); with a residual (float32), whether ``delta`` exceeds half
    the compensated pair's resolution, ``eps^2 |mean|`` (``eps = 2^-23``)."""
    if not compensated(mean.dtype):
        return mean + delta != mean
    eps = float(jnp.finfo(mean.dtype).eps)
    return jnp.abs(delta) > 0.5 * eps**2 * jnp.abs(mean + residual)


def extremes(values: Float[Array, " n"]) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """``min(values), max(values)`` from one reduction (``max`` over ``[-values, values]``;
    two reductions are two kernels)."""
    low, high = jnp.max(jnp.stack([-values, values]), axis=1)
    return -low, high


@chex.dataclass(frozen=True, kw_only=True)
class CMAState(DistributionState):
    """The state the CMA family shares: ``N(mean, std^2 C)`` and its evolution paths.

    Attributes:
        mean_residual: in float32, the rounding error of ``mean``, ``[D]``: the distribution's
            mean is ``mean + mean_residual`` to about twice float32's precision, so that mean
            steps below ``mean``'s last bit (the last generations on an ill-conditioned
            function whose optimum is not at 0) still add up; zero in float64.
        p_sigma: the conjugate evolution path, ``[D]``.
        p_c: the evolution path of ``C``, ``[D]`` (in whitened coordinates where
            :attr:`CMAFamily.whitened_c_path`).
        history: recent fitness for :meth:`CMAFamily.should_stop`.
    """

    mean_residual: Float[Array, " dim"]
    p_sigma: Float[Array, " dim"]
    p_c: Float[Array, " dim"]
    history: FitnessHistory


class CMAFamily(DistributionAlgorithm[S]):
    """CMA-ES's maths apart from the covariance (Hansen, 2016, appendix A): sampling ``x_k =
    mean + std A z_k`` with ``A A^T = C``, the weighted recombination of the ranked samples
    (non-finite fitness gets the worst rank's weight), the paths ``p_sigma`` and ``p_c`` with
    the stall ``h_sigma`` (eq. 43-45), cumulative step-size adaptation (eq. 44) and the
    termination criteria of appendix B.3, with pycma 4's defaults (:func:`cma_parameters`). A
    member writes the covariance: :meth:`_sample`, :meth:`_inverse_sqrt`, :meth:`_covariance`
    and the axes the criteria read.

    Args:
        pop_size: ``lambda``, at least 2 (the tutorial's default is :func:`default_pop_size`).
        init_std: the initial step size ``sigma_0``, positive.
        tol_x: TolX of :meth:`should_stop`; ``None`` means ``1e-12 * init_std``.
        tol_fun: TolFun of :meth:`should_stop` (the tutorial's ``1e-12``).
        tol_condition: :meth:`should_stop` fires when ``cond(C)`` exceeds this.
        fitness_history: record the fitness history of TolFun, EqualFunValues and
            Stagnation (:func:`update_history`); ``False`` leaves those criteria out.
    """

    pop_size: eqx.AbstractVar[int]
    init_std: eqx.AbstractVar[float]
    tol_x: eqx.AbstractVar[float | None]
    tol_fun: eqx.AbstractVar[float]
    tol_condition: eqx.AbstractVar[float]
    fitness_history: eqx.AbstractVar[bool]
    whitened_c_path: ClassVar[bool] = False
    """Whether ``p_c`` accumulates the whitened mean steps ``C^{-1/2} <y>_w`` (pycma's
    ``CMA_diagonal``) rather than ``<y>_w`` (eq. 45)."""

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 2, "to rank samples")
        check_positive("init_std", self.init_std)
        if self.tol_x is not None:
            check_positive("tol_x", self.tol_x)
        check_positive("tol_fun", self.tol_fun)
        check_positive("tol_condition", self.tol_condition)

    @abc.abstractmethod
    def parameters(self, dim: int) -> CMAParameters:
        """The strategy parameters for dimension ``dim``."""

    @abc.abstractmethod
    def _sample(self, state: S, z: Float[Array, "pop dim"]) -> Float[Array, "pop dim"]:
        """``A z_k`` as rows, for standard normal rows ``z``."""

    @abc.abstractmethod
    def _inverse_sqrt(self, state: S, v: Float[Array, " dim"]) -> Float[Array, " dim"]:
        """``C^{-1/2} v`` for one vector (with ``C`` as of the last decomposition)."""

    @abc.abstractmethod
    def _covariance(
        self, state: S, p: CMAParameters, y, weights, p_c, h_sigma, generation
    ) -> dict[str, Any]:
        """The new covariance fields of the state, from the ranked steps ``y`` (rows, best
        first), their whitened ``z``, their ``weights`` and the new path ``p_c``."""

    @abc.abstractmethod
    def _axis_lengths(self, state: S) -> Float[Array, " dim"]:
        """The square roots of ``C``'s eigenvalues (the principal axes' lengths)."""

    @abc.abstractmethod
    def _diagonal(self, state: S) -> Float[Array, " dim"]:
        """The diagonal of ``C``."""

    @abc.abstractmethod
    def _no_effect_axis(self, state: S) -> Bool[Array, ""]:
        """Whether adding 0.1 std along some principal axis leaves the mean unchanged."""

    def _condition_guarded(self, state: S) -> Bool[Array, ""]:
        """Whether the guard on ``C``'s condition number holds its smallest eigenvalue up
        (the metric ``condition_guard``); none by default."""
        del state
        return jnp.asarray(False)

    def _init_paths(self, x0: Float[Array, " dim"]) -> dict[str, Any]:
        dim = x0.shape[0]
        zeros = jnp.zeros(dim, x0.dtype)
        return dict(
            mean=x0,
            mean_residual=jnp.zeros(dim, x0.dtype),
            std=jnp.asarray(self.init_std, x0.dtype),
            p_sigma=zeros,
            p_c=zeros,
            history=init_history(dim, self.pop_size, x0.dtype),
        )

    def _ask(self, key, state):
        z = normal(key, (self.pop_size, state.mean.shape[0]), state.mean)
        steps = state.std * self._sample(state, z)
        return around_mean(state.mean, state.mean_residual, steps), state

    def _tell(self, key, state, x, fitness):
        dim = state.mean.shape[0]
        p = self.parameters(dim)
        n_weighted = int(np.flatnonzero(p.weights)[-1]) + 1  # the worse half only with active CMA
        order = jnp.argsort(-fitness, stable=True)  # best first, non-finite last
        by_rank = jnp.asarray(p.weights[:n_weighted], x.dtype)
        if n_weighted == x.shape[0]:  # every row weighted: weight them in place, no gather
            weights = rank_utilities(fitness, by_rank, order)
        else:  # only the mu best: read just their rows
            x = x[order[:n_weighted]]
            worst = float(p.weights[-1])
            weights = jnp.where(fitness[order[:n_weighted]] > -jnp.inf, by_rank, worst)
        positive = jnp.maximum(weights, 0.0)
        y = (x - state.mean[None] - state.mean_residual[None]) / state.std
        step = jnp.dot(positive, y, precision=HIGHEST)  # <y>_w, eq. 41
        whitened_step = self._inverse_sqrt(state, step)
        generation = state.generation + 1
        path_step = whitened_step if self.whitened_c_path else step
        p_sigma, p_sigma_norm, h_sigma, p_c = h_sigma_and_paths(
            p, state.p_sigma, state.p_c, whitened_step, path_step, generation
        )
        std = state.std * step_size_factor(p, p_sigma_norm)
        covariance = self._covariance(state, p, y, weights, p_c, h_sigma, generation)
        mean, mean_residual = advance_mean(state.mean, state.mean_residual, state.std * step)
        new_state = state.replace(
            mean=mean,
            mean_residual=mean_residual,
            std=std,
            p_sigma=p_sigma,
            p_c=p_c,
            history=(
                update_history(state.history, finite_fitness(fitness)[order], state.generation)
                if self.fitness_history
                else state.history
            ),
            **covariance,
        )
        smallest, largest = extremes(self._axis_lengths(new_state))
        metrics = {
            "std": std,
            "axis_ratio": largest / smallest,
            "condition_guard": self._condition_guarded(new_state).astype(std.dtype),
            "h_sigma": h_sigma,
            "p_sigma_norm": p_sigma_norm,
        }
        return new_state, metrics

    def termination_criteria(self, state: S) -> dict[str, Bool[Array, ""]]:
        """The termination criteria of Hansen (2016), appendix B.3 (as in pycma), by name.

        ``tolx``: every coordinate's std and ``std |p_c|_i`` (in ``x``'s coordinates) below
        ``tol_x``; ``tolfun``, ``equalfunvals``, ``stagnation``: see :func:`history_criteria`
        (always ``False`` without ``fitness_history``);
        ``noeffectaxis``: adding 0.1 std along a principal axis leaves the mean unchanged;
        ``noeffectcoord``: adding 0.2 std to a coordinate leaves it unchanged;
        ``conditioncov``: ``cond(C)`` beyond ``tol_condition``; ``tolupsigma``: ``std /
        init_std > 1e20 max(D)`` (divergence).
        """
        mean, std = state.mean, state.std  # type: ignore[attr-defined]
        tol_x = 1e-12 * self.init_std if self.tol_x is None else self.tol_x
        coordinate_std = std * jnp.sqrt(self._diagonal(state))
        path = state.p_c * (jnp.sqrt(self._diagonal(state)) if self.whitened_c_path else 1)  # type: ignore[attr-defined]
        axes = self._axis_lengths(state)
        criteria = {
            "tolx": jnp.all(coordinate_std < tol_x) & jnp.all(std * jnp.abs(path) < tol_x),
            "noeffectaxis": self._no_effect_axis(state),
            "noeffectcoord": jnp.any(~moved(mean, state.mean_residual, 0.2 * coordinate_std)),  # type: ignore[attr-defined]
            "conditioncov": (jnp.max(axes) / jnp.min(axes)) ** 2 > self.tol_condition,
            "tolupsigma": std / self.init_std > 1e20 * jnp.max(axes),
        }
        if not self.fitness_history:  # no history kept: its criteria never fire
            return criteria | dict.fromkeys(HISTORY_CRITERIA, jnp.asarray(False))
        criteria.update(
            history_criteria(
                state.history,  # type: ignore[attr-defined]
                state.generation,
                self.tol_fun,
                mean.shape[0],
                self.pop_size,
            )
        )
        return criteria

    @compiled
    def should_stop(self, state: S) -> Bool[Array, ""]:
        """Whether any of :meth:`termination_criteria` fires (jittable)."""
        criteria = self.termination_criteria(state)
        return jnp.any(jnp.stack(list(criteria.values())))
