"""Any gymnax environment as an evolax task (Lange, 2022, https://github.com/RobertTLange/gymnax)."""

from __future__ import annotations

import difflib
import math
from typing import Any

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PyTree

from evolax.tasks.base import ConstructedTask
from evolax.tasks.spaces import ActionMap, EnvTaskState, flatten_obs
from evolax.types import Done, PRNGKey, Reward
from evolax.validation import check_positive_int

INSTALL_HINT = "pip install evolax[gymnax]"


def _import_gymnax():
    """The ``gymnax`` package, or an ``ImportError`` that says how to install it."""
    try:
        import gymnax
        from gymnax.environments import spaces
    except ImportError as error:
        raise ImportError(
            f"GymnaxTask needs the optional gymnax package: {INSTALL_HINT} "
            f"(or pip install gymnax); importing it failed with: {error}"
        ) from error
    return gymnax, spaces


@chex.dataclass(frozen=True)
class GymnaxTaskState(EnvTaskState):
    """The state of one gymnax episode: ``obs`` and gymnax's own environment state as
    ``env_state`` (a flax struct dataclass; its ``time`` counts the episode's steps)."""


class GymnaxTask(ConstructedTask):
    """A gymnax environment (CartPole-v1, Pendulum-v1, MinAtar, bsuite, ...) as a task.

    ``reset(key)`` is gymnax's ``env.reset(key, env_params)`` and ``step(state, action, key)``
    is gymnax's ``env.step(key, env_state, env_action(action), env_params)`` with the same
    key, so the same keys and actions give the episode gymnax itself gives. ``done`` is
    gymnax's ``terminated or truncated`` (truncated: ``max_steps`` steps taken). gymnax's
    ``step`` starts a new episode once one is done (auto-reset); evolax ignores every reward
    after an episode's first ``done``, so those never count.

    Observations (any pytree of arrays) are flattened and cast to ``f32[obs_dim]``
    (``obs_shape = (obs_dim,)``; MinAtar's ``bool[10, 10, c]`` becomes ``f32[100 c]``).
    The policy outputs a flat vector, mapped to gymnax's action by :meth:`env_action` (see
    :class:`~evolax.tasks.spaces.ActionMap`): ``Discrete(n)`` takes ``n`` scores and their
    ``argmax``; a ``Box`` reads outputs in ``[-1, 1]`` (clipped) rescaled to ``[low, high]``,
    so Pendulum-v1's ``a = 0.5`` is a torque of 1 N m.

    Other action spaces (``Dict``, ``Tuple``) raise a ``TypeError``; a ``Box`` with an
    infinite bound a ``ValueError``. gymnax is optional: ``pip install evolax[gymnax]``.

    The task holds the environment as static configuration and ``env_params`` as an
    ordinary field, so it is hashable (``jax.jit(trainer.run)`` works) unless the
    parameters hold arrays (Acrobot-v1's do): then close over the trainer or pass it as an
    argument (``eqx.filter_jit``), as for :class:`~evolax.tasks.MNIST`.

    Example: ``GymnaxTask("CartPole-v1")`` has obs ``f32[4]``, action ``f32[2]`` (two
    logits), 500 steps; ``GymnaxTask.from_env(*gymnax.make("Pendulum-v1"))`` has obs
    ``f32[3]``, action ``f32[1]`` (a torque in ``[-2, 2]``), 200 steps.

    Args:
        env: a registered gymnax environment name (see ``gymnax.registered_envs``), or a
            gymnax environment object or wrapper (``reset``, ``step``, ``action_space``,
            ``default_params``).
        env_params: the environment's parameters (default: ``env.default_params``).
        max_steps: episode length; default (and at most) ``env_params.max_steps_in_episode``.
            A smaller value replaces ``max_steps_in_episode`` in the stored ``env_params``,
            so gymnax itself truncates the episode.
        **make_kwargs: passed to ``gymnax.make`` when ``env`` is a name.
    """

    env: Any = eqx.field(static=True)
    env_params: PyTree
    actions: ActionMap

    def __init__(
        self,
        env: str | Any,
        env_params: PyTree | None = None,
        max_steps: int | None = None,
        **make_kwargs: Any,
    ):
        gymnax, _ = _import_gymnax()
        if isinstance(env, str):
            env = _make(gymnax, env, make_kwargs)
        elif make_kwargs:
            raise TypeError(
                f"make_kwargs {sorted(make_kwargs)} only apply when env is a registered name"
            )
        for method in ("reset", "step", "action_space", "default_params"):
            if not hasattr(env, method):
                raise TypeError(
                    f"env must be a gymnax environment name or object (with reset, step, "
                    f"action_space, default_params), got {type(env).__name__} without {method!r}"
                )
        if env_params is None:
            env_params = env.default_params
        self.env = env
        self.max_steps = _max_steps(env_params, max_steps)
        if max_steps is not None:  # gymnax itself then truncates (and auto-resets) episodes
            env_params = env_params.replace(max_steps_in_episode=self.max_steps)
        self.env_params = env_params

        obs, _ = jax.eval_shape(env.reset, jax.random.key(0), env_params)
        self.obs_shape = (sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(obs)),)

        self.actions = ActionMap.from_space(env.action_space(env_params), "GymnaxTask")
        self.action_shape = self.actions.action_shape

    @classmethod
    def from_env(
        cls, env: Any, env_params: PyTree | None = None, max_steps: int | None = None
    ) -> GymnaxTask:
        """Wrap a gymnax environment object (e.g. from ``gymnax.make``, or a wrapper)."""
        if isinstance(env, str):
            raise TypeError(
                f"from_env takes a gymnax environment object; for a name use GymnaxTask({env!r})"
            )
        return cls(env, env_params, max_steps)

    def __check_init__(self):
        check_positive_int("max_steps", self.max_steps)

    def env_action(self, action: Float[Array, " action_dim"]) -> Array:
        """The gymnax action for a policy output: the ``argmax`` (Discrete) or the output
        rescaled from ``[-1, 1]`` to ``[low, high]`` (Box)."""
        self.check_action(action)
        return self.actions(action)

    def reset(self, key: PRNGKey) -> GymnaxTaskState:
        obs, env_state = self.env.reset(key, self.env_params)
        return GymnaxTaskState(obs=flatten_obs(obs), env_state=env_state)

    def step(
        self, state: GymnaxTaskState, action: Float[Array, " action_dim"], key: PRNGKey
    ) -> tuple[GymnaxTaskState, Reward, Done]:
        out = self.env.step(key, state.env_state, self.env_action(action), self.env_params)
        if len(out) == 6:  # gymnax >= 1.0: obs, state, reward, terminated, truncated, info
            obs, env_state, reward, terminated, truncated, _ = out
            done = jnp.logical_or(terminated, truncated)
        else:  # older gymnax: obs, state, reward, done, info
            obs, env_state, reward, done, _ = out
        new_state = GymnaxTaskState(obs=flatten_obs(obs), env_state=env_state)
        return new_state, jnp.asarray(reward, jnp.float32).reshape(()), jnp.asarray(done, bool)


