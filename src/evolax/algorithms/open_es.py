"""OpenAI-ES: the natural-evolution-strategy gradient of Salimans et al. (2017)."""

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
from evolax.algorithms.shaping import centered_rank, weight_decay
from evolax.types import Fitness, Metrics, Params, Population, PRNGKey
from evolax.validation import (
    check_in_interval,
    check_non_negative,
    check_positive,
    check_positive_int,
)


@chex.dataclass(frozen=True)
class OpenESState:
    """OpenES state.

    Attributes:
        center: the mean of the search distribution, a genome pytree (:meth:`OpenES.best`).
        sigma: the isotropic noise standard deviation, ``f32[]``.
        opt_state: the optax state of the centre's optimizer.
    """

    center: Params
    sigma: Float[Array, ""]
    opt_state: optax.OptState


class OpenES(Algorithm):
    """OpenAI-ES (Salimans, Ho, Chen, Sidor & Sutskever, 2017, "Evolution Strategies as a
    Scalable Alternative to Reinforcement Learning").

    Samples ``x_i = center + sigma * eps_i`` with ``eps_i ~ N(0, I)`` (antithetic pairs
    ``+-eps`` by default, laid out ``[center + sigma eps_1..n, center - sigma eps_1..n]``),
    shapes fitness into centred ranks (optionally after an L2 penalty, ``weight_decay``), and
    follows the search-gradient estimate ``g = sum_i u_i eps_i / (pop_size * sigma)`` with any
    optax optimizer. ``sigma`` decays geometrically to ``sigma_min``.

    Args:
        pop_size: number of individuals (even when ``antithetic``).
        optimizer: optax transformation for the centre (default ``optax.adam(0.01)``); it
            receives ``-g``, like a loss gradient.
        sigma: initial noise standard deviation, positive.
        sigma_decay: factor applied to ``sigma`` after each update, in ``(0, 1]``.
        sigma_min: floor of ``sigma``, ``>= 0``.
        antithetic: sample mirrored pairs (halves the variance of the estimate).
        weight_decay: coefficient of the L2 penalty on genomes before shaping, ``>= 0``.
    """

    pop_size: int = eqx.field(static=True)
    optimizer: optax.GradientTransformation = eqx.field(
        static=True, default_factory=lambda: optax.adam(0.01)
    )
    sigma: float = 0.1
    sigma_decay: float = 1.0
    sigma_min: float = 0.0
    antithetic: bool = eqx.field(static=True, default=True)
    weight_decay: float = 0.0

    def __check_init__(self):
        check_positive_int("pop_size", self.pop_size)
        if self.antithetic:
            check_antithetic_pop_size(self.pop_size, "antithetic=False")
        check_positive("sigma", self.sigma)
        check_in_interval("sigma_decay", self.sigma_decay, 0, 1, low_open=True)
        check_non_negative("sigma_min", self.sigma_min)
        check_non_negative("weight_decay", self.weight_decay)

    def init(self, key: PRNGKey, x0: Params) -> OpenESState:
        del key
        center = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), x0)
        return OpenESState(
            center=center,
            sigma=jnp.asarray(self.sigma, jnp.float32),
            opt_state=self.optimizer.init(center),
        )

    def ask(self, key: PRNGKey, state: OpenESState) -> tuple[Population, OpenESState]:
        center, _ = ravel_pytree(state.center)
        if self.antithetic:
            flat = mirrored(center, state.sigma * gaussian(key, (self.pop_size // 2, center.size)))
        else:
            flat = center[None] + state.sigma * gaussian(key, (self.pop_size, center.size))
        return unflatten_population(flat, state.center), state

    def tell(
        self, state: OpenESState, population: Population, fitness: Fitness
    ) -> tuple[OpenESState, Metrics]:
        fitness = check_fitness(fitness, self.pop_size)
        flat = flatten_population(population)
        center, unravel = ravel_pytree(state.center)
        if not isinstance(self.weight_decay, (int, float)) or self.weight_decay:
            fitness = weight_decay(fitness, flat, self.weight_decay)
        utility = centered_rank(fitness)
        if self.antithetic:  # eps_{n+i} = -eps_i: read only the first half back
            half = self.pop_size // 2
            flat, utility = flat[:half], utility[:half] - utility[half:]
        eps = (flat - center[None]) / state.sigma
        # the population sum as a product (XLA's CPU column reductions are slow)
        grad = jnp.dot(utility, eps, precision="highest") / (self.pop_size * state.sigma)
        updates, opt_state = self.optimizer.update(unravel(-grad), state.opt_state, state.center)
        sigma = jnp.maximum(state.sigma * self.sigma_decay, self.sigma_min)
        new_state = OpenESState(
            center=optax.apply_updates(state.center, updates), sigma=sigma, opt_state=opt_state
        )
        return new_state, {"sigma": sigma, "grad_norm": jnp.linalg.norm(grad)}

    def best(self, state: OpenESState) -> Params:
        return state.center
