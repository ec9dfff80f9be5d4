"""Rm-ES: the rank-m evolution strategy (Li & Zhang, 2018)."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import (
    HIGHEST,
    DistributionAlgorithm,
    DistributionState,
    check_min_pop_size,
    normal,
)
from evolax.algorithms.shaping import rank_utilities
from evolax.validation import check_in_interval, check_positive, check_positive_int


class RmESParameters(NamedTuple):
    """The dimension-dependent parameters of Li & Zhang (2018) (Python numbers).

    ``weights`` holds ``w_1 .. w_lambda`` by rank, best first: ``w_i ∝ ln(mu + 1) - ln i`` for
    the ``mu = floor(lambda / 2)`` best, summing to 1, then zeros.
    """

    mu: int
    weights: np.ndarray
    mu_eff: float
    c_cov: float
    c_c: float
    generation_gap: int


@functools.lru_cache(maxsize=128)
def rmes_parameters(
    dim: int,
    pop_size: int,
    c_cov: float | None = None,
    c_c: float | None = None,
    generation_gap: int | None = None,
) -> RmESParameters:
    """The defaults of Li & Zhang (2018): ``mu_eff = 1 / sum w_i^2``, ``c_cov = 1 / (3 sqrt(n)
    + 5)``, ``c_c = 2 / (n + 7)`` and the generation gap ``T = n`` (as pypop7's ``RMES``).

    Args:
        dim: ``n``; pop_size: ``lambda``, at least 2.
        c_cov, c_c, generation_gap: override the defaults when given.
    """
    mu = pop_size // 2
    raw = math.log(mu + 1) - np.log(np.arange(1, mu + 1))
    weights = np.concatenate([raw / raw.sum(), np.zeros(pop_size - mu)])
    return RmESParameters(
        mu=mu,
        weights=weights,
        mu_eff=1.0 / float(np.sum(weights**2)),
        c_cov=1 / (3 * math.sqrt(dim) + 5) if c_cov is None else c_cov,
        c_c=2 / (dim + 7) if c_c is None else c_c,
        generation_gap=dim if generation_gap is None else generation_gap,
    )


@chex.dataclass(frozen=True, kw_only=True)
class RmESState(DistributionState):
    """Rm-ES state: the mean, the step size, the principal search direction and the ``m``
    stored directions, and what the rank-based success rule compares with.

    Memory is ``O(m D)``: no ``D x D`` matrix is ever formed.

    Attributes:
        mean: the mean ``m``, ``[D]``.
        std: the step size ``sigma``, ``[]``.
        path: the principal search direction (evolution path) ``p``, ``[D]``.
        paths: the stored directions ``p_1 .. p_m`` as rows, oldest first (zero rows until
            filled), ``[m, D]``.
        path_generations: the generation at which each was stored (``-1``: empty), ``i32[m]``.
        rank_rate: the cumulative rank rate ``s``, ``[]``.
        elite_fitness: the previous generation's ``mu`` best fitness, best first (``-inf``
            before the first generation), ``[mu]``.
    """

    path: Float[Array, " dim"]
    paths: Float[Array, "m dim"]
    path_generations: Int[Array, " m"]
    rank_rate: Float[Array, ""]
    elite_fitness: Float[Array, " mu"]


class RmES(DistributionAlgorithm[RmESState]):
    """Rm-ES (Li & Zhang, 2018, "A Simple Yet Efficient Evolution Strategy for Large-Scale
    Black-Box Optimization", IEEE TEVC 22(5)); ``n_paths = 1`` is its R1-ES.

    Samples from ``N(m, sigma^2 C)`` with the sparse plus low-rank ``C = (1 - c_cov)^m I +
    c_cov sum_j (1 - c_cov)^(m - j) p_j p_j^T``: ``x_i = m + sigma ((1 - c_cov)^(m/2) z_i +
    sqrt(c_cov) sum_j (1 - c_cov)^((m - j)/2) r_ij p_j)`` with ``z_i ~ N(0, I)`` and ``r_ij ~
    N(0, 1)`` for every sample, ``O(m lambda D)``. ``tell`` recombines the ``mu`` best (a
    non-finite fitness gets no weight): ``m <- m + sigma sum_i w_i d_i:lambda`` with ``d = (x -
    m) / sigma``, ``p <- (1 - c_c) p + sqrt(c_c (2 - c_c) mu_eff) sum_i w_i d_i:lambda``. The
    step size follows the rank-based success rule: the ``mu`` best of this and of the previous
    generation are ranked together (ties share their mean rank), ``q = sum_i w_i (R_prev,i -
    R_i) / mu``, ``s <- (1 - c_s) s + c_s (q - q*)`` and ``sigma <- sigma exp(s / d_sigma)``
    (the first generation, with nothing to compare, leaves ``s`` and ``sigma`` unchanged). The
    new ``p`` is stored as ``p_m``, its generation recorded; to make room the oldest is dropped
    while the store fills, and then, when the two closest stored directions are at most
    ``generation_gap`` generations apart, the newer of them, otherwise the oldest: so the
    stored directions stay far apart in time, and less correlated.

    Args:
        pop_size: ``lambda``, at least 2 (the paper's default is
            :func:`~evolax.algorithms.cma.cma_family.default_pop_size`).
        init_std: the initial step size ``sigma``, positive.
        n_paths: ``m``, the number of stored directions, positive (2, as pypop7; 1 is R1-ES).
        generation_gap: ``T``, positive; ``None`` for ``D``, pypop7's default (evosax's is 20;
            see :func:`rmes_parameters`).
        c_cov: the rate of the low-rank model in ``(0, 1)``; ``None`` for ``1 / (3 sqrt(D) +
            5)``.
        c_c: the rate of the evolution path in ``(0, 1]``; ``None`` for ``2 / (D + 7)``.
        c_s: the rate of the cumulative rank rate in ``(0, 1]`` (the paper's 0.3).
        q_star: the target rank rate ``q*`` in ``(-1, 1)`` (the paper's 0.3).
        d_sigma: the damping of the step size, positive (the paper's 1).
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0
    n_paths: int = eqx.field(static=True, default=2)
    generation_gap: int | None = eqx.field(static=True, default=None)
    c_cov: float | None = eqx.field(static=True, default=None)
    c_c: float | None = eqx.field(static=True, default=None)
    c_s: float = 0.3
    q_star: float = 0.3
    d_sigma: float = 1.0

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 2, "to select parents")
        check_positive("init_std", self.init_std)
        check_positive_int("n_paths", self.n_paths)
        if self.generation_gap is not None:
            check_positive_int("generation_gap", self.generation_gap)
        if self.c_cov is not None:
            check_in_interval("c_cov", self.c_cov, 0, 1, low_open=True, high_open=True)
        if self.c_c is not None:
            check_in_interval("c_c", self.c_c, 0, 1, low_open=True)
        check_in_interval("c_s", self.c_s, 0, 1, low_open=True)
        check_in_interval("q_star", self.q_star, -1, 1, low_open=True, high_open=True)
        check_positive("d_sigma", self.d_sigma)

    def parameters(self, dim: int) -> RmESParameters:
        """The strategy parameters for dimension ``dim``."""
        return rmes_parameters(dim, self.pop_size, self.c_cov, self.c_c, self.generation_gap)

    def _init(self, key, x0):
        del key
        dim, mu = x0.shape[0], self.pop_size // 2
        return RmESState(
            mean=x0,
            std=jnp.asarray(self.init_std, x0.dtype),
            path=jnp.zeros_like(x0),
            paths=jnp.zeros((self.n_paths, dim), x0.dtype),
            path_generations=jnp.full(self.n_paths, -1, jnp.int32),
            rank_rate=jnp.zeros([], x0.dtype),
            elite_fitness=jnp.full(mu, -jnp.inf, x0.dtype),
        )

    def _ask(self, key, state):
        dim, m = state.mean.shape[0], self.n_paths
        c_cov = self.parameters(dim).c_cov
        key_z, key_r = jax.random.split(key)
        z = normal(key_z, (self.pop_size, dim), state.mean)
        r = normal(key_r, (self.pop_size, m), state.mean)
        # (1 - c_cov)^((m - j) / 2) for j = 1 .. m, the oldest direction first
        decay = jnp.asarray(math.sqrt(1 - c_cov) ** np.arange(m - 1, -1, -1), z.dtype)
        low_rank = jnp.dot(r * decay[None], state.paths, precision=HIGHEST)
        steps = math.sqrt(1 - c_cov) ** m * z + math.sqrt(c_cov) * low_rank
        return state.mean[None] + state.std * steps, state

    def _tell(self, key, state, x, fitness):
        del key
        p = self.parameters(state.mean.shape[0])
        weights = rank_utilities(fitness, p.weights)  # by rank; non-finite fitness: 0
        d = (x - state.mean[None]) / state.std
        d_w = jnp.dot(weights, d, precision=HIGHEST)
        mean = state.mean + state.std * d_w
        path = (1 - p.c_c) * state.path + math.sqrt(p.c_c * (2 - p.c_c) * p.mu_eff) * d_w

        elite_fitness, _ = jax.lax.top_k(fitness, p.mu)  # best first
        q = self.rank_rate(state.elite_fitness, elite_fitness, p.weights[: p.mu])
        first = state.elite_fitness[0] == -jnp.inf  # nothing told before
        rank_rate = jnp.where(
            first, state.rank_rate, (1 - self.c_s) * state.rank_rate + self.c_s * (q - self.q_star)
        )
        std = state.std * jnp.exp(rank_rate / self.d_sigma)
        paths, generations = self.store(state, path, p.generation_gap)
        new_state = state.replace(
            mean=mean,
            std=std,
            path=path,
            paths=paths,
            path_generations=generations,
            rank_rate=rank_rate,
            elite_fitness=elite_fitness,
        )
        return new_state, {"std": std, "rank_rate": rank_rate}

    @staticmethod
    def rank_rate(
        previous: Float[Array, " mu"], current: Float[Array, " mu"], weights: np.ndarray
    ) -> Float[Array, ""]:
        """The rank-based success rule's ``q = sum_i w_i (R_prev,i - R_i) / mu``: both
        generations' ``mu`` best (each best first) ranked together, 1 the best, ties sharing
        their mean rank; in ``[-1, 1]``, positive when this generation did better."""
        both = jnp.concatenate([previous, current])
        better = jnp.sum(both[None, :] > both[:, None], axis=1)
        tied = jnp.sum(both[None, :] == both[:, None], axis=1)
        ranks = better + 0.5 * (tied - 1)  # 0-based mean ranks
        mu = current.shape[0]
        diff = ranks[:mu] - ranks[mu:]
        w = jnp.asarray(weights, previous.dtype)
        return jnp.dot(w, diff.astype(previous.dtype), precision=HIGHEST) / mu

    def store(
        self, state: RmESState, path: Float[Array, " dim"], generation_gap: int
    ) -> tuple[Float[Array, "m dim"], Int[Array, " m"]]:
        """The stored directions and their generations with ``path`` appended as the newest,
        after dropping one: the oldest while some slot is empty or when every two neighbours
        are more than ``generation_gap`` generations apart, else the newer of the closest
        two."""
        m = self.n_paths
        stamps = state.path_generations
        if m == 1:
            drop = jnp.asarray(0)
        else:
            gaps = stamps[1:] - stamps[:-1]
            closest = jnp.argmin(gaps)
            oldest = (stamps[0] < 0) | (gaps[closest] > generation_gap)
            drop = jnp.where(oldest, 0, closest + 1)
        kept = jnp.arange(m - 1)
        kept = jnp.where(kept < drop, kept, kept + 1)
        paths = jnp.concatenate([state.paths[kept], path[None]])
        stamps = jnp.concatenate([stamps[kept], state.generation[None]])
        return paths, stamps
