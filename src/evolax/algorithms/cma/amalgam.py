"""The iAMaLGaM family's shared maths (Bosman, Grahl & Thierens, 2008 and 2013): truncation
selection with elitism, maximum-likelihood estimates learnt incrementally, the anticipated
mean shift (AMS) and adaptive variance scaling (AVS) triggered by the standard-deviation ratio
(SDR). :class:`~evolax.algorithms.cma.iamalgam_full.IAMaLGaMFull` and
:class:`~evolax.algorithms.cma.iamalgam_univariate.IAMaLGaMUnivariate` write only their
covariance (a full matrix, or its diagonal).

The paper's parameter-free settings are regressions on the dimension ``l`` and the selection
size ``|S|`` (Bosman et al., 2013): the population size ``n = c sqrt(l)`` and the learning
rates ``eta = 1 - exp(alpha |S|^beta / l^gamma)`` of the covariance and of the mean shift, with
``(c, alpha, beta, gamma)`` per covariance structure (:class:`Guideline`). The paper's text
was not at hand: the constants, and the details the module's classes document as the
reference code's, were read from Bosman's reference implementation (``AMaLGaM-Full.c``, and
``iAMaLGaM-Full-Free.c`` as ported to ``gomea/src/mixed_integer/iamalgam.cpp`` in the GitHub
repository RubenNair/mihea) and from HillVallEA (Maree, Alderliesten, Thierens & Bosman, 2018;
``scmaree/HillVallEA``, ``iamalgam.cpp`` and ``iamalgam_univariate.cpp``).
"""

from __future__ import annotations

import abc
import functools
import math
from typing import Any, ClassVar, NamedTuple

import chex
import equinox as eqx
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Bool, Float, Int

from evolax.algorithms.base import (
    HIGHEST,
    DistributionAlgorithm,
    DistributionState,
    S,
    check_min_pop_size,
    normal,
)
from evolax.validation import (
    check_in_interval,
    check_non_negative,
    check_positive,
    check_positive_int,
)


class Guideline(NamedTuple):
    """A covariance structure's parameter-free settings: ``n = pop_coefficient sqrt(l)``,
    ``eta_Sigma = 1 - exp(cov[0] |S|^cov[1] / l^cov[2])`` and ``eta_shift`` likewise with
    ``shift``."""

    pop_coefficient: float
    cov: tuple[float, float, float]
    shift: tuple[float, float, float]


class AMaLGaMParameters(NamedTuple):
    """The derived sizes and rates of one configuration (Python numbers).

    ``n`` is the paper's population size, the new samples plus the elite; ``n_selected`` is
    ``|S| = floor(tau n)``; ``n_ams`` the samples shifted by AMS, ``floor(alpha_AMS (n - 1))``
    with ``alpha_AMS = tau n / (2 (n - 1))``; ``cov_lr`` and ``shift_lr`` the guideline's
    ``eta_Sigma`` and ``eta_shift``; ``max_no_improvement`` is ``NIS_MAX``.
    """

    n: int
    n_selected: int
    n_ams: int
    cov_lr: float
    shift_lr: float
    max_no_improvement: int


def learning_rate(coefficients: tuple[float, float, float], n_selected: int, dim: int) -> float:
    """``1 - exp(alpha |S|^beta / l^gamma)`` for ``coefficients = (alpha, beta, gamma)``."""
    alpha, beta, gamma = coefficients
    return 1 - math.exp(alpha * n_selected**beta / dim**gamma)


def selection_size(pop_size: int, selection_ratio: float, elitist: bool) -> int:
    """``|S| = floor(tau n)`` of the paper's population ``n = pop_size + elitist``."""
    return int(selection_ratio * (pop_size + int(elitist)))


def guideline_pop_size(
    dim: int, coefficient: float, selection_ratio: float = 0.35, elitist: bool = True
) -> int:
    """The ``pop_size`` of the paper's population size ``n = floor(max(c sqrt(l), floor(2 /
    tau + 1)))``: ``n - 1`` new samples besides the elite (``n`` without elitism). The lower
    bound ``floor(2 / tau + 1)``, which keeps ``|S| >= 2``, is HillVallEA's."""
    n = int(max(float(int(2 / selection_ratio + 1)), coefficient * math.sqrt(dim)))
    return n - int(elitist)


