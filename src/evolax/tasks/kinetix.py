"""Kinetix as an evolax task (Matthews et al., 2025, https://github.com/FLAIROx/Kinetix): an
open-ended space of 2D physics tasks (Jax2D), played on hand-made levels, a fixed level set or
levels sampled at random, with symbolic, entity or pixel observations."""

from __future__ import annotations

from typing import Any

import chex
import jax
import jax.numpy as jnp
from jaxtyping import Array, PyTree

from evolax.extras import require
from evolax.tasks.distributions import Distribution, ParamSet
from evolax.tasks.jax_env import GymnaxStyleTask, check_env_name
from evolax.types import PRNGKey

OBSERVATIONS = {"Pixels": "PIXELS", "Symbolic": "SYMBOLIC_FLAT", "Entity": "SYMBOLIC_ENTITY"}
ACTIONS = {"Discrete": "DISCRETE", "Continuous": "CONTINUOUS", "MultiDiscrete": "MULTI_DISCRETE"}
ENV_NAMES = tuple(f"Kinetix-{obs}-{act}-v1" for obs in OBSERVATIONS for act in ACTIONS)
"""``Kinetix-<OBSERVATION>-<ACTION>-v1``, Kinetix's own naming of its variants."""


@chex.dataclass(frozen=True)
class KinetixParams:
    """The parameters of a Kinetix episode: the physics' ``EnvParams`` and the ``level`` (a
    Kinetix ``EnvState``) to start from, or ``None`` for a random level (Kinetix's level
    sampler)."""

    physics: PyTree
    level: PyTree = None


def load_levels(files: tuple[str, ...] | list[str]) -> tuple[PyTree, Any, Any]:
    """Kinetix level files (``"s/h1_thrust_over_ball.json"``, relative to Kinetix's levels or
    absolute) stacked on a leading axis, with the first file's static and physics parameters:
    ``(levels, static_env_params, env_params)``."""
    saving = require("kinetix.util.saving", "kinetix", "Kinetix")
    if not files:
        raise ValueError("files must name at least one Kinetix level file")
    loaded = [saving.load_from_json_file(name) for name in files]
    levels = jax.tree.map(lambda *leaves: jnp.stack(leaves), *[level for level, _, _ in loaded])
    return levels, loaded[0][1], loaded[0][2]


class Kinetix(GymnaxStyleTask):
    """A Kinetix environment as a task; in a configuration
    ``task.name=kinetix:Kinetix-Symbolic-Continuous-v1``.

    The environment is ``kinetix.environment.make_kinetix_env(action_type, observation_type,
    reset_fn, env_params, static_env_params, auto_reset=False)`` for the variant ``env_name``
    names. Kinetix has gymnax's interface: ``reset(key)`` is its ``reset(key, env_params,
    override_reset_state=level)`` and ``step(state, action, key)`` its ``step(key, state,
    action, env_params)``, so the same keys and actions give Kinetix's own episode.

    Levels, a task distribution: with ``levels`` (level files), each episode starts from one
    of them, drawn with a key split off the episode's key (a
    :class:`~evolax.tasks.distributions.ParamSet` over ``env_params.level``; pass
    ``distribution=Kinetix.level_set(held_out_files)`` to a second task to test on held-out
    levels); without, from a random level of Kinetix's own sampler (its ``reset_fn``).

    Observations are flattened to ``f32[obs_dim]``; actions follow the variant's space
    (:class:`~evolax.tasks.spaces.ActionMap`: ``Discrete`` scores, or ``Box`` values in
    ``[-1, 1]``).

    Args:
        env_name: one of :data:`ENV_NAMES`.
        levels: Kinetix level files; empty: random levels.
        max_steps: episode length; default ``env_params.max_timesteps`` (256).
        distribution: a task distribution over :class:`KinetixParams`, or ``None``.
    """

    def __init__(
        self,
        env_name: str,
        levels: tuple[str, ...] = (),
        max_steps: int | None = None,
        distribution: Distribution | None = None,
    ):
        check_env_name(env_name, list(ENV_NAMES), "Kinetix")
        environment = require("kinetix.environment", "kinetix", "Kinetix")
        _, obs_name, action_name, _ = env_name.split("-")
        if levels:
            stacked, static_params, physics = load_levels(levels)
            reset_fn = None
            distribution = distribution or ParamSet(stacked, replace="level")
        else:
            static_params, physics = environment.StaticEnvParams(), environment.EnvParams()
            ued = require("kinetix.environment.ued.ued", "kinetix", "Kinetix")
            reset_fn = ued.make_reset_fn_sample_kinetix_level(physics, static_params)
        if max_steps is not None:  # Kinetix itself then ends the episode there
            physics = physics.replace(max_timesteps=max_steps)
        env = environment.make_kinetix_env(
            getattr(environment.ActionType, ACTIONS[action_name]),
            getattr(environment.ObservationType, OBSERVATIONS[obs_name]),
            reset_fn,
            physics,
            static_params,
            auto_reset=False,
        )
        # with levels, a placeholder level of the right structure, replaced every episode
        first = jax.tree.map(lambda leaf: leaf[0], stacked) if levels else None
        params = KinetixParams(physics=physics, level=first)
        steps = int(physics.max_timesteps)
        space = env.action_space(physics)
        self._setup(env, env_name, params, space, steps, steps, distribution, None)

    @staticmethod
    def level_set(files: tuple[str, ...] | list[str]) -> ParamSet:
        """A fixed set of Kinetix levels, one drawn per episode (a held-out set for testing)."""
        return ParamSet(load_levels(files)[0], replace="level")

    def _reset_env(self, key: PRNGKey, params: PyTree) -> tuple[PyTree, PyTree]:
        return self.env.reset(key, params.physics, override_reset_state=params.level)

    def _step_env(
        self, key: PRNGKey, env_state: PyTree, action: Array, params: PyTree
    ) -> tuple[PyTree, PyTree, Array, Array]:
        return super()._step_env(key, env_state, action, params.physics)
