"""Craftax as an evolax task (Matthews et al., 2024, https://github.com/MichaelTMatthews/Craftax):
an open-world survival game in JAX, with symbolic and pixel observations, and Craftax-Classic
(Crafter's rules)."""

from __future__ import annotations

from evolax.extras import require
from evolax.tasks.distributions import Distribution
from evolax.tasks.jax_env import GymnaxStyleTask, check_env_name

ENV_NAMES = (
    "Craftax-Classic-Pixels-v1",
    "Craftax-Classic-Symbolic-v1",
    "Craftax-Pixels-v1",
    "Craftax-Symbolic-v1",
)
"""Craftax's environments (without auto-reset: evolax ends episodes at ``done``)."""


class Craftax(GymnaxStyleTask):
    """A Craftax environment (``Craftax-Symbolic-v1``, ``Craftax-Pixels-v1`` and their
    ``Craftax-Classic-`` versions) as a task; in a configuration
    ``task.name=craftax:Craftax-Classic-Symbolic-v1``.

    The environment is ``craftax.craftax_env.make_craftax_env_from_name(env_name,
    auto_reset=False)`` with its ``default_params`` as ``env_params`` (an ordinary field:
    ``day_length``, the mobs' health and spawn chances, ...; a
    :class:`~evolax.tasks.distributions.UniformParams` draws them per episode). Craftax has
    gymnax's interface: ``reset(key)`` is its ``reset(key, env_params)`` and ``step(state,
    action, key)`` its ``step(key, env_state, action, env_params)``, so the same keys and
    actions give Craftax's own episode. ``done`` is Craftax's (dead, or ``max_timesteps``
    reached: ``max_steps`` replaces it in ``env_params``).

    Observations are flattened to ``f32[obs_dim]``: the symbolic map and inventory
    (Classic: 1345 values; Craftax: 8268) or the pixels (Classic: ``63x63x3``, 11907
    values); actions are ``Discrete(17)`` (Classic) or ``Discrete(43)`` scores, the
    ``argmax`` taken.

    Example: ``Craftax("Craftax-Classic-Symbolic-v1", max_steps=1000)`` has obs
    ``f32[1345]``, action ``f32[17]`` and 1000 steps.

    Args:
        env_name: one of :data:`ENV_NAMES`.
        max_steps: episode length; default the environment's ``max_timesteps`` (10000).
        distribution: a task distribution over ``env_params``, or ``None``.
    """

    def __init__(
        self,
        env_name: str,
        max_steps: int | None = None,
        distribution: Distribution | None = None,
    ):
        module = require("craftax.craftax_env", "craftax", "Craftax")
        check_env_name(env_name, list(ENV_NAMES), "Craftax")
        env = module.make_craftax_env_from_name(env_name, auto_reset=False)
        params = env.default_params
        if max_steps is not None:  # Craftax itself then ends the episode there
            params = params.replace(max_timesteps=max_steps)
        steps = int(params.max_timesteps)
        self._setup(env, env_name, params, env.action_space(params), steps, steps, distribution)
