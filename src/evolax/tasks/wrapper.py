"""A task around a task, whose state keeps the inner task's state as ``inner`` (brax's
wrapper stack): the one home of the forwarding every wrapper shares. The rollout's wrappers
(:mod:`evolax.rollout.wrappers`) and tasks such as :class:`~evolax.tasks.ActionCost` build on
it."""

from __future__ import annotations

from typing import Any

import equinox as eqx
import numpy as np
from jaxtyping import Array, Float

from evolax.tasks.base import Task


class TaskWrapper(Task):
    """A task that runs ``task``; its states keep ``task``'s state as ``inner``.

    Shapes (rewards' too), episode length, descriptors and drawings are ``task``'s.
    """

    task: Task
    max_steps: int = eqx.field(static=True, init=False)
    obs_shape: tuple[int, ...] = eqx.field(static=True, init=False)
    action_shape: tuple[int, ...] = eqx.field(static=True, init=False)

    def __post_init__(self):
        self.max_steps = self.task.max_steps
        self.obs_shape = self.task.obs_shape
        self.action_shape = self.task.action_shape

    @property
    def reward_shape(self) -> tuple[int, ...]:
        return self.task.reward_shape

    def descriptor(self, state) -> Float[Array, " desc"]:
        return self.task.descriptor(state.inner)

    @property
    def descriptor_bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]] | None:  # type: ignore[override]
        """The inner task's descriptor ranges (``None``: no descriptor)."""
        return self.task.descriptor_bounds

    def render(self, state) -> np.ndarray:
        return self.task.render(state.inner)

    @property
    def can_render(self) -> bool:
        return self.task.can_render


def unwrap(state: Any, kind: type) -> Any:
    """The state of type ``kind`` in a stack of wrapped states (``state`` or an ``inner``)."""
    while not isinstance(state, kind):
        state = state.inner
    return state
