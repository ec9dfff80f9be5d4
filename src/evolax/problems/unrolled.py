"""Unrolled computation graphs: inner problems that a parameter ``theta`` drives step by step,
whose loss is accrued along the way and which are optimised in truncations.

A problem has an inner state, ``init_state()``, and ``unroll(theta, state, n_steps) -> (loss,
new_state)``, which runs ``n_steps`` steps with ``theta`` and returns the loss summed over
them, so a full unroll's loss is the sum of its truncations' losses whatever their length.
:class:`~evolax.algorithms.es.persistent_es.PersistentES` and
:class:`~evolax.algorithms.es.noise_reuse_es.NoiseReuseES` optimise such problems without bias
from truncations of a few steps each.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from evolax.validation import check_positive_int

__all__ = ["InfluenceBalancing"]


class InfluenceBalancing(eqx.Module):
    """The influence-balancing toy of Tallec & Ollivier (2017, "Unbiased Online Recurrent
    Optimization", section 5), as Vicol, Metz & Sohl-Dickstein (2021) use it to show
    truncated gradients failing where PES does not (google-research/persistent_es,
    ``influence_balancing.py``: ``n = 23``, 10 positive units, ``s_0 = 1``).

    The inner state ``s`` (``size = n`` units, all 1 at the start) follows::

        s_{t+1} = A s_t + theta v,    A = (I + N) / 2,    v = (1, .., 1, -1, .., -1)

    (``N`` the upper shift, ``v`` with ``num_positive = p`` ones): each unit keeps half its
    value, receives half of the next one's and is pushed by ``theta`` with its sign. Step ``t``
    costs ``0.5 (s_{t,0} - 1)^2``. ``theta``'s influence on ``s_0`` is +1 for the first ``p``
    steps, but unit ``j``'s push reaches unit 0 after ``j`` steps, and in the long run the
    influence is ``2 sum(v) = 2 (2 p - n) = -6``: a truncation of fewer than about ``p`` steps
    sees the wrong sign.

    The state stays linear in ``theta``: ``s_{t,0} = a_t + b_t theta`` with ``a_t = (A^t
    1)_0`` and ``b_t = sum_{k < t} (A^k v)_0``. The full unroll's loss ``L(theta) = sum_{t=1}^T
    0.5 (a_t + b_t theta - 1)^2`` (``T = total_length``) is a quadratic whose minimum is
    :meth:`optimum` ``= sum_t b_t (1 - a_t) / sum_t b_t^2`` (-0.0467 for the defaults; -1/6 in
    the limit ``T -> infinity``, where ``s_0 = -6 theta`` must reach 1). Gradients truncated to
    ``K`` steps replace ``b_t`` by ``b_{t - tau}`` (the influence since the truncation's start
    ``tau``) and settle at :meth:`truncated_solution` instead (0.948 for ``K = 1``, ``T =
    100``).

    Vicol et al. never reset the inner problem and score the loss at each truncation's end;
    here an unroll lasts ``total_length`` steps and every step's loss counts, so that the
    full-unroll loss does not depend on the truncation (the two agree for ``K = 1``).

    Args:
        size: ``n``, the number of units, at least 2.
        num_positive: ``p``, the units pushed up by ``theta``, in ``[0, size]``.
        total_length: ``T``, the steps of a full unroll (:meth:`loss`, :meth:`optimum`).
    """

    size: int = eqx.field(static=True, default=23)
    num_positive: int = eqx.field(static=True, default=10)
    total_length: int = eqx.field(static=True, default=100)

    def __check_init__(self):
        check_positive_int("size", self.size)
        if self.size < 2:
            raise ValueError(f"size must be at least 2, got {self.size}")
        if not (isinstance(self.num_positive, int) and 0 <= self.num_positive <= self.size):
            raise ValueError(f"num_positive must be in [0, {self.size}], got {self.num_positive}")
        check_positive_int("total_length", self.total_length)

    def signs(self, dtype=jnp.float32) -> Float[Array, " size"]:
        """``v``: +1 for the first ``num_positive`` units, -1 for the others."""
        return jnp.where(jnp.arange(self.size) < self.num_positive, 1.0, -1.0).astype(dtype)

    def init_state(self, dtype=jnp.float32) -> Float[Array, " size"]:
        """The inner state at the start of an unroll: all ones, ``[size]``."""
        return jnp.ones(self.size, dtype)

    def unroll(
        self, theta: Float[ArrayLike, "*one"], state: Float[Array, " size"], n_steps: int
    ) -> tuple[Float[Array, ""], Float[Array, " size"]]:
        """``n_steps`` steps from ``state`` with ``theta`` (one number, shape ``[]`` or
        ``[1]``): the summed loss ``sum 0.5 (s_{t,0} - 1)^2`` and the new state.

        Args:
            theta: the outer parameter.
            state: the inner state, ``[size]``.
            n_steps: a Python int, at least 0.
        """
        state = jnp.asarray(state)
        theta = jnp.reshape(jnp.asarray(theta, state.dtype), ())
        push = theta * self.signs(state.dtype)

        def step(s, _):
            s = 0.5 * (s + jnp.append(s[1:], 0.0)) + push
            return s, 0.5 * (s[0] - 1.0) ** 2

        state, losses = jax.lax.scan(step, state, None, length=n_steps)
        return jnp.sum(losses), state

    def loss(self, theta: Float[ArrayLike, "*one"]) -> Float[Array, ""]:
        """The full unroll's loss ``L(theta)``: ``total_length`` steps from :meth:`init_state`."""
        return self.unroll(theta, self.init_state(), self.total_length)[0]

    def _coefficients(self) -> tuple[np.ndarray, np.ndarray]:
        """``a_t`` and ``b_t`` for ``t = 1 .. T`` (float64, index ``t - 1``)."""
        n = self.size
        shift = 0.5 * (np.eye(n) + np.eye(n, k=1))
        v = np.where(np.arange(n) < self.num_positive, 1.0, -1.0)
        ones, cumulative = np.ones(n), np.zeros(n)  # A^t 1 and sum_{k < t} A^k v
        a, b = np.empty(self.total_length), np.empty(self.total_length)
        for t in range(self.total_length):
            ones, cumulative = shift @ ones, shift @ cumulative + v
            a[t], b[t] = ones[0], cumulative[0]
        return a, b

    def optimum(self) -> float:
        """The minimiser of the full unroll's loss, ``sum_t b_t (1 - a_t) / sum_t b_t^2``."""
        a, b = self._coefficients()
        return float(np.sum(b * (1 - a)) / np.sum(b * b))

    def truncated_solution(self, truncation_length: int) -> float:
        """Where gradients truncated to ``truncation_length`` steps (truncated BPTT, or
        truncated ES, which Gaussian smoothing of this quadratic leaves unbiased for them)
        vanish when summed over an unroll: ``sum_t c_t (1 - a_t) / sum_t c_t b_t``, with ``c_t =
        b_{t - tau}`` the influence since the truncation's start ``tau``. Gradient descent
        settles there when ``sum_t c_t b_t > 0`` (true for the defaults)."""
        check_positive_int("truncation_length", truncation_length)
        a, b = self._coefficients()
        since_start = np.arange(self.total_length) % truncation_length  # t - tau - 1
        c = b[since_start]
        return float(np.sum(c * (1 - a)) / np.sum(c * b))
