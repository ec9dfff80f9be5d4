"""XOR, NEAT's first benchmark (Stanley & Miikkulainen, 2002, section 4.1)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.tasks.base import Task
from evolax.types import PRNGKey

INPUTS = ((0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0))
TARGETS = (0.0, 1.0, 1.0, 0.0)


@chex.dataclass(frozen=True)
class XORState:
    """Which of the four cases is shown (``t``) and its inputs (``obs``, ``f32[2]``)."""

    t: Int[Array, ""]
    obs: Float[Array, " 2"]


class XOR(Task):
    """The four XOR cases shown one per step; a step's reward is ``1 - (output - target)^2``,
    so an episode's return is neat-python's XOR fitness ``4 - sum of squared errors`` (4 is
    perfect; neat-python's example stops at 3.9). Deterministic: one episode per individual
    suffices."""

    max_steps: int = eqx.field(static=True, default=4)
    obs_shape: tuple[int, ...] = eqx.field(static=True, default=(2,))
    action_shape: tuple[int, ...] = eqx.field(static=True, default=(1,))

    def reset(self, key: PRNGKey) -> XORState:
        del key
        return XORState(t=jnp.zeros([], jnp.int32), obs=jnp.asarray(INPUTS[0]))

    def step(self, state: XORState, action: Float[Array, " 1"], key: PRNGKey):
        del key
        self.check_action(action)
        target = jnp.asarray(TARGETS)[state.t]
        reward = 1.0 - (action[0] - target) ** 2
        t = state.t + 1
        obs = jnp.asarray(INPUTS)[jnp.minimum(t, 3)]
        return XORState(t=t, obs=obs), reward, t >= 4
