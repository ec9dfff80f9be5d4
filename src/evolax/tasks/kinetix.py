"""Kinetix as an evolax task (Matthews et al., 2025, https://github.com/FLAIROx/Kinetix): an
open-ended space of 2D physics tasks (Jax2D), played on a set of level files or on levels
sampled at random, with symbolic, entity or pixel observations."""

from __future__ import annotations

import chex
import numpy as np
from jaxtyping import Array, PyTree

from evolax.extras import require
from evolax.tasks.distributions import Distribution
from evolax.tasks.jax_env import GymnaxStyleTask, check_env_name
from evolax.tasks.spaces import ActionMap
from evolax.types import PRNGKey

OBSERVATIONS = {"Pixels": "PIXELS", "Symbolic": "SYMBOLIC_FLAT", "Entity": "SYMBOLIC_ENTITY"}
ACTIONS = {"Discrete": "DISCRETE", "Continuous": "CONTINUOUS", "MultiDiscrete": "MULTI_DISCRETE"}
ENV_NAMES = tuple(f"Kinetix-{obs}-{act}-v1" for obs in OBSERVATIONS for act in ACTIONS)
"""``Kinetix-<OBSERVATION>-<ACTION>-v1``, Kinetix's own naming of its variants."""


@chex.dataclass(frozen=True)
class KinetixParams:
    """The parameters of a Kinetix episode: the physics' ``EnvParams`` and the ``level`` (a
    Kinetix ``EnvState``) to start from, or ``None`` for the environment's own reset (a level
    of its level files, or a random level)."""

    physics: PyTree
    level: PyTree = None


class Kinetix(GymnaxStyleTask):
    """A Kinetix environment as a task; in a configuration
    ``task.name=kinetix:Kinetix-Symbolic-Continuous-v1``.

    The environment is Kinetix's ``make_kinetix_env(action_type, observation_type, reset_fn,
    env_params, static_env_params, auto_reset=False)`` for the variant ``env_name`` names,
    with Kinetix's own reset functions: ``make_reset_fn_list_of_levels(files,
    static_env_params)`` (a level file drawn per episode) with ``levels``, else
    ``make_reset_fn_sample_kinetix_level`` (a random level). ``reset(key)`` is its
    ``reset(key, env_params)`` and ``step(state, action, key)`` its ``step(key, state,
    action, env_params)``, so the same keys and actions give Kinetix's own episode.

    Levels: ``levels`` are the training levels, ``test_levels`` held-out ones, played
    instead with ``test=True`` (the configuration's test task, as MNIST's test set; without
    ``test_levels`` the test task plays the training levels or random ones). Level
    files are Kinetix's (``"s/h1_thrust_over_ball"``, relative to its shipped levels, or a
    path); their static sizes (shape counts) are the largest over both sets, Kinetix's
    ``load_evaluation_levels``, so both tasks see observations of one shape, and the physics
    parameters are the first training file's. A ``distribution`` over
    :class:`KinetixParams` (a ``ParamSet`` of levels at ``level``) overrides the reset
    function's draw.

    Observations are flattened to ``f32[obs_dim]``; actions follow the variant's space
    (:class:`~evolax.tasks.spaces.ActionMap`: ``Discrete`` scores, one block of scores per
    motor and thruster for ``MultiDiscrete``, or ``Box`` values in ``[-1, 1]``).

    Args:
        env_name: one of :data:`ENV_NAMES`.
        levels: Kinetix level files to train on; empty: random levels.
        max_steps: episode length; default ``env_params.max_timesteps`` (256).
        distribution: a task distribution over :class:`KinetixParams`, or ``None``.
        test_levels: held-out Kinetix level files, played with ``test=True``.
        test: play ``test_levels`` (where given) instead of ``levels``.
    """

    def __init__(
        self,
        env_name: str,
        levels: tuple[str, ...] = (),
        max_steps: int | None = None,
        distribution: Distribution | None = None,
        test_levels: tuple[str, ...] = (),
        test: bool = False,
    ):
        check_env_name(env_name, list(ENV_NAMES), "Kinetix")
        if not isinstance(test, bool):
            raise ValueError(f"test must be a bool, got {test!r}")
        levels, test_levels = tuple(levels), tuple(test_levels)
        if test_levels and not levels:
            raise ValueError("test_levels are held out from levels, which must name files too")
        environment = require("kinetix.environment", "kinetix", "Kinetix")
        ued = require("kinetix.environment.ued.ued", "kinetix", "Kinetix")
        _, obs_name, action_name, _ = env_name.split("-")
        if levels:
            saving = require("kinetix.util.saving", "kinetix", "Kinetix")
            _, static_params, physics = saving.load_from_json_file(levels[0])
            _, static_params = saving.load_evaluation_levels([*levels, *test_levels])
            played = test_levels if test and test_levels else levels
            reset_fn = ued.make_reset_fn_list_of_levels(played, static_params)
        else:
            static_params, physics = environment.StaticEnvParams(), environment.EnvParams()
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
        steps = int(physics.max_timesteps)
        space = env.action_space(physics)
        if action_name == "MultiDiscrete":  # Kinetix's own space: its sizes are not `nvec`
            nvec = tuple(int(n) for n in np.asarray(space.number_of_dims_per_distribution))
            space = ActionMap(True, (sum(nvec),), (len(nvec),), "int32", nvec=nvec)
        params = KinetixParams(physics=physics)
        self._setup(env, env_name, params, space, steps, steps, distribution, None)

    def _reset_env(self, key: PRNGKey, params: PyTree) -> tuple[PyTree, PyTree]:
        return self.env.reset(key, params.physics, override_reset_state=params.level)

    def _step_env(
        self, key: PRNGKey, env_state: PyTree, action: Array, params: PyTree
    ) -> tuple[PyTree, PyTree, Array, Array]:
        return super()._step_env(key, env_state, action, params.physics)
