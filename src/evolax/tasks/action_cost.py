"""A second objective for any task: the control effort its actions cost."""

from __future__ import annotations

from typing import Any

import chex
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.tasks.base import MultiAgentTask
from evolax.tasks.wrapper import TaskWrapper
from evolax.types import Done, PRNGKey
from evolax.validation import check_positive


@chex.dataclass(frozen=True)
class ActionCostState:
    """``inner``: the task's state; ``obs``: its observation."""

    inner: Any
    obs: Float[Array, "..."]


class ActionCost(TaskWrapper):
    """``task`` with two objectives, both maximised: its own reward and minus the control
    effort, ``-scale * sum(action ** 2)`` each step, so an episode's second return is minus
    its total squared action.

    Trained with a multi-objective algorithm (``objectives_shape == (2,)``), the population
    spreads along the trade-off between reward and effort: on
    :class:`~evolax.tasks.CartPoleSwingUp`, swinging the pole up fast against swinging it
    up gently.

    Args:
        task: a single-objective task (``reward_shape == ()``), not a multi-agent one.
        scale: the effort's weight, positive (it sets the second objective's units only).
    """

    scale: float = 1.0

    def __post_init__(self):
        if tuple(self.task.reward_shape) != ():
            raise ValueError(
                f"task must have one objective (reward_shape ()), got reward_shape "
                f"{tuple(self.task.reward_shape)}"
            )
        if isinstance(self.task, MultiAgentTask):
            raise ValueError("task must be a single-agent task: ActionCost adds one cost")
        check_positive("scale", self.scale)
        super().__post_init__()

    @property
    def reward_shape(self) -> tuple[int, ...]:
        return (2,)

    def reset(self, key: PRNGKey) -> ActionCostState:
        inner: Any = self.task.reset(key)
        return ActionCostState(inner=inner, obs=inner.obs)

    def step(
        self, state: ActionCostState, action: Array, key: PRNGKey
    ) -> tuple[ActionCostState, Float[Array, " 2"], Done]:
        inner: Any
        inner, reward, done = self.task.step(state.inner, action, key)
        effort = self.scale * jnp.sum(jnp.square(action.astype(jnp.float32)))
        rewards = jnp.stack([jnp.asarray(reward, jnp.float32), -effort])
        return ActionCostState(inner=inner, obs=inner.obs), rewards, done