def _make(gymnax, name: str, make_kwargs: dict) -> Any:
    """``gymnax.make(name)``'s environment, with a clear error for an unknown name."""
    registered = list(gymnax.registered_envs)
    if name not in registered:
        close = difflib.get_close_matches(name, registered, n=3)
        hint = f"did you mean {', '.join(map(repr, close))}? " if close else ""
        raise ValueError(
            f"env {name!r} is not a registered gymnax environment; {hint}valid names include "
            f"{', '.join(map(repr, registered[:6]))} ({len(registered)} in all: see "
            f"gymnax.registered_envs)"
        )
    env, _ = gymnax.make(name, **make_kwargs)
    return env


def _max_steps(env_params: PyTree, max_steps: int | None) -> int:
    """``max_steps``, defaulting to (and checked against) ``max_steps_in_episode``."""
    limit = getattr(env_params, "max_steps_in_episode", None)
    if limit is None or not hasattr(env_params, "replace"):
        raise TypeError(
            f"env_params must be gymnax environment parameters (a struct with "
            f"max_steps_in_episode and replace), got {type(env_params).__name__}"
        )
    value = float(np.asarray(limit))
    if not value.is_integer() or value <= 0:
        raise ValueError(
            f"env_params.max_steps_in_episode must be a positive integer, got {limit!r}"
        )
    if max_steps is None:
        return int(value)
    check_positive_int("max_steps", max_steps)
    if max_steps > value:
        raise ValueError(
            f"max_steps must be at most the environment's max_steps_in_episode ({int(value)}), "
            f"got {max_steps}; pass env_params with a larger max_steps_in_episode for longer "
            f"episodes"
        )
    return max_steps
