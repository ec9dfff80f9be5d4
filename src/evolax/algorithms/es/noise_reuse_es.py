"""NRES: noise-reuse evolution strategies for truncated unrolls (Li, Harrison,
Sohl-Dickstein, Smith & Metz, 2023)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import GradientESState, mirrored
from evolax.algorithms.es.common import TruncatedES, next_inner_step


@chex.dataclass(frozen=True, kw_only=True)
class NoiseReuseESState(GradientESState):
    """NRES state: ``mean`` (``theta``), the fixed ``std`` (``sigma``, ``[]``), the optimizer's
    state and the unroll's bookkeeping.

    Attributes:
        eps: each antithetic pair's perturbation for the whole current unroll, ``[pop / 2,
            D]`` (member ``i`` is ``mean + eps_i``, member ``i + pop / 2`` is ``mean -
            eps_i``).
        inner_step: the inner step at which the next truncation starts, ``i32[]``; 0 starts a
            new unroll (and draws new perturbations).
    """

    eps: Float[Array, "half dim"]
    inner_step: Int[Array, ""]


class NoiseReuseES(TruncatedES[NoiseReuseESState]):
    """Noise-reuse evolution strategies, NRES (Li, Harrison, Sohl-Dickstein, Smith & Metz,
    2023, "Variance-Reduced Gradient Estimation via Noise-Reuse in Online Evolution
    Strategies", NeurIPS), with antithetic pairs.

    For losses ``L(theta) = sum_tau L_tau`` that an inner problem accrues over
    ``total_length = T`` steps, unrolled in truncations of ``truncation_length = K`` steps.
    Each ``ask`` / ``tell`` is one truncation: ``x = [mean + eps; mean - eps]``, where the
    pairs' perturbations ``eps_i ~ N(0, std^2 I)`` are drawn when an unroll starts and REUSED
    for all its truncations; every member ``j`` continues its own inner problem for ``K`` steps
    with ``x_j`` and reports ``-L_tau`` as its fitness, and ``tell`` follows ``g = sum_i (u_i+
    - u_i-) eps_i / (pop_size std^2)`` (``u``: the shaped fitness) with ``optimizer``. Like
    :class:`~evolax.algorithms.es.persistent_es.PersistentES` it is unbiased for the full
    unroll's smoothed gradient, with a variance that does not grow along the unroll (the paper
    shows it is the least-variance member of this family of online ES).

    The unroll's end is counted here: ``state.inner_step`` is the inner step at which the next
    truncation starts; it advances by ``K`` at each ``ask`` and returns to 0 once it reaches
    ``T``, after ``ceil(T / K)`` truncations. When the state passed to ``ask`` has
    ``inner_step == 0`` a new unroll starts: the caller resets every member's inner problem,
    and ``ask`` draws new perturbations (see :class:`~evolax.algorithms.es.persistent_es.
    PersistentES` for the loop). All members are in the same step of their unrolls (the
    paper's experiments stagger workers over the unroll to decorrelate successive estimates;
    the estimate is unbiased either way).

    In :class:`~evolax.trainer.Trainer` every generation evaluates whole episodes from a reset
    environment: use ``truncation_length = total_length`` there, which makes NRES antithetic
    OpenES on raw returns (a larger ``total_length`` reuses each perturbation for
    ``total_length / truncation_length`` generations: unbiased, but correlated steps).

    Defaults: ``std`` 0.1 and ``optax.adam(0.01)`` as :class:`~evolax.algorithms.
    persistent_es.PersistentES`; ``T = 100``, ``K = 10`` as evosax's ``NoiseReuseES``; raw
    fitness, as the paper.

    Fields: those of :class:`~evolax.algorithms.es.common.TruncatedES`.
    """

    def _init(self, key, x0):
        del key
        std = jnp.asarray(self.init_std, x0.dtype)
        eps = jnp.zeros((self.pop_size // 2, x0.shape[0]), x0.dtype)
        return NoiseReuseESState(
            **self._start(x0, std), eps=eps, inner_step=jnp.zeros([], jnp.int32)
        )

    def _ask(self, key, state):
        eps = jax.lax.cond(  # drawn only when an unroll starts (a select under vmap)
            state.inner_step == 0, lambda: self.perturbations(key, state), lambda: state.eps
        )
        inner_step = next_inner_step(state.inner_step, self.truncation_length, self.total_length)
        return mirrored(state.mean, eps), state.replace(eps=eps, inner_step=inner_step)

    def _unrolled(self, state):
        return state.eps
