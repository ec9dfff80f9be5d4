"""Feet-contact descriptors for Brax locomotion: the fraction of an episode each foot spends
on the ground (Cully et al. 2015; QDax's ``ant_uni``, ``walker2d_uni``, ...)."""

from __future__ import annotations

from typing import Any

import chex
import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.tasks.brax import Brax, BraxTaskState
from evolax.tasks.wrapper import TaskWrapper
from evolax.types import Done, PRNGKey, Reward

FEET = {
    "ant": ("", "", "", ""),  # the four lower legs are Brax's unnamed links
    "halfcheetah": ("bfoot", "ffoot"),
    "hopper": ("foot",),
    "walker2d": ("foot", "foot_left"),
    "humanoid": ("left_shin", "right_shin"),
}
"""The links that count as feet, by name in ``Brax(env).sys.link_names``, per environment."""


@chex.dataclass(frozen=True)
class FeetContactState:
    """``inner``: the Brax state; ``obs``: its observation; ``contact_steps``: steps each foot
    touched the ground so far, ``[feet]``; ``steps``: steps so far."""

    inner: BraxTaskState
    obs: Float[Array, " obs_dim"]
    contact_steps: Float[Array, " feet"]
    steps: Int[Array, ""]


class FeetContact(TaskWrapper):
    """A Brax locomotion task whose behaviour descriptor is the fraction of the episode's
    steps each foot is in contact with the ground, ``[feet]`` in ``[0, 1]`` (QDax's
    ``*_uni`` tasks: 4 feet for the ant, 2 for walker2d and halfcheetah). A foot touches the
    ground in a step when one of the physics' contacts involves its link at a distance
    ``<= 0``. Rewards, observations and episodes are the task's.

    Args:
        task: a :class:`~evolax.tasks.Brax` task of an environment in :data:`FEET`.
    """

    task: Brax
    feet: tuple[int, ...] = eqx.field(static=True, init=False)

    def __post_init__(self):
        if not isinstance(self.task, Brax):
            raise TypeError(f"task must be a Brax task, got {type(self.task).__name__}")
        if self.task.env_name not in FEET:
            raise ValueError(
                f"task must be a Brax environment with known feet ({sorted(FEET)}), got "
                f"{self.task.env_name!r}"
            )
        names = list(self.task.sys.link_names)
        wanted = FEET[self.task.env_name]
        if len(set(wanted)) == 1 and len(wanted) > 1:  # several unnamed links
            feet = [i for i, name in enumerate(names) if name == wanted[0]]
        else:
            feet = [names.index(name) for name in wanted if name in names]
        if len(feet) != len(wanted):
            raise ValueError(
                f"{self.task.env_name}'s links {names} do not hold its feet {list(wanted)}"
            )
        self.feet = tuple(feet)
        super().__post_init__()

    @property
    def descriptor_bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]]:  # type: ignore[override]
        n = len(self.feet)
        return (0.0,) * n, (1.0,) * n

    def touching(self, inner: BraxTaskState) -> Float[Array, " feet"]:
        """Which feet touch the ground in a state, ``f32[feet]`` of 0 and 1."""
        contact: Any = inner.env_state.pipeline_state.contact
        first, second = contact.link_idx
        near = contact.dist <= 0
        feet = jnp.asarray(self.feet)[:, None]
        hits = ((first[None] == feet) | (second[None] == feet)) & near[None]
        return jnp.any(hits, axis=1).astype(jnp.float32)

    def reset(self, key: PRNGKey) -> FeetContactState:
        inner = self.task.reset(key)
        return FeetContactState(
            inner=inner,
            obs=inner.obs,
            contact_steps=jnp.zeros(len(self.feet), jnp.float32),
            steps=jnp.zeros([], jnp.int32),
        )

    def step(
        self, state: FeetContactState, action: Array, key: PRNGKey
    ) -> tuple[FeetContactState, Reward, Done]:
        inner, reward, done = self.task.step(state.inner, action, key)
        new = FeetContactState(
            inner=inner,
            obs=inner.obs,
            contact_steps=state.contact_steps + self.touching(inner),
            steps=state.steps + 1,
        )
        return new, reward, done

    def descriptor(self, state: FeetContactState) -> Float[Array, " feet"]:
        """The fraction of the steps so far each foot touched the ground (0 before any)."""
        return state.contact_steps / jnp.maximum(state.steps, 1)
