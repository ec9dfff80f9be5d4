"""ARS: augmented random search (Mania, Guy & Recht, 2018)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from evolax.algorithms.base import (
    Algorithm,
    check_antithetic_pop_size,
    check_fitness,
    flatten_population,
    mirrored,
    unflatten_population,
)
from evolax.algorithms.noise import gaussian
from evolax.algorithms.shaping import finite_fitness
from evolax.types import Fitness, Metrics, Params, Population, PRNGKey
from evolax.validation import check_positive, check_positive_int

HIGHEST = jax.lax.Precision.HIGHEST


@chex.dataclass(frozen=True)
class ARSState:
    """ARS state.

    Attributes:
        center: the policy parameters ``M_j``, a genome pytree (what :meth:`ARS.best` returns).
        opt_state: the optax state of ``optimizer`` (``optax.EmptyState()`` for plain steps).
    """

    center: Params
    opt_state: optax.OptState


class ARS(Algorithm):
    """Augmented random search (Mania, Guy & Recht, 2018, "Simple random search provides a
    competitive approach to reinforcement learning", algorithm 2, ARS V1-t).

    Samples ``N = pop_size / 2`` directions ``delta_k ~ N(0, I)`` and evaluates both ``center
    +- sigma delta_k`` (the population is laid out ``[center + sigma delta_1..N, center - sigma
    delta_1..N]``). ``tell`` keeps the ``b = top_directions`` directions with the largest
    ``max(r_k+, r_k-)``, and steps ``center += alpha / (b sigma_R) sum_k (r_k+ - r_k-)
    delta_k`` over them, ``sigma_R`` being the standard deviation of those ``2b`` rewards. With
    ``optimizer`` the step is instead that optax transformation applied to the gradient
    ``-sum_k (r_k+ - r_k-) delta_k / (b sigma_R)`` (given as a loss gradient), e.g.
    ``optax.adam``; ``step_size`` is then unused.

    ARS V2 is V1 plus normalisation of the policy's inputs by the running mean and standard
    deviation of all states seen in training: in evolax that is the trainer's
    ``normalize_obs=True`` (:class:`~evolax.trainer.Trainer`), so V2 is ``ARS`` trained with
    ``normalize_obs=True``.

    NaN rule: NaN and ``-inf`` rewards count as the worst finite reward of the generation
    (``+inf`` as the best; :func:`~evolax.algorithms.shaping.finite_fitness`), so they never
    reach the state; if every reward is equal (or none is finite) the step is zero.

    Args:
        pop_size: ``2 N``, even and at least 2.
        top_directions: ``b``, in ``[1, N]``; ``None`` uses all ``N`` directions (ARS V1).
        step_size: ``alpha``, the step size of the paper's plain update, positive.
        sigma: ``nu``, the standard deviation of the exploration noise, positive.
        optimizer: an optax transformation for the step instead of ``alpha`` times the
            gradient estimate; ``None`` (default) is the paper's update.
    """

    pop_size: int = eqx.field(static=True)
    top_directions: int | None = eqx.field(static=True, default=None)
    step_size: float = 0.02
    sigma: float = 0.03
    optimizer: optax.GradientTransformation | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        check_positive_int("pop_size", self.pop_size)
        check_antithetic_pop_size(self.pop_size)
        if self.top_directions is not None:
            check_positive_int("top_directions", self.top_directions)
            if self.top_directions > self.pop_size // 2:
                raise ValueError(
                    f"top_directions must be at most n_directions = pop_size / 2 = "
                    f"{self.pop_size // 2}, got {self.top_directions}"
                )
        check_positive("step_size", self.step_size)
        check_positive("sigma", self.sigma)

    @property
    def n_directions(self) -> int:
        """``N``, the number of directions sampled per generation."""
        return self.pop_size // 2

    def init(self, key: PRNGKey, x0: Params) -> ARSState:
        del key
        center = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), x0)
        opt_state = optax.EmptyState() if self.optimizer is None else self.optimizer.init(center)
        return ARSState(center=center, opt_state=opt_state)

    def ask(self, key: PRNGKey, state: ARSState) -> tuple[Population, ARSState]:
        center, _ = ravel_pytree(state.center)
        delta = gaussian(key, (self.n_directions, center.shape[0]))
        noise = self.sigma * delta
        flat = mirrored(center, noise)
        return unflatten_population(flat, state.center), state

    def tell(
        self, state: ARSState, population: Population, fitness: Fitness
    ) -> tuple[ARSState, Metrics]:
        fitness = finite_fitness(check_fitness(fitness, self.pop_size))
        n = self.n_directions
        b = n if self.top_directions is None else self.top_directions
        flat = flatten_population(population)
        delta = (flat[:n] - flat[n:]) / (2 * self.sigma)
        r_plus, r_minus = fitness[:n], fitness[n:]
        # the b directions with the largest max(r+, r-) (ties broken by position)
        top = jnp.argsort(-jnp.maximum(r_plus, r_minus), stable=True)[:b]
        used = jnp.zeros(n, jnp.float32).at[top].set(1.0)
        kept = jnp.concatenate([r_plus[top], r_minus[top]])
        sigma_r = jnp.std(kept)
        scale = jnp.where(sigma_r > 0, 1.0 / (b * jnp.where(sigma_r > 0, sigma_r, 1.0)), 0.0)
        grad = scale * jnp.dot(used * (r_plus - r_minus), delta, precision=HIGHEST)

        _, unravel = ravel_pytree(state.center)
        if self.optimizer is None:
            center = jax.tree.map(lambda c, g: c + self.step_size * g, state.center, unravel(grad))
            opt_state = state.opt_state
        else:
            updates, opt_state = self.optimizer.update(
                unravel(-grad), state.opt_state, state.center
            )
            center = optax.apply_updates(state.center, updates)
        metrics = {
            "reward_std": sigma_r,
            "grad_norm": jnp.linalg.norm(grad),
            "top_reward": jnp.max(kept),
        }
        return ARSState(center=center, opt_state=opt_state), metrics

    def best(self, state: ARSState) -> Params:
        return state.center
