"""Any MuJoCo Playground environment as an evolax task (Zakka et al., 2025,
https://github.com/google-deepmind/mujoco_playground): the DM Control suite, locomotion and
manipulation, simulated by MJX inside the compiled program."""

from __future__ import annotations

import subprocess
from typing import Any

import chex
import equinox as eqx
import jax

from evolax.tasks.brax import BraxLikeTask
from evolax.tasks.jax_env import check_env_name
from evolax.tasks.spaces import EnvTaskState

INSTALL_HINT = "pip install evolax[playground]"


def _import_registry() -> Any:
    """``mujoco_playground.registry``, or an ``ImportError`` that says how to install it."""
    try:
        from mujoco_playground import registry
    except ImportError as error:
        raise ImportError(
            f"the Playground task needs the optional playground package: {INSTALL_HINT} "
            f"(or pip install playground); importing it failed with: {error}"
        ) from error
    return registry


def registered_envs() -> list[str]:
    """The names of Playground's environments (``mujoco_playground.registry.ALL_ENVS``)."""
    return sorted(_import_registry().ALL_ENVS)


@chex.dataclass(frozen=True)
class PlaygroundState(EnvTaskState):
    """The state of one Playground episode: ``obs`` and Playground's own ``State`` as
    ``env_state``: ``data`` (MJX's physics data), ``obs``, ``reward``, ``done``, ``metrics``
    and ``info``."""


class Playground(BraxLikeTask[PlaygroundState]):
    """A MuJoCo Playground environment (``CartpoleBalance``, ``CheetahRun``,
    ``Go1JoystickFlatTerrain``, ...) as a task.

    The environment is ``mujoco_playground.registry.load(env_name, config_overrides=...)``
    with the pure-JAX MJX implementation (``impl="jax"``) unless ``config_overrides`` says
    otherwise. ``reset(key)`` is its ``reset(key)`` and ``step(state, action, key)`` its
    ``step(env_state, action)`` (the dynamics take no key; an environment that needs
    randomness keeps its own key in ``info``), so the same keys and actions give Playground's
    own episode. ``done`` is the environment's termination; episodes are cut at
    ``max_steps`` (default: the environment's ``episode_length``) by evolax, which ignores
    every reward after the first ``done``. Observations are flattened and cast to
    ``f32[obs_dim]`` (a dict of observations is concatenated in key order); actions
    ``f32[action_size]`` go to the environment unchanged (controls in ``[-1, 1]``: an ``MLP``
    with ``output_activation="tanh"``).

    The DM Control suite's models ship in the package and work offline; the locomotion and
    manipulation environments fetch MuJoCo Menagerie's robots on first use, and without a
    network raise a one-line ``RuntimeError`` saying so. Playground is optional:
    ``pip install evolax[playground]``.

    Example: ``Playground("CartpoleBalance")`` has obs ``f32[5]``, action ``f32[1]`` and
    1000 steps.

    Args:
        env_name: a registered Playground environment (see :func:`registered_envs`).
        max_steps: episode length; default the environment's ``episode_length``.
        config_overrides: entries of the environment's configuration to replace
            (``{"ctrl_dt": 0.02}``); ``impl`` defaults to ``"jax"``.
    """

    state_type = PlaygroundState

    env: Any = eqx.field(static=True)
    env_name: str = eqx.field(static=True)

    def __init__(
        self,
        env_name: str,
        max_steps: int | None = None,
        config_overrides: dict[str, Any] | None = None,
    ):
        registry = _import_registry()
        if not isinstance(env_name, str):
            raise TypeError(f"env_name must be a Playground environment name, got {env_name!r}")
        check_env_name(env_name, registered_envs(), "Playground")
        overrides = {"impl": "jax", **(config_overrides or {})}
        try:
            env = registry.load(env_name, config_overrides=overrides)
        except (subprocess.CalledProcessError, OSError) as error:
            raise RuntimeError(
                f"Playground's {env_name!r} fetches its assets (MuJoCo Menagerie) at run time, "
                f"and that failed ({type(error).__name__}: {str(error).splitlines()[0]}); "
                "fetch them where the network is reachable, or use a DM Control suite "
                "environment, whose assets ship with the package"
            ) from None
        except (KeyError, AttributeError, ValueError) as error:
            raise ValueError(
                f"Playground could not load {env_name!r} with config_overrides "
                f"{sorted(overrides)}: {error}"
            ) from None
        self.env, self.env_name = env, env_name
        self.max_steps = int(env._config.episode_length) if max_steps is None else max_steps
        with jax.numpy_rank_promotion("allow"):  # as Brax, Playground promotes ranks
            state = jax.eval_shape(env.reset, jax.random.key(0))
        self.obs_shape = (sum(int(leaf.size) for leaf in jax.tree.leaves(state.obs)),)
        self.action_shape = (int(env.action_size),)
