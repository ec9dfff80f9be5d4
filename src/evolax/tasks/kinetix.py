"""Kinetix as an evolax task (Matthews et al., 2025, https://github.com/FLAIROx/Kinetix): an
open-ended space of 2D physics tasks (Jax2D), played on a set of level files or on levels
sampled at random, with symbolic, entity or pixel observations."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import numpy as np
from jaxtyping import Array, PyTree

from evolax.extras import require
from evolax.tasks.distributions import Distribution, ParamSet, TaskDistribution
from evolax.tasks.jax_env import GymnaxStyleTask, check_env_name
from evolax.tasks.spaces import ActionMap
from evolax.types import PRNGKey
from evolax.validation import check_positive_int

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


HELD_OUT_KEY = 20_260_101
"""The seed of the key that draws the test task's fixed set of mutated levels (training draws
its levels with the episodes' keys instead)."""


class MutatedLevels(TaskDistribution):
    """Levels drawn per episode: one of ``levels`` (uniformly) after ``n`` of Kinetix's own
    location mutations (``mutate_change_shape_location``, its UED's: a random movable shape
    moved with the shapes jointed to it by up to half a unit on each axis, kept inside the
    arena), in the episode's :class:`KinetixParams` ``level``.

    Args:
        levels: Kinetix ``EnvState`` levels stacked on a leading axis.
        n: mutations per episode.
        static_params: Kinetix's ``StaticEnvParams`` of the levels.
    """

    levels: PyTree
    n: int = eqx.field(static=True)
    static_params: PyTree = eqx.field(static=True)

    def sample(self, key: PRNGKey, params: KinetixParams) -> KinetixParams:
        """``params`` with its ``level`` drawn and mutated."""
        mutators = require("kinetix.environment.ued.mutators", "kinetix", "Kinetix")
        ued = require("kinetix.environment.ued.ued_state", "kinetix", "Kinetix").UEDParams()
        level = ParamSet(self.levels).sample(key, None)

        def mutate(level, key):
            moved = mutators.mutate_change_shape_location(
                key, level, params.physics, self.static_params, ued
            )
            return moved, None

        keys = jax.random.split(jax.random.fold_in(key, 1), self.n)
        level, _ = jax.lax.scan(mutate, level, keys)
        return KinetixParams(physics=params.physics, level=level)


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

    Mutated levels (``mutations > 0``): each episode plays a copy of a level file moved by
    ``mutations`` of Kinetix's own location mutations, drawn with the episode's key
    (:class:`MutatedLevels`), so an ES optimises the expected return over the copies; the
    test task plays instead a fixed set of ``test_samples`` copies (of ``test_levels``
    where given), drawn once from a key of its own (:data:`HELD_OUT_KEY`): held out.

    Observations are flattened to ``f32[obs_dim]``; actions follow the variant's space
    (:class:`~evolax.tasks.spaces.ActionMap`: ``Discrete`` scores, one block of scores per
    motor and thruster for ``MultiDiscrete``, or ``Box`` values in ``[-1, 1]``).

    Args:
        env_name: one of :data:`ENV_NAMES`.
        levels: Kinetix level files to train on; empty: random levels.
        max_steps: episode length; default ``env_params.max_timesteps`` (256).
        distribution: a task distribution over :class:`KinetixParams`, or ``None``.
        test_levels: held-out Kinetix level files, played with ``test=True``.
        test: play ``test_levels`` (where given) instead of ``levels``, or the held-out
            mutated copies.
        mutations: location mutations per episode's level; 0: the files as they are.
        test_samples: the number of held-out mutated copies the test task plays.
    """

    def __init__(
        self,
        env_name: str,
        levels: tuple[str, ...] = (),
        max_steps: int | None = None,
        distribution: Distribution | None = None,
        test_levels: tuple[str, ...] = (),
        test: bool = False,
        mutations: int = 0,
        test_samples: int = 64,
    ):
        check_env_name(env_name, list(ENV_NAMES), "Kinetix")
        if not isinstance(test, bool):
            raise ValueError(f"test must be a bool, got {test!r}")
        levels, test_levels = tuple(levels), tuple(test_levels)
        if test_levels and not levels:
            raise ValueError("test_levels are held out from levels, which must name files too")
        if not isinstance(mutations, int) or isinstance(mutations, bool) or mutations < 0:
            raise ValueError(f"mutations must be an int >= 0, got {mutations!r}")
        check_positive_int("test_samples", test_samples)
        if mutations and not levels:
            raise ValueError("mutations mutate level files: levels must name at least one")
        if mutations and distribution is not None:
            raise ValueError("mutations draw each episode's level: give no distribution too")
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
        if mutations:
            stacked, _ = saving.load_evaluation_levels(list(played), static_params)
            mutated = MutatedLevels(stacked, mutations, static_params)
            distribution = mutated
            if test:  # a fixed set, drawn once from a key of its own
                keys = jax.random.split(jax.random.key(HELD_OUT_KEY), test_samples)
                drawn = jax.jit(jax.vmap(lambda k: mutated.sample(k, params).level))(keys)
                distribution = ParamSet(drawn, replace="level")
        self._setup(env, env_name, params, space, steps, steps, distribution, None)

    def _reset_env(self, key: PRNGKey, params: PyTree) -> tuple[PyTree, PyTree]:
        return self.env.reset(key, params.physics, override_reset_state=params.level)

    def _step_env(
        self, key: PRNGKey, env_state: PyTree, action: Array, params: PyTree
    ) -> tuple[PyTree, PyTree, Array, Array]:
        return super()._step_env(key, env_state, action, params.physics)
