"""PGPE: policy gradients with parameter-based exploration."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float

from evolax.algorithms.base import (
    Algorithm,
    check_antithetic_pop_size,
    check_fitness,
    flatten_population,
    mirrored,
    unflatten_population,
)
from evolax.algorithms.noise import gaussian
from evolax.algorithms.shaping import centered_rank
from evolax.types import Fitness, Metrics, Params, Population, PRNGKey
from evolax.validation import (
    check_in_interval,
    check_non_negative,
    check_positive,
    check_positive_int,
)


@chex.dataclass(frozen=True)
class PGPEState:
    """PGPE state.

    Attributes:
        center: the search distribution's mean, a genome pytree (what :meth:`PGPE.best` returns).
        std: per-parameter standard deviation, ``f32[D]``.
        opt_state: the optax state of the centre's optimizer.
    """

    center: Params
    std: Float[Array, " dim"]
    opt_state: optax.OptState


class PGPE(Algorithm):
    """PGPE with symmetric sampling (Sehnke et al., 2010; ClipUp variant by Toklu et al., 2020).

    Samples ``pop_size / 2`` antithetic pairs ``center +- eps``, ``eps ~ N(0, diag(std^2))``,
    shapes fitness into centred ranks, moves the centre along the estimated gradient with any
    optax optimizer and the standard deviation with its own learning rate, each element's
    relative change bounded by ``std_max_change``. The population is laid out as
    ``[center + eps_1..n, center - eps_1..n]``.

    Args:
        pop_size: number of individuals, even.
        optimizer: optax transformation for the centre (default ``optax.adam(0.05)``); it
            receives the negated ascent direction, like a loss gradient.
        init_std: initial standard deviation, positive.
        std_lr: learning rate of the standard deviation.
        std_max_change: bound on ``|std_new / std - 1|`` per generation, in ``(0, 1)``.
        center_rank: shape fitness into centred ranks (else raw fitness is used).
    """

    pop_size: int = eqx.field(static=True)
    optimizer: optax.GradientTransformation = eqx.field(
        static=True, default_factory=lambda: optax.adam(0.05)
    )
    init_std: float = 0.1
    std_lr: float = 0.1
    std_max_change: float = 0.2
    center_rank: bool = eqx.field(static=True, default=True)

    def __check_init__(self):
        check_positive_int("pop_size", self.pop_size)
        check_antithetic_pop_size(self.pop_size)
        check_positive("init_std", self.init_std)
        check_in_interval(
            "std_max_change", self.std_max_change, 0, 1, low_open=True, high_open=True
        )
        check_non_negative("std_lr", self.std_lr)

    def init(self, key: PRNGKey, x0: Params) -> PGPEState:
        del key
        flat, _ = ravel_pytree(x0)
        center = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), x0)
        std = jnp.full(flat.shape, self.init_std, jnp.float32)
        return PGPEState(center=center, std=std, opt_state=self.optimizer.init(center))

    def ask(self, key: PRNGKey, state: PGPEState) -> tuple[Population, PGPEState]:
        center, _ = ravel_pytree(state.center)
        eps = gaussian(key, (self.pop_size // 2, center.shape[0])) * state.std[None]
        flat = mirrored(center, eps)
        return unflatten_population(flat, state.center), state

    def tell(
        self, state: PGPEState, population: Population, fitness: Fitness
    ) -> tuple[PGPEState, Metrics]:
        fitness = check_fitness(fitness, self.pop_size)
        flat = flatten_population(population)
        half = self.pop_size // 2
        center, unravel = ravel_pytree(state.center)
        eps = flat[:half] - center[None]  # the second half mirrors it: read only the first
        utility = centered_rank(fitness) if self.center_rank else fitness
        u_plus, u_minus = utility[:half], utility[half:]
        # Sums over the population as vector-matrix products: XLA's CPU column reductions of
        # an elementwise [pop, D] expression ran 50x slower (20 s at pop 256, D = 140k).
        grad_center = jnp.dot(0.5 * (u_plus - u_minus), eps, precision="highest") / half
        baseline = jnp.mean(utility)
        u_avg = 0.5 * (u_plus + u_minus) - baseline
        squares = jnp.dot(u_avg, eps**2, precision="highest")
        grad_std = (squares - jnp.sum(u_avg) * state.std**2) / half / state.std

        updates, opt_state = self.optimizer.update(
            unravel(-grad_center), state.opt_state, state.center
        )
        center = optax.apply_updates(state.center, updates)
        bound = state.std * self.std_max_change
        std = jnp.clip(state.std + self.std_lr * grad_std, state.std - bound, state.std + bound)
        metrics = {"std_mean": jnp.mean(std), "grad_norm": jnp.linalg.norm(grad_center)}
        return PGPEState(center=center, std=std, opt_state=opt_state), metrics

    def best(self, state: PGPEState) -> Params:
        return state.center
