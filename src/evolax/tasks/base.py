"""The task interface: one environment, stepped by the library."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.compiled import explained_hash
from evolax.types import Done, PRNGKey, Reward


def mean_log_likelihood(
    logits: Float[Array, "... classes"], labels: Int[Array, "..."]
) -> Float[Array, ""]:
    """The mean ``log_softmax(logits)`` of the true ``labels``: the reward of supervised tasks
    (negative cross-entropy, at most 0)."""
    log_probs = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return jnp.mean(jnp.take_along_axis(log_probs, labels[..., None], axis=-1))


class Task(eqx.Module):
    """An episodic task. Written for ONE environment; evolax batches it.

    ``reset`` returns a state with an ``obs`` field; ``step`` returns
    ``(state, reward, done)``. After ``done`` the library ignores further rewards, so tasks
    need not reset themselves.
    """

    __hash__ = explained_hash

    max_steps: eqx.AbstractVar[int]
    obs_shape: eqx.AbstractVar[tuple[int, ...]]
    action_shape: eqx.AbstractVar[tuple[int, ...]]

    @abc.abstractmethod
    def reset(self, key: PRNGKey):
        """Start an episode; the returned state has ``.obs`` of shape ``obs_shape``."""

    @abc.abstractmethod
    def step(self, state, action, key: PRNGKey) -> tuple[object, Reward, Done]:
        """Advance one step with ``action`` of shape ``action_shape``."""

    def check_action(self, action) -> None:
        """Raise a ``ValueError`` (at trace time) unless ``action`` has ``action_shape``."""
        if tuple(action.shape) != tuple(self.action_shape):
            raise ValueError(
                f"action must have shape action_shape {tuple(self.action_shape)}, got "
                f"{tuple(action.shape)}"
            )

    def descriptor(self, state) -> Float[Array, " desc"]:
        """A behaviour descriptor of an (unbatched) state, ``f32[n_desc]``, for quality-diversity
        algorithms (:class:`~evolax.algorithms.MAPElites`); the rollout records it at the state
        where each episode ends. Tasks that define it also set ``descriptor_bounds``."""
        raise NotImplementedError(f"{type(self).__name__} defines no behaviour descriptor")

    # A fused rollout (evolax.rollout.fused) steps many episodes inside one kernel, on the
    # state as "lanes": a tuple of arrays of one shape, each one scalar of every episode.
    def to_lanes(self, state) -> tuple[Array, ...]:
        """The lanes of a state with any leading batch axes ``[*batch]``: a tuple of arrays
        ``[*batch]`` (float32 or int32), the observation's ``prod(obs_shape)`` components
        first (flattened in C order), then whatever else :meth:`fused_step` needs."""
        raise NotImplementedError(f"{type(self).__name__} has no fused step")

    def from_lanes(self, lanes: Sequence[Array]):
        """The state (with leading batch axes ``[*batch]``) that :meth:`to_lanes` gives
        ``lanes``; a field the lanes do not keep is said so in the task's docstring."""
        raise NotImplementedError(f"{type(self).__name__} has no fused step")

    def fused_step(
        self, lanes: Sequence[Array], action: Sequence[Array]
    ) -> tuple[tuple[Array, ...], Reward, Done]:
        """:meth:`step` on lanes: ``action`` is ``prod(action_shape)`` lanes; returns the new
        lanes, the reward and ``done``, each of the lanes' shape. Elementwise arithmetic only
        (no gathers, stacks or reductions across lanes, which a GPU kernel cannot do) and no
        key: a task whose step draws random numbers has no fused step."""
        raise NotImplementedError(f"{type(self).__name__} has no fused step")

    @property
    def fusable(self) -> bool:
        """Whether :meth:`fused_step` (with :meth:`to_lanes` and :meth:`from_lanes`) is
        defined: a fused rollout can run this task."""
        return type(self).fused_step is not Task.fused_step

    on_host: ClassVar[bool] = False
    """Whether the task is stepped outside JAX, in host worker processes
    (:class:`~evolax.tasks.Gymnasium`): evaluated eagerly, never inside ``jit``."""

    descriptor_bounds: ClassVar[tuple[tuple[float, ...], tuple[float, ...]] | None] = None
    """``(low, high)``: the range of each descriptor dimension (``None``: no descriptor)."""

    @property
    def reward_shape(self) -> tuple[int, ...]:
        """The shape of one step's reward: ``()``, or ``(m,)`` for ``m`` objectives, each
        maximised, for multi-objective algorithms (``Algorithm.objectives_shape``)."""
        return ()

    def render(self, state) -> np.ndarray:
        """Draw one (unbatched) state on the host as a ``uint8[H, W, 3]`` RGB image."""
        raise NotImplementedError(f"{type(self).__name__} has no renderer")

    @property
    def can_render(self) -> bool:
        """Whether :meth:`render` draws (it is defined), known before any episode runs."""
        return type(self).render is not Task.render


class ConstructedTask(Task):
    """A task whose ``__init__`` works out its episode length and shapes (from an environment,
    a dataset or its options) and sets them: ``max_steps``, ``obs_shape`` and ``action_shape``
    are static fields."""

    max_steps: int = eqx.field(static=True)
    obs_shape: tuple[int, ...] = eqx.field(static=True)
    action_shape: tuple[int, ...] = eqx.field(static=True)


class ClassificationTask(ConstructedTask):
    """A supervised one-step task whose action holds class logits (on the last axis): ``step``
    records their ``argmax`` as the state's ``predictions``, rewards them with :meth:`score`
    and is always done; ``reset`` draws the batch."""

    def step(self, state, action, key: PRNGKey) -> tuple[object, Reward, Done]:
        """Score the logits ``action`` (:meth:`score`); always done."""
        del key
        self.check_action(action)
        predictions = jnp.argmax(action, axis=-1).astype(jnp.int32)
        reward = self.score(state, action, predictions)
        return state.replace(predictions=predictions), reward, jnp.ones([], bool)

    @abc.abstractmethod
    def score(
        self, state, logits: Float[Array, "... classes"], predictions: Int[Array, "..."]
    ) -> Reward:
        """The reward of the ``logits`` (and their ``predictions``) for the batch in ``state``."""


class MultiAgentTask(Task):
    """A task where ``n_agents`` members of the population act in ONE environment.

    ``obs_shape`` and ``action_shape`` are one agent's; the state's ``obs`` is
    ``[n_agents, *obs_shape]``, ``step`` takes actions ``[n_agents, *action_shape]`` and returns
    rewards ``f32[n_agents]`` (each agent's own) and one ``done`` for the environment. The
    rollout spawns consecutive groups of ``n_agents`` individuals into each environment, and
    each individual's fitness is its own return.
    """

    n_agents: eqx.AbstractVar[int]

    def check_actions(self, action) -> None:
        """Raise a ``ValueError`` (at trace time) unless ``action`` is ``[n_agents,
        *action_shape]``."""
        expected = (self.n_agents, *self.action_shape)
        if tuple(action.shape) != expected:
            raise ValueError(
                f"action must have shape (n_agents, *action_shape) = {expected}, got "
                f"{tuple(action.shape)}"
            )
