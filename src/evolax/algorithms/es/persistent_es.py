"""PES: persistent evolution strategies for truncated unrolls (Vicol, Metz & Sohl-Dickstein,
2021)."""

from __future__ import annotations

import chex
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import GradientESState, mirrored
from evolax.algorithms.es.common import TruncatedES, next_inner_step
from evolax.algorithms.es.common import check_unroll_lengths as check_unroll_lengths


@chex.dataclass(frozen=True, kw_only=True)
class PersistentESState(GradientESState):
    """PES state: ``mean`` (``theta``), the fixed ``std`` (``sigma``, ``[]``), the optimizer's
    state and the unroll's bookkeeping.

    Attributes:
        xi: each antithetic pair's accumulated perturbation ``xi_i = sum eps_i`` over the
            truncations of the current unroll, the asked one included, ``[pop / 2, D]``
            (member ``i`` holds ``+xi_i``, member ``i + pop / 2`` holds ``-xi_i``).
        inner_step: the inner step at which the next truncation starts, ``i32[]``; 0 starts a
            new unroll.
    """

    xi: Float[Array, "half dim"]
    inner_step: Int[Array, ""]


class PersistentES(TruncatedES[PersistentESState]):
    """Persistent evolution strategies, PES (Vicol, Metz & Sohl-Dickstein, 2021, "Unbiased
    Gradient Estimation in Unrolled Computation Graphs with Persistent Evolution Strategies",
    algorithm 2, with antithetic pairs).

    For losses ``L(theta) = sum_tau L_tau`` that an inner problem (an RNN, an inner
    optimisation, a simulation) accrues over ``total_length = T`` steps, unrolled in
    truncations of ``truncation_length = K`` steps. Each ``ask`` / ``tell`` is one truncation:
    ``ask`` draws ``eps_i ~ N(0, std^2 I)`` and returns ``x = [mean + eps; mean - eps]``;
    every member ``j`` then continues ITS OWN inner problem for ``K`` steps with ``x_j`` (row
    ``j`` always drives the same inner state) and reports ``-L_tau`` as its fitness. The pairs
    accumulate ``xi_i += eps_i`` over the unroll, and ``tell`` follows ``g = sum_i (u_i+ -
    u_i-) xi_i / (pop_size std^2)`` (``u``: the shaped fitness) with ``optimizer``. Summed
    over an unroll at a fixed mean, these estimates are unbiased for the gradient of the full
    unroll's Gaussian-smoothed loss, where truncated ES (:class:`~evolax.algorithms.es.open_es.
    OpenES` told each truncation's loss) sees only each truncation's own influence and is
    biased (:class:`~evolax.problems.unrolled.InfluenceBalancing` shows both).

    The unroll's end is counted here, not signalled by the caller: ``state.inner_step`` is the
    inner step at which the next truncation starts. It advances by ``K`` at each ``ask`` and
    returns to 0 once it reaches ``T``, after ``ceil(T / K)`` truncations. When the state
    passed to ``ask`` has ``inner_step == 0`` a new unroll starts: the caller resets every
    member's inner problem, and ``ask`` resets ``xi`` to zero before adding the new
    perturbations. A ``tell`` skipped by the template (no finite fitness) keeps the asked
    state: the truncation still counts, as the inner problems did advance.

    In the plain ask/tell loop::

        for generation in range(n):
            if state.inner_step == 0:
                inner = reset(...)                 # every member's inner problem, [pop, ...]
            x, state = algo.ask(k1, state)
            losses, inner = jax.vmap(problem.unroll, (0, 0, None))(x, inner, K)
            state, _ = algo.tell(k2, state, x, -losses)

    In :class:`~evolax.trainer.Trainer` every generation evaluates whole episodes from a reset
    environment: use ``truncation_length = total_length`` there, which makes PES antithetic
    OpenES on raw returns (a larger ``total_length`` only adds the independent perturbations
    of earlier episodes to ``xi``: still unbiased, with more variance).

    Defaults: ``std`` 0.1 and ``optax.adam(0.01)`` as the paper's hyper-parameter
    optimisation runs (google-research/persistent_es); ``T = 100``, ``K = 10`` as evosax's
    ``PersistentES``; raw fitness, as the paper (a rank shaping biases the estimate).

    Fields: those of :class:`~evolax.algorithms.es.common.TruncatedES`.
    """

    def _init(self, key, x0):
        del key
        std = jnp.asarray(self.init_std, x0.dtype)
        xi = jnp.zeros((self.pop_size // 2, x0.shape[0]), x0.dtype)
        return PersistentESState(**self._start(x0, std), xi=xi, inner_step=jnp.zeros([], jnp.int32))

    def _ask(self, key, state):
        eps = self.perturbations(key, state)
        xi = jnp.where(state.inner_step == 0, 0.0, state.xi) + eps
        inner_step = next_inner_step(state.inner_step, self.truncation_length, self.total_length)
        return mirrored(state.mean, eps), state.replace(xi=xi, inner_step=inner_step)

    def _unrolled(self, state):
        return state.xi
