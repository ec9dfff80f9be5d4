"""ARS: augmented random search (Mania, Guy & Recht, 2018)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
import optax

from evolax.algorithms.base import (
    HIGHEST,
    GradientES,
    GradientESState,
    check_antithetic_pop_size,
    mirrored,
    normal,
)
from evolax.algorithms.shaping import Shaping, raw
from evolax.optim import optimizer_field
from evolax.validation import check_positive, check_positive_int


@chex.dataclass(frozen=True, kw_only=True)
class ARSState(GradientESState):
    """ARS state: the policy parameters ``mean`` (``M_j``), the noise ``std`` (``nu``, ``[]``)
    and the optimizer's state."""


class ARS(GradientES[ARSState]):
    """Augmented random search (Mania, Guy & Recht, 2018, "Simple random search provides a
    competitive approach to reinforcement learning", algorithm 2, ARS V1-t).

    Samples ``N = pop_size / 2`` directions ``delta_k ~ N(0, I)`` and evaluates both ``mean
    +- std delta_k`` (the population is laid out ``[mean + std delta_1..N, mean - std
    delta_1..N]``). ``tell`` keeps the ``b = top_directions`` directions with the largest
    ``max(r_k+, r_k-)`` and steps along ``g = sum_k (r_k+ - r_k-) delta_k / (b sigma_R)``,
    ``sigma_R`` being the standard deviation of those ``2b`` rewards, with ``optimizer``: the
    paper's step ``mean += alpha g`` is the default ``optax.sgd(alpha)``.

    ARS V2 is V1 plus normalisation of the policy's inputs by the running mean and standard
    deviation of all states seen in training: in evolax that is the trainer's
    ``normalize_obs=True`` (:class:`~evolax.trainer.Trainer`).

    Rewards are used as they are (``fitness_shaping=raw``: a non-finite reward counts as the
    generation's worst finite one); if every kept reward is equal the step is zero.

    Args:
        pop_size: ``2 N``, even and at least 2.
        top_directions: ``b``, in ``[1, N]``; ``None`` uses all ``N`` directions (ARS V1).
        optimizer: optax transformation for the step (default ``optax.sgd(0.02)``: the
            paper's ``alpha = 0.02``); it receives ``-g``, like a loss gradient.
        init_std: ``nu``, the standard deviation of the exploration noise, positive (fixed).
        fitness_shaping: ``(fitness, x) -> rewards`` (:mod:`evolax.algorithms.shaping`).
    """

    pop_size: int = eqx.field(static=True)
    top_directions: int | None = eqx.field(static=True, default=None)
    optimizer: optax.GradientTransformation = optimizer_field(optax.sgd, 0.02)
    init_std: float = 0.03
    fitness_shaping: Shaping = eqx.field(static=True, default=raw)

    def __check_init__(self):
        check_antithetic_pop_size(self.pop_size)
        if self.top_directions is not None:
            check_positive_int("top_directions", self.top_directions)
            if self.top_directions > self.pop_size // 2:
                raise ValueError(
                    f"top_directions must be at most n_directions = pop_size / 2 = "
                    f"{self.pop_size // 2}, got {self.top_directions}"
                )
        check_positive("init_std", self.init_std)

    @property
    def n_directions(self) -> int:
        """``N``, the number of directions sampled per generation."""
        return self.pop_size // 2

    def _init(self, key, x0):
        del key
        std = jnp.asarray(self.init_std, x0.dtype)
        return ARSState(**self._start(x0, std))

    def _ask(self, key, state):
        delta = normal(key, (self.n_directions, state.mean.shape[0]), state.mean)
        return mirrored(state.mean, state.std * delta), state

    def _tell(self, key, state, x, fitness):
        reward = self.fitness_shaping(fitness, x)
        n = self.n_directions
        b = n if self.top_directions is None else self.top_directions
        delta = (x[:n] - x[n:]) / (2 * state.std)
        r_plus, r_minus = reward[:n], reward[n:]
        # the b directions with the largest max(r+, r-) (ties broken by position)
        top = jnp.argsort(-jnp.maximum(r_plus, r_minus), stable=True)[:b]
        used = jnp.zeros(n, reward.dtype).at[top].set(1.0)
        kept = jnp.concatenate([r_plus[top], r_minus[top]])
        sigma_r = jnp.std(kept)
        scale = jnp.where(sigma_r > 0, 1.0 / (b * jnp.where(sigma_r > 0, sigma_r, 1.0)), 0.0)
        grad = scale * jnp.dot(used * (r_plus - r_minus), delta, precision=HIGHEST)
        new_state = state.replace(**self._ascend(state, grad))
        metrics = {
            "std": state.std,
            "reward_std": sigma_r,
            "grad_norm": jnp.linalg.norm(grad),
            "top_reward": jnp.max(kept),
        }
        return new_state, metrics