@functools.lru_cache(maxsize=128)
def amalgam_parameters(
    guideline: Guideline,
    dim: int,
    pop_size: int,
    selection_ratio: float,
    elitist: bool,
    max_no_improvement: int | None,
) -> AMaLGaMParameters:
    """The sizes and guideline rates for dimension ``dim`` (see :class:`AMaLGaMParameters`);
    ``max_no_improvement`` ``None`` means the paper's ``NIS_MAX = 25 + l``."""
    n = pop_size + int(elitist)
    n_selected = selection_size(pop_size, selection_ratio, elitist)
    alpha_ams = 0.5 * selection_ratio * n / (n - 1)  # as the reference code computes it
    return AMaLGaMParameters(
        n=n,
        n_selected=n_selected,
        n_ams=int(alpha_ams * (n - 1)),
        cov_lr=learning_rate(guideline.cov, n_selected, dim),
        shift_lr=learning_rate(guideline.shift, n_selected, dim),
        max_no_improvement=25 + dim if max_no_improvement is None else max_no_improvement,
    )


def adapt_multiplier(
    multiplier: Float[Array, ""],
    no_improvement: Int[Array, ""],
    improved: Bool[Array, ""],
    sdr: Float[Array, ""],
    decrease,
    sdr_threshold,
    max_no_improvement: int,
) -> tuple[Float[Array, ""], Int[Array, ""]]:
    """Adaptive variance scaling (Bosman et al., 2008): the new ``(c_mult, NIS)``.

    After an improvement of the best fitness: ``NIS = 0``, ``c_mult`` is raised to at least
    1 and multiplied by ``1 / decrease`` if ``SDR > sdr_threshold``. Otherwise ``NIS`` counts
    the generation while ``c_mult <= 1``; ``c_mult`` shrinks by ``decrease`` while above 1 or
    once ``NIS >= max_no_improvement``, and returns to 1 if it fell below 1 sooner.
    """
    raised = jnp.maximum(multiplier, 1.0)
    raised = jnp.where(sdr > sdr_threshold, raised * (1.0 / decrease), raised)
    stretch = jnp.where(multiplier <= 1.0, no_improvement + 1, no_improvement)
    lowered = jnp.where(
        (multiplier > 1.0) | (stretch >= max_no_improvement), multiplier * decrease, multiplier
    )
    lowered = jnp.where((stretch < max_no_improvement) & (lowered < 1.0), 1.0, lowered)
    return (
        jnp.where(improved, raised, lowered).astype(multiplier.dtype),
        jnp.where(improved, 0, stretch).astype(no_improvement.dtype),
    )


@chex.dataclass(frozen=True, kw_only=True)
class AMaLGaMState(DistributionState):
    """The state iAMaLGaM's variants share: samples ``N(mean, c_mult Sigma)``.

    Attributes:
        mean: the mean ``mu``, ``[D]``.
        std: the sampling deviations ``sqrt(c_mult Sigma_ii)``, ``[D]`` (derived from
            ``multiplier`` and the covariance after each update; the update does not read it).
        multiplier: the distribution multiplier ``c_mult``, ``[]``.
        shift: the anticipated mean shift ``mu_shift``, ``[D]``.
        no_improvement: ``NIS``, generations without improvement while ``c_mult <= 1``.
        estimates: the number of model estimates so far (``0`` before the first ``tell``).
    """

    multiplier: Float[Array, ""]
    shift: Float[Array, " dim"]
    no_improvement: Int[Array, ""]
    estimates: Int[Array, ""]


