"""JADE (Zhang & Sanderson, 2009, "JADE: Adaptive Differential Evolution With Optional External
Archive"), on the base it shares with SHADE (:mod:`evolax.algorithms.de.adaptive`)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.algorithms.base import check_min_pop_size
from evolax.algorithms.de.adaptive import SCALE as SCALE
from evolax.algorithms.de.adaptive import (
    AdaptiveDE,
    AdaptiveDEState,
    clipped_normal,
    lehmer_mean,
    pbest_count,
    truncated_cauchy,
    weighted_mean,
)
from evolax.algorithms.de.adaptive import AdaptiveDraws as AdaptiveDraws
from evolax.algorithms.de.adaptive import adaptive_draws as adaptive_draws
from evolax.algorithms.de.adaptive import current_to_pbest_trials as current_to_pbest_trials
from evolax.algorithms.de.adaptive import second_index as second_index
from evolax.algorithms.de.adaptive import successes as successes
from evolax.algorithms.de.adaptive import update_archive as update_archive
from evolax.validation import check_in_interval, check_positive


@chex.dataclass(frozen=True, kw_only=True)
class JADEState(AdaptiveDEState):
    """JADE's state: :class:`AdaptiveDEState` plus ``mu_F`` and ``mu_CR`` (scalars)."""

    mu_F: Float[Array, ""]
    mu_CR: Float[Array, ""]


class JADE(AdaptiveDE):
    """JADE (Zhang & Sanderson, 2009, "JADE: Adaptive Differential Evolution With Optional
    External Archive", IEEE TEVC 13(5)), maximising.

    Each ``ask`` draws per member ``F_i ~ Cauchy(mu_F, 0.1)`` (regenerated while ``<= 0``, set
    to 1 above 1: drawn in one step by the conditional inverse CDF, :func:`truncated_cauchy`)
    and ``CR_i ~ N(mu_CR, 0.1)`` clipped to ``[0, 1]``, and builds DE/current-to-pbest/1/bin
    trials (:func:`current_to_pbest_trials`; ``x~_r2`` from the population and the archive of
    replaced parents). ``tell`` keeps trial ``i`` if its fitness is ``>=`` its parent's; a
    strict improvement is a success: the parent goes to the archive (randomly thinned back to
    ``NP``) and ``F_i, CR_i`` to ``S_F, S_CR``; then ``mu_CR <- (1 - c) mu_CR + c mean(S_CR)``
    and ``mu_F <- (1 - c) mu_F + c mean_L(S_F)`` (Lehmer mean ``sum F^2 / sum F``), both left
    as they are when no trial succeeded. ``mu_F = mu_CR = 0.5`` at the start.

    The initial population is ``x0 + init_std * N(0, I)`` (the paper samples the search box);
    the first ``ask`` returns it unchanged so it is evaluated first. The paper's bound repair
    is not applied (genomes are unbounded). Defaults are the paper's (``c = 0.1, p = 0.05``,
    archive of ``NP``).

    Args:
        pop_size: ``NP``, at least 3 (``r1, r2`` differ from ``i`` and each other).
        archive: keep the external archive (JADE with archive; ``False``: without).
        c: adaptation rate of ``mu_F`` and ``mu_CR``, in ``[0, 1]``.
        p: ``x_pbest`` is drawn among the top ``ceil(p NP)`` members, in ``(0, 1]``.
        init_std: spread of the initial population around ``x0``, positive.
    """

    pop_size: int = eqx.field(static=True)
    archive: bool = eqx.field(static=True, default=True)
    c: float = 0.1
    p: float = 0.05
    init_std: float = 1.0

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 3, "for JADE (r1 and r2 differ from i and each other)")
        check_in_interval("c", self.c, 0, 1)
        check_in_interval("p", self.p, 0, 1, low_open=True)
        check_positive("init_std", self.init_std)

    def _init(self, key, x0):
        half = jnp.asarray(0.5, x0.dtype)
        return JADEState(**self._adaptive_init(key, x0), mu_F=half, mu_CR=half)

    def _parameters(self, state, draws):
        F = truncated_cauchy(state.mu_F, draws.f_u)
        CR = clipped_normal(state.mu_CR, draws.cr_z)
        return F, CR, jnp.full(self.pop_size, pbest_count(self.p, self.pop_size))

    def _tell(self, key, state, x, fitness):
        state, success, _, metrics = self._select(key, state, x, fitness)
        weights = success.astype(fitness.dtype)
        any_success = jnp.any(success)
        mean_CR = weighted_mean(state.crossover_rates, weights)
        mean_F = lehmer_mean(state.differential_weights, weights)
        mu_CR = jnp.where(any_success, (1 - self.c) * state.mu_CR + self.c * mean_CR, state.mu_CR)
        mu_F = jnp.where(any_success, (1 - self.c) * state.mu_F + self.c * mean_F, state.mu_F)
        state = state.replace(mu_F=mu_F.astype(fitness.dtype), mu_CR=mu_CR.astype(fitness.dtype))
        return state, {**metrics, "mu_F": mu_F, "mu_CR": mu_CR}
