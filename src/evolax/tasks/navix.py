"""Any NAVIX environment as an evolax task (Pignatelli et al., 2024,
https://github.com/epignatelli/navix): MiniGrid's grid-navigation environments in JAX."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jaxtyping import Array, PyTree

from evolax.extras import require
from evolax.tasks.jax_env import JaxEnvTask, check_env_name
from evolax.types import PRNGKey

DEFAULT_MAX_STEPS = 100
"""NAVIX's own default episode length (``navix.make``'s ``max_steps``)."""


def registered_envs() -> list[str]:
    """The names of NAVIX's environments (``navix.registry()``)."""
    return sorted(require("navix", "navix", "NAVIX").registry())


class Navix(JaxEnvTask):
    """A NAVIX environment (``Navix-Empty-5x5-v0``, ``Navix-DoorKey-8x8-v0``,
    ``Navix-FourRooms-v0``, ...) as a task; in a configuration
    ``task.name=navix:Navix-Empty-5x5-v0``.

    The environment is ``navix.make(env_name, max_steps=max_steps, **make_kwargs)``: NAVIX
    itself truncates the episode at ``max_steps``, and ``make_kwargs`` set its other options
    (``reward_fn``, ...); ``observation_fn`` (a function, or in a configuration its import
    path: ``navix.observations:symbolic_first_person``) replaces the environment's own.
    ``reset(key)`` is its ``reset(key)``; ``step(state, action, key)`` its ``step(timestep,
    action)`` (NAVIX keeps its own key in the state, so ``key`` is unused): the same keys and
    actions give NAVIX's own episode. ``done`` is ``timestep.is_done()`` (terminated or
    truncated).

    Observations (the symbolic ``uint8[view, view, 3]`` grid by default, or RGB pixels) are
    flattened to ``f32[obs_dim]``; actions are ``Discrete(7)`` scores, the ``argmax`` taken.
    The environment is all static configuration (no parameter struct), so ``env_params`` is
    ``None``.

    Example: ``Navix("Navix-Empty-5x5-v0")`` has obs ``f32[75]``, action ``f32[7]`` and 100
    steps.

    Args:
        env_name: a registered NAVIX environment (see :func:`registered_envs`).
        max_steps: episode length (NAVIX truncates there); default 100.
        observation_fn: NAVIX's observation function (``navix.observations.rgb``: pixels;
            ``symbolic_first_person``: the symbols the agent sees ahead of it), or ``None``
            for the environment's own (the whole grid's symbols, for most).
        **make_kwargs: passed to ``navix.make``.
    """

    def __init__(
        self,
        env_name: str,
        max_steps: int | None = None,
        observation_fn: Callable[..., Any] | None = None,
        **make_kwargs: Any,
    ):
        navix = require("navix", "navix", "NAVIX")
        check_env_name(env_name, registered_envs(), "NAVIX")
        max_steps = DEFAULT_MAX_STEPS if max_steps is None else max_steps
        if observation_fn is not None:
            if not callable(observation_fn):
                raise TypeError(
                    f"observation_fn must be a NAVIX observation function (navix.observations."
                    f"symbolic_first_person, ...), got {observation_fn!r}"
                )
            make_kwargs["observation_fn"] = observation_fn
        env = navix.make(env_name, max_steps=max_steps, **make_kwargs)
        self._setup(env, env_name, None, env.action_space, max_steps, max_steps, None, None)

    def _reset_env(self, key: PRNGKey, params: PyTree) -> tuple[PyTree, PyTree]:
        del params
        timestep = self.env.reset(key)
        return timestep.observation, timestep

    def _step_env(
        self, key: PRNGKey, env_state: PyTree, action: Array, params: PyTree
    ) -> tuple[PyTree, PyTree, Array, Array]:
        del key, params
        timestep = self.env.step(env_state, action)
        return timestep.observation, timestep, timestep.reward, timestep.is_done()