class IAMaLGaM(DistributionAlgorithm[S]):
    """iAMaLGaM's maths and settings apart from the covariance's structure (see the module's
    docstring); a member writes :meth:`_init_covariance`, :meth:`_sample`, :meth:`_whiten`,
    :meth:`_estimate`, :meth:`_update_covariance` and :meth:`_variances`, and sets
    :attr:`guideline` (the variants share every field).

    Args:
        pop_size: new samples per generation, ``n - 1`` of the paper's ``n`` (``n`` without
            elitism).
        init_std: the deviation of the first population around ``x0``, positive (``Sigma``
            starts at ``init_std^2 I``; the paper draws it uniformly in a box).
        selection_ratio: ``tau`` of the truncation selection, in ``(0, 1)`` (0.35).
        elitist: keep the best solution so far as a candidate for selection (the paper's
            elitism); ``False`` selects from the new samples alone (as evosax).
        multiplier_decrease: ``eta_DEC`` of AVS in ``(0, 1)`` (0.9); ``eta_INC = 1 / eta_DEC``.
        sdr_threshold: ``theta_SDR``, ``>= 0`` (1.0): the SDR above which ``c_mult`` grows.
        max_no_improvement: ``NIS_MAX``, a positive integer; ``None`` for the paper's ``25 +
            D``.
        ams_distance: ``delta_AMS``, ``>= 0`` (2.0).
        cov_lr: ``eta_Sigma`` in ``(0, 1]``; ``None`` for the guideline's.
        shift_lr: ``eta_shift`` in ``(0, 1]``; ``None`` for the guideline's.
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0
    selection_ratio: float = eqx.field(static=True, default=0.35)
    elitist: bool = eqx.field(static=True, default=True)
    multiplier_decrease: float = 0.9
    sdr_threshold: float = 1.0
    max_no_improvement: int | None = eqx.field(static=True, default=None)
    ams_distance: float = 2.0
    cov_lr: float | None = None
    shift_lr: float | None = None
    guideline: ClassVar[Guideline]

    def __check_init__(self):
        ratio = self.selection_ratio
        check_in_interval("selection_ratio", ratio, 0, 1, low_open=True, high_open=True)
        if isinstance(self.pop_size, int):  # the smallest pop_size that selects two
            minimum = max(1, int(2 / ratio) - 1 - int(self.elitist))
            while selection_size(minimum, ratio, self.elitist) < 2:
                minimum += 1
            elite = " besides the elite" if self.elitist else ""
            why = f"to select 2 solutions with selection_ratio={ratio}{elite}"
            check_min_pop_size(self.pop_size, minimum, why)
        check_positive("init_std", self.init_std)
        decrease = self.multiplier_decrease
        check_in_interval("multiplier_decrease", decrease, 0, 1, low_open=True, high_open=True)
        check_non_negative("sdr_threshold", self.sdr_threshold)
        if self.max_no_improvement is not None:
            check_positive_int("max_no_improvement", self.max_no_improvement)
        check_non_negative("ams_distance", self.ams_distance)
        for name in ("cov_lr", "shift_lr"):
            if getattr(self, name) is not None:
                check_in_interval(name, getattr(self, name), 0, 1, low_open=True)

    def parameters(self, dim: int) -> AMaLGaMParameters:
        """The sizes and the paper's guideline rates for dimension ``dim``."""
        return amalgam_parameters(
            self.guideline,
            dim,
            self.pop_size,
            self.selection_ratio,
            self.elitist,
            self.max_no_improvement,
        )

    # ---- the covariance, written by each member -------------------------------------------

    @abc.abstractmethod
    def _init_covariance(self, x0: Float[Array, " dim"]) -> dict[str, Any]:
        """The covariance fields of ``Sigma = init_std^2 I``."""

    @abc.abstractmethod
    def _sample(self, state: S, z: Float[Array, "pop dim"]) -> Float[Array, "pop dim"]:
        """``L z_k`` as rows (``L L^T = Sigma``), for standard normal rows ``z``."""

    @abc.abstractmethod
    def _whiten(self, state: S, v: Float[Array, " dim"]) -> Float[Array, " dim"]:
        """``L^{-1} v`` for one vector."""

    @abc.abstractmethod
    def _estimate(
        self, deviations: Float[Array, "sel dim"], weights: Float[Array, " sel"]
    ) -> Float[Array, "..."]:
        """The maximum-likelihood ``Sigma_hat = sum_i w_i d_i d_i^T`` (or its diagonal)."""

    @abc.abstractmethod
    def _update_covariance(
        self, state: S, estimate: Float[Array, "..."], first: Bool[Array, ""], lr
    ) -> dict[str, Any]:
        """The new covariance fields: ``Sigma <- (1 - lr) Sigma + lr Sigma_hat``, or the
        diagonal of ``Sigma_hat`` at the ``first`` estimate."""

    @abc.abstractmethod
    def _variances(self, covariance: dict[str, Any]) -> Float[Array, " dim"]:
        """The diagonal of ``Sigma`` in the covariance fields ``covariance``."""

    # ---- the shared maths -----------------------------------------------------------------

    def _init_common(self, x0: Float[Array, " dim"]) -> dict[str, Any]:
        covariance = self._init_covariance(x0)
        one = jnp.ones([], x0.dtype)
        return dict(
            mean=x0,
            std=jnp.sqrt(self._variances(covariance)),
            multiplier=one,
            shift=jnp.zeros_like(x0),
            no_improvement=jnp.zeros([], jnp.int32),
            estimates=jnp.zeros([], jnp.int32),
            **covariance,
        )

    def _ask(self, key, state):
        p = self.parameters(state.mean.shape[0])
        z = normal(key, (self.pop_size, state.mean.shape[0]), state.mean)
        x = state.mean[None] + jnp.sqrt(state.multiplier) * self._sample(state, z)
        # AMS: the first n_ams samples move c_mult delta_AMS mu_shift ahead (mu_shift = 0
        # until the second estimate)
        ams = self.ams_distance * state.multiplier * state.shift
        return x.at[: p.n_ams].add(ams[None]), state

    def _tell(self, key, state, x, fitness):
        del key
        p = self.parameters(x.shape[1])
        cov_lr = p.cov_lr if self.cov_lr is None else self.cov_lr
        shift_lr = p.shift_lr if self.shift_lr is None else self.shift_lr
        first = state.estimates == 0  # the first population: no AVS, no mean shift yet
        elite = ravel_pytree(state.best_genome)[0]  # the best solution so far

        # AVS from the samples of N(mean, c_mult Sigma) that beat the best so far
        improving = fitness > state.best_fitness
        count = jnp.sum(improving)
        average = jnp.dot(improving.astype(x.dtype), x, precision=HIGHEST) / jnp.maximum(count, 1)
        whitened = self._whiten(state, average - state.mean) / jnp.sqrt(state.multiplier)
        sdr = jnp.where(count > 0, jnp.max(jnp.abs(whitened)), 0.0)
        multiplier, no_improvement = adapt_multiplier(
            state.multiplier,
            state.no_improvement,
            count > 0,
            sdr,
            self.multiplier_decrease,
            self.sdr_threshold,
            p.max_no_improvement,
        )
        multiplier = jnp.where(first, state.multiplier, multiplier)
        no_improvement = jnp.where(first, state.no_improvement, no_improvement)

        # truncation selection of the |S| best, the elite among the candidates
        if self.elitist:
            x = jnp.concatenate([elite[None], x])
            fitness = jnp.concatenate([state.best_fitness[None], fitness])
        best = jnp.argsort(-fitness, stable=True)[: p.n_selected]  # non-finite last
        selected = x[best]
        finite = (fitness[best] > -jnp.inf).astype(x.dtype)
        weights = finite / jnp.sum(finite)  # a non-finite fitness is not estimated from

        mean = jnp.dot(weights, selected, precision=HIGHEST)
        mean = jnp.where(multiplier < 1.0, selected[0], mean)  # focus on the best
        estimate = self._estimate(selected - mean[None], weights)
        covariance = self._update_covariance(state, estimate, first, cov_lr)
        step = mean - state.mean
        shift = (1 - shift_lr) * state.shift + shift_lr * step
        shift = jnp.where(first, state.shift, jnp.where(state.estimates == 1, step, shift))
        std = jnp.sqrt(multiplier * self._variances(covariance))
        new_state = state.replace(
            mean=mean,
            std=std,
            multiplier=multiplier,
            shift=shift,
            no_improvement=no_improvement,
            estimates=state.estimates + 1,
            **covariance,
        )
        metrics = {"multiplier": multiplier, "sdr": sdr, "std": jnp.mean(std)}
        return new_state, metrics
