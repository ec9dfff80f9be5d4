"""SHADE (Tanabe & Fukunaga, 2013, "Success-History Based Parameter Adaptation for Differential
Evolution")."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import check_min_pop_size
from evolax.algorithms.de.adaptive import (
    AdaptiveDE,
    AdaptiveDEState,
    clipped_normal,
    lehmer_mean,
    pbest_count,
    truncated_cauchy,
    weighted_mean,
)
from evolax.validation import check_in_interval, check_positive, check_positive_int


@chex.dataclass(frozen=True, kw_only=True)
class SHADEState(AdaptiveDEState):
    """SHADE's state: :class:`~evolax.algorithms.de.adaptive.AdaptiveDEState` plus the success
    history.

    Attributes:
        memory_F: ``M_F``, ``[H]``.
        memory_CR: ``M_CR``, ``[H]``.
        memory_index: ``k``, the slot the next successful generation writes, ``i32[]``.
    """

    memory_F: Float[Array, " H"]
    memory_CR: Float[Array, " H"]
    memory_index: Int[Array, ""]


def p_range(pop_size: int, p_max: float) -> tuple[float, float | Float[Array, ""]]:
    """The interval ``[2 / NP, p_max]`` ``p_i`` is drawn from (``[2 / NP, 2 / NP]`` when
    ``NP < 2 / p_max``)."""
    p_min = 2.0 / pop_size
    return p_min, jnp.maximum(p_max, p_min)


class SHADE(AdaptiveDE):
    """SHADE (Tanabe & Fukunaga, 2013, "Success-History Based Parameter Adaptation for
    Differential Evolution", IEEE CEC), maximising.

    JADE (:class:`~evolax.algorithms.de.jade.JADE`) with a memory of ``H`` pairs
    ``(M_CR, M_F)``, all 0.5 at the start. Each ``ask`` draws per member a slot ``r_i``
    uniform in ``[0, H)``, ``CR_i ~ N(M_CR[r_i], 0.1)`` clipped to ``[0, 1]``,
    ``F_i ~ Cauchy(M_F[r_i], 0.1)`` (regenerated while ``<= 0``, 1 above 1) and
    ``p_i ~ U[2 / NP, p_max]``, and builds current-to-pbest/1/bin trials with ``x_pbest``
    among the top ``ceil(p_i NP)`` members and ``x~_r2`` from the population and an archive of
    ``NP`` replaced parents. ``tell`` keeps trial ``i`` if its fitness is ``>=`` its parent's;
    after a generation with strict improvements, with weights
    ``w_k = Delta f_k / sum Delta f`` (``Delta f_k = f(u_k) - f(x_k)``),
    ``M_CR[k] = sum w CR`` and ``M_F[k] = sum w F^2 / sum w F``, and ``k <- (k + 1) mod H``;
    without one the memory and ``k`` stay.

    The initial population is ``x0 + init_std * N(0, I)``; the first ``ask`` returns it
    unchanged. No bound repair. Defaults are the paper's CEC 2013 settings (``H = 100``,
    ``p_max = 0.2``, archive of ``NP``); when ``NP < 2 / p_max`` every ``p_i`` is ``2 / NP``.

    Args:
        pop_size: ``NP``, at least 3 (``r1, r2`` differ from ``i`` and each other).
        memory_size: ``H``, the number of ``(M_CR, M_F)`` pairs, positive.
        archive: keep the external archive (``False``: SHADE without archive).
        p_max: upper end of the ``p_i`` interval, in ``(0, 1]``.
        init_std: spread of the initial population around ``x0``, positive.
    """

    pop_size: int = eqx.field(static=True)
    memory_size: int = eqx.field(static=True, default=100)
    archive: bool = eqx.field(static=True, default=True)
    p_max: float = 0.2
    init_std: float = 1.0

    n_extra_draws = 2  # the memory slot r_i and p_i

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 3, "for SHADE (r1 and r2 differ from i and each other)")
        check_positive_int("memory_size", self.memory_size)
        check_in_interval("p_max", self.p_max, 0, 1, low_open=True)
        check_positive("init_std", self.init_std)

    def _init(self, key, x0):
        half = jnp.full(self.memory_size, 0.5, x0.dtype)
        return SHADEState(
            **self._adaptive_init(key, x0),
            memory_F=half,
            memory_CR=half,
            memory_index=jnp.zeros([], jnp.int32),
        )

    def _parameters(self, state, draws):
        slot = jnp.minimum(
            jnp.floor(draws.extra_u[:, 0] * self.memory_size).astype(jnp.int32),
            self.memory_size - 1,
        )
        F = truncated_cauchy(state.memory_F[slot], draws.f_u)
        CR = clipped_normal(state.memory_CR[slot], draws.cr_z)
        p_min, p_max = p_range(self.pop_size, self.p_max)
        p = p_min + draws.extra_u[:, 1] * (p_max - p_min)
        return F, CR, pbest_count(p, self.pop_size)

    def _tell(self, key, state, x, fitness):
        state, success, improvement, metrics = self._select(key, state, x, fitness)
        any_success = jnp.any(success)
        k = state.memory_index
        new_CR = weighted_mean(state.crossover_rates, improvement)
        new_F = lehmer_mean(state.differential_weights, improvement)
        state = state.replace(
            memory_CR=state.memory_CR.at[k].set(jnp.where(any_success, new_CR, state.memory_CR[k])),
            memory_F=state.memory_F.at[k].set(jnp.where(any_success, new_F, state.memory_F[k])),
            memory_index=jnp.where(any_success, (k + 1) % self.memory_size, k).astype(jnp.int32),
        )
        return state, {
            **metrics,
            "mean_memory_F": jnp.mean(state.memory_F),
            "mean_memory_CR": jnp.mean(state.memory_CR),
        }
