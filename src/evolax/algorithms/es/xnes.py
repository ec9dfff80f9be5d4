"""xNES: exponential natural evolution strategies (Glasmachers et al., 2010)."""

from __future__ import annotations

import math

import chex
import equinox as eqx
import jax.numpy as jnp
import optax
from jax.scipy.linalg import expm
from jaxtyping import Array, Float

from evolax.algorithms.base import (
    HIGHEST,
    GradientES,
    GradientESState,
    check_min_pop_size,
    normal,
)
from evolax.algorithms.shaping import Shaping, nes_utilities
from evolax.algorithms.unbatched import one_at_a_time
from evolax.optim import optimizer_field
from evolax.validation import check_positive

# vmapped (over seeds, say), one matrix per LAPACK call (see evolax.algorithms.unbatched)
_solve = one_at_a_time(jnp.linalg.solve)
_expm = one_at_a_time(expm)


def default_lr(dim: int) -> float:
    """Wierstra et al. (2014), table 1, the rate of ``std`` and ``B`` in xNES:
    ``3 (3 + ln d) / (5 d sqrt d)``."""
    return 3 * (3 + math.log(dim)) / (5 * dim * math.sqrt(dim))


@chex.dataclass(frozen=True, kw_only=True)
class XNESState(GradientESState):
    """xNES state: the search distribution ``N(mean, std^2 B B^T)``, i.e. ``A = std B``.

    Attributes:
        mean: the mean ``mu``, ``[D]``.
        std: the step size ``sigma = |det A|^(1/d)``, ``[]``.
        b: the normalised factor ``B`` (``det B = 1``), ``[D, D]``.
    """

    b: Float[Array, "dim dim"]


class XNES(GradientES[XNESState]):
    """Exponential NES (Glasmachers, Schaul, Sun, Wierstra & Schmidhuber, 2010; Wierstra et
    al., 2014, "Natural Evolution Strategies", algorithm 5 with the defaults of table 1).

    Samples ``x_k = mu + sigma B s_k`` with ``s_k ~ N(0, I)`` (``sigma`` is ``std``), shapes
    fitness into utilities ``u_k`` (the NES utilities by default) and follows the natural
    gradient in local coordinates: ``G_delta = sum u_k s_k``, ``G_M = sum u_k (s_k s_k^T -
    I)``, ``G_sigma = tr(G_M) / d``, ``G_B = G_M - G_sigma I``; then ``mu`` takes the step
    ``sigma B G_delta`` through ``optimizer`` (the paper's ``mu += eta_mu sigma B G_delta``
    with ``optax.sgd(eta_mu)``), ``sigma *= exp(eta_sigma / 2 G_sigma)`` and ``B <- B
    expm(eta_B / 2 G_B)``. Algorithm 5 prints ``B^T s_k`` in the sampling line; ``B s_k`` is
    the form consistent with its updates of ``mu`` and ``B`` (the same while ``B`` is
    symmetric). As with any float32 ES, stop before ``sigma`` reaches about ``1e-7 |mean|``:
    beyond it the samples recovered from the population are rounding noise.

    ``tell`` recovers ``s_k`` from the population by solving with ``B``; memory is ``O(d^2)``
    and a generation costs ``O(d^3)`` (one ``expm``), so it suits ``d`` up to a few hundred.

    Args:
        pop_size: ``lambda``, at least 2 (the paper's default is
            :func:`~evolax.algorithms.cma.cma_es.default_pop_size`).
        init_std: the initial ``sigma`` (``B`` starts at the identity), positive.
        optimizer: optax transformation for the mean; it receives ``-sigma B G_delta``, like a
            loss gradient (default ``optax.sgd(1.0)``: the paper's ``eta_mu = 1``).
        std_lr: ``eta_sigma``; ``None`` uses :func:`default_lr` of the dimension.
        b_lr: ``eta_B``; ``None`` uses :func:`default_lr` of the dimension.
        fitness_shaping: ``(fitness, x) -> utilities`` (:mod:`evolax.algorithms.shaping`;
            default the paper's :func:`~evolax.algorithms.shaping.nes_utilities`).
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0
    optimizer: optax.GradientTransformation = optimizer_field(optax.sgd, 1.0)
    std_lr: float | None = None
    b_lr: float | None = None
    fitness_shaping: Shaping = eqx.field(static=True, default=nes_utilities)

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 2, "to rank samples")
        check_positive("init_std", self.init_std)
        for name in ("std_lr", "b_lr"):
            if getattr(self, name) is not None:
                check_positive(name, getattr(self, name))

    def _init(self, key, x0):
        del key
        std = jnp.asarray(self.init_std, x0.dtype)
        return XNESState(**self._start(x0, std), b=jnp.eye(x0.shape[0], dtype=x0.dtype))

    def _ask(self, key, state):
        s = normal(key, (self.pop_size, state.mean.shape[0]), state.mean)
        y = jnp.dot(s, state.b.T, precision=HIGHEST)  # rows B s_k
        return state.mean[None] + state.std * y, state

    def _tell(self, key, state, x, fitness):
        del key
        dim = state.mean.shape[0]
        eye = jnp.eye(dim, dtype=state.mean.dtype)
        y = (x - state.mean[None]) / state.std
        s = _solve(state.b, y.T).T  # s_k = B^{-1} y_k
        utility = self.fitness_shaping(fitness, x)
        grad_delta = jnp.dot(utility, s, precision=HIGHEST)
        grad_m = jnp.dot(s.T * utility[None], s, precision=HIGHEST)
        grad_m = 0.5 * (grad_m + grad_m.T) - jnp.sum(utility) * eye
        grad_std = jnp.trace(grad_m) / dim
        grad_b = grad_m - grad_std * eye

        std_lr = default_lr(dim) if self.std_lr is None else self.std_lr
        b_lr = default_lr(dim) if self.b_lr is None else self.b_lr
        step = state.std * jnp.dot(state.b, grad_delta, precision=HIGHEST)
        std = state.std * jnp.exp(0.5 * std_lr * grad_std)
        b = jnp.dot(state.b, _expm(0.5 * b_lr * grad_b), precision=HIGHEST)
        new_state = state.replace(std=std, b=b, **self._ascend(state, step))
        return new_state, {"std": std, "grad_norm": jnp.linalg.norm(grad_delta)}
