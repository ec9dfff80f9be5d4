"""Run an EvoJAX task in evolax: :class:`EvoJAXTask` wraps an ``evojax`` ``VectorizedTask``.

EvoJAX (Tang et al., 2022, https://github.com/google/evojax) writes a task for a whole batch:
``reset(keys[B, 2]) -> state`` and ``step(state, action[B, ...]) -> (state, reward[B],
done[B])``, already ``jit(vmap(...))``-ed. An evolax task is written for one environment and
evolax batches it, so the adapter calls EvoJAX with a batch of one and removes that axis.
EvoJAX is an optional dependency (``pip install evojax``); it is imported only when an
adapter is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from evolax.evojax_interop import add_batch_axis, import_evojax, legacy_key, remove_batch_axis
from evolax.tasks.base import ConstructedTask
from evolax.types import Done, PRNGKey, Reward

if TYPE_CHECKING:
    from evojax.task.base import VectorizedTask


class EvoJAXTask(ConstructedTask):
    """An EvoJAX ``VectorizedTask`` as an evolax task: one environment, batched by evolax.

    ``reset(key)`` converts evolax's typed key to EvoJAX's raw ``uint32[2]`` key
    (``jax.random.key_data``) and calls the EvoJAX task with a batch of one;
    ``step(state, action, key)`` does the same with ``action[None]``. The returned state is
    EvoJAX's own ``TaskState`` (a ``flax.struct`` dataclass, hence a pytree) without the batch
    axis, so ``state.obs`` and the task's other fields read as in EvoJAX. The reward is cast
    to ``float32`` and ``done`` to ``bool`` (EvoJAX returns 0/1 integers).

    EvoJAX tasks draw their randomness from keys they keep in their state, so the ``key`` of
    ``step`` is unused. They also reset themselves when an episode ends; evolax ignores what
    follows ``done``, so episodes score as in EvoJAX. Multi-agent training tasks
    (``multi_agent_training=True``) are not supported: evolax's rollout does not assign
    population members to agents.

    Args:
        task: the EvoJAX task, e.g. ``evojax.task.cartpole.CartPoleSwingUp()``. Its
            ``obs_shape``, ``act_shape`` and ``max_steps`` become this task's ``obs_shape``,
            ``action_shape`` and ``max_steps``.

    Raises:
        ImportError: EvoJAX is not installed.
        TypeError: ``task`` is not an EvoJAX ``VectorizedTask``.
        ValueError: ``task`` is a multi-agent training task or has no positive
            ``max_steps``.
    """

    task: VectorizedTask = eqx.field(static=True)

    def __init__(self, task: VectorizedTask):
        import_evojax("EvoJAXTask")
        from evojax.task.base import VectorizedTask

        if not isinstance(task, VectorizedTask):
            raise TypeError(
                f"task must be an evojax.task.base.VectorizedTask, got {type(task).__name__}"
            )
        if getattr(task, "multi_agent_training", False):
            raise ValueError(
                f"task {type(task).__name__} has multi_agent_training=True, which EvoJAXTask "
                "does not support (evolax's rollout does not assign individuals to agents)"
            )
        max_steps = getattr(task, "max_steps", None)
        if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)):
            raise ValueError(f"task.max_steps must be a positive integer, got {max_steps!r}")
        if max_steps <= 0:
            raise ValueError(f"task.max_steps must be a positive integer, got {max_steps!r}")
        self.task = task
        self.max_steps = int(max_steps)
        self.obs_shape = tuple(int(n) for n in task.obs_shape)
        self.action_shape = tuple(int(n) for n in task.act_shape)

    def reset(self, key: PRNGKey):
        """EvoJAX's ``reset`` of one environment: its ``TaskState`` without the batch axis."""
        state = self.task.reset(legacy_key(key)[None])
        return remove_batch_axis(state, f"{type(self.task).__name__}.reset's state")

    def step(self, state, action: Array, key: PRNGKey) -> tuple[Any, Reward, Done]:
        """EvoJAX's ``step`` of one environment (``key`` is unused: see the class)."""
        del key
        self.check_action(action)
        name = type(self.task).__name__
        new_state, reward, done = self.task.step(add_batch_axis(state), action[None])
        new_state = remove_batch_axis(new_state, f"{name}.step's state")
        reward = jnp.reshape(remove_batch_axis(reward, f"{name}.step's reward"), ())
        done = jnp.reshape(remove_batch_axis(done, f"{name}.step's done"), ())
        return new_state, reward.astype(jnp.float32), done.astype(bool)

    @property
    def can_render(self) -> bool:
        return hasattr(self.task, "render")

    def render(self, state) -> np.ndarray:
        """Draw one (unbatched) state with the EvoJAX task's ``render(state, task_id)``, as a
        ``uint8[H, W, 3]`` RGB image."""
        render = getattr(self.task, "render", None)
        if render is None:
            raise NotImplementedError(f"{type(self.task).__name__} has no render method")
        image = render(add_batch_axis(state), 0)
        if hasattr(image, "convert"):  # a PIL image
            image = image.convert("RGB")
        return np.asarray(image, dtype=np.uint8)
