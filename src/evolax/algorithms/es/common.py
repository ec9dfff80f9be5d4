"""What the evolution strategies share: OpenES's settings and noise weights (LowRankES uses
them too), the sampling in a subspace of ASEBO and guided ES, and the base of the
truncated-unroll strategies PES and NRES."""

from __future__ import annotations

import abc
from typing import TypeVar

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Bool, Float, Int

from evolax.algorithms.base import (
    HIGHEST,
    GradientES,
    GradientESState,
    check_antithetic_pop_size,
    check_std_decay,
    normal,
)
from evolax.algorithms.shaping import Shaping, raw
from evolax.algorithms.unbatched import one_at_a_time
from evolax.optim import optimizer_field
from evolax.types import PRNGKey
from evolax.validation import (
    check_positive,
    check_positive_int,
)

# ---- OpenES and LowRankES -----------------------------------------------------------------


def check_open_es_settings(algorithm) -> None:
    """Raise for OpenES's settings out of range (``pop_size`` even when ``antithetic``,
    ``init_std``, ``std_decay``, ``std_min``); LowRankES shares them."""
    if algorithm.antithetic:
        check_antithetic_pop_size(algorithm.pop_size, "antithetic=False")
    check_positive("init_std", algorithm.init_std)
    check_std_decay(algorithm.std_decay, algorithm.std_min)


def noise_weights(utility: Float[Array, " pop"], antithetic: bool) -> Float[Array, " n"]:
    """The utilities OpenES weights its noise draws by: with antithetic pairs (``eps_{n+i} =
    -eps_i``) the first half's minus its mirror's, ``[pop / 2]``; else the utilities."""
    if antithetic:
        half = utility.shape[0] // 2
        return utility[:half] - utility[half:]
    return utility


# ---- sampling in a subspace: ASEBO and guided ES ------------------------------------------

# vmapped over seeds, one matrix per LAPACK call (see evolax.algorithms.unbatched)
_thin_svd = one_at_a_time(lambda rows: jnp.linalg.svd(rows, full_matrices=False))


def principal_directions(
    rows: Float[Array, "k dim"],
) -> tuple[Float[Array, " k"], Float[Array, "k dim"]]:
    """The eigen-decomposition of ``rows^T rows`` (``[D, D]``, never formed), from the thin
    SVD of ``rows``: its eigenvalues (squared singular values), descending, and its
    eigenvectors as orthonormal rows, ``[k, D]``. Singular values within rounding of 0
    (``10 k eps`` of the largest) and their rows are 0, so zero or repeated rows add no
    direction."""
    _, singular, vectors = _thin_svd(rows)
    floor = singular[0] * 10 * rows.shape[0] * jnp.finfo(rows.dtype).eps
    keep = singular > jnp.maximum(floor, jnp.finfo(rows.dtype).tiny)
    return jnp.where(keep, singular**2, 0.0), jnp.where(keep[:, None], vectors, 0.0)


def subspace_sample(
    key: PRNGKey,
    basis: Float[Array, "k dim"],
    active: Bool[Array, " k"],
    alpha: Float[Array, ""],
    n: int,
) -> tuple[Float[Array, "n dim"], Float[Array, "n dim"]]:
    """``n`` draws of ``N(0, alpha / D I + (1 - alpha) / r U U^T)``, ``U``'s columns being the
    ``r`` rows of ``basis`` marked ``active`` (``alpha`` is taken as 1 if ``r = 0``), and the
    isotropic ``N(0, I)`` draws ``z`` they were built from."""
    dim = basis.shape[1]
    full_key, sub_key = jax.random.split(key)
    z = normal(full_key, (n, dim), basis)
    s = normal(sub_key, (n, basis.shape[0]), basis) * active[None]
    r = jnp.sum(active)
    alpha = jnp.where(r > 0, alpha, 1.0)
    within = jnp.dot(s, basis, precision=HIGHEST)
    g = jnp.sqrt(alpha / dim) * z + jnp.sqrt((1 - alpha) / jnp.maximum(r, 1)) * within
    return g, z


# ---- truncated unrolls: PES and NRES -------------------------------------------------------


def check_unroll_lengths(truncation_length: int, total_length: int) -> None:
    """Raise unless both lengths are positive integers with ``truncation_length <=
    total_length``."""
    check_positive_int("truncation_length", truncation_length)
    check_positive_int("total_length", total_length)
    if total_length < truncation_length:
        raise ValueError(
            f"total_length must be at least truncation_length = {truncation_length}, got "
            f"{total_length}"
        )


def next_inner_step(
    inner_step: Int[Array, ""], truncation_length: int, total_length: int
) -> Int[Array, ""]:
    """The inner step after one more truncation: back to 0 once the unroll reaches
    ``total_length`` (its last truncation may run fewer than ``truncation_length`` steps)."""
    step = inner_step + truncation_length
    return jnp.where(step >= total_length, 0, step).astype(inner_step.dtype)


S = TypeVar("S", bound=GradientESState)


class TruncatedES(GradientES[S]):
    """What PES and NRES share: antithetic pairs whose perturbations (summed or reused) span
    an unroll of ``total_length`` inner steps, told one truncation of ``truncation_length``
    steps at a time; ``tell`` follows ``g = sum_i (u_i+ - u_i-) d_i / (pop_size std^2)`` with
    ``d_i`` the pair's perturbation over the unroll so far (:meth:`_unrolled`).

    Args:
        pop_size: number of members, even (antithetic pairs).
        truncation_length: ``K``, the inner steps of one truncation (one ask/tell).
        total_length: ``T``, the inner steps of a whole unroll, ``>= truncation_length``.
        optimizer: optax transformation for the mean (default ``optax.adam(0.01)``); it
            receives ``-g``, a loss gradient.
        init_std: ``sigma``, the perturbations' standard deviation, positive (fixed).
        fitness_shaping: ``(fitness, x) -> utilities`` (:mod:`evolax.algorithms.shaping`;
            default :func:`~evolax.algorithms.shaping.raw`, which keeps the estimate
            unbiased).
    """

    pop_size: int = eqx.field(static=True)
    truncation_length: int = eqx.field(static=True, default=10)
    total_length: int = eqx.field(static=True, default=100)
    optimizer: optax.GradientTransformation = optimizer_field(optax.adam, 0.01)
    init_std: float = 0.1
    fitness_shaping: Shaping = eqx.field(static=True, default=raw)

    def __check_init__(self):
        check_antithetic_pop_size(self.pop_size)
        check_unroll_lengths(self.truncation_length, self.total_length)
        check_positive("init_std", self.init_std)

    def perturbations(self, key: PRNGKey, state: S) -> Float[Array, "half dim"]:
        """The positive members' perturbations ``eps ~ N(0, std^2 I)``, ``[pop / 2, D]``."""
        half, dim = self.pop_size // 2, state.mean.shape[0]
        return state.std * normal(key, (half, dim), state.mean)

    @abc.abstractmethod
    def _unrolled(self, state: S) -> Float[Array, "half dim"]:
        """The pairs' perturbations over the unroll so far, ``[pop / 2, D]``."""

    def _tell(self, key, state, x, fitness):
        utility = self.fitness_shaping(fitness, x)
        half = self.pop_size // 2
        # the population sum as a product (XLA's CPU column reductions are slow)
        grad = jnp.dot(utility[:half] - utility[half:], self._unrolled(state), precision=HIGHEST)
        grad = grad / (self.pop_size * state.std**2)
        new_state = state.replace(**self._ascend(state, grad))
        return new_state, {"grad_norm": jnp.linalg.norm(grad)}
