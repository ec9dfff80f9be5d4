"""Any JaxMARL environment as an evolax multi-agent task (Rutherford et al., 2024,
https://github.com/FLAIROx/JaxMARL): the MPE tasks, SMAX, Overcooked, STORM, coin game,
Hanabi, ... with every agent played by its own member of the population."""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PyTree

from evolax.extras import require
from evolax.tasks.base import MultiAgentTask
from evolax.tasks.jax_env import JaxEnvTask, check_env_name
from evolax.tasks.spaces import ActionMap, flatten_obs
from evolax.types import PRNGKey

DEFAULT_MAX_STEPS = 1000
"""The episode length of an environment without a ``max_steps`` attribute."""


def registered_envs() -> list[str]:
    """The names of JaxMARL's environments (``jaxmarl.registration.registered_envs``)."""
    return sorted(require("jaxmarl.registration", "jaxmarl", "JaxMARL").registered_envs)


class JaxMARL(JaxEnvTask, MultiAgentTask):
    """A JaxMARL environment (``MPE_simple_spread_v3``, ``MPE_simple_reference_v3``,
    ``SMAX``, ``coin_game``, ...) as a :class:`~evolax.tasks.MultiAgentTask`; in a
    configuration ``task.name=jaxmarl:MPE_simple_spread_v3``.

    The agents act as a team, as in evolax's other multi-agent tasks: the rollout puts
    ``n_agents`` consecutive members of the population into each environment, agent ``i``
    (``env.agents[i]``) played by the ``i``-th, and each member's fitness is its agent's own
    return (in a cooperative task, such as ``MPE_simple_spread_v3``, the team's shared one).

    The environment is ``jaxmarl.make(env_name, **make_kwargs)``. ``reset(key)`` is its
    ``reset(key)``; ``step(state, actions, key)`` is its ``step(key, state, actions)``
    without the automatic reset (``step_env`` with the key ``step`` passes it), so the same
    keys and actions give JaxMARL's own observations, rewards and dones until the episode
    ends. ``done`` is ``dones["__all__"]``.

    The state's ``obs`` is ``f32[n_agents, obs_dim]``: each agent's observation flattened and
    zero-padded to the largest; ``step`` takes ``f32[n_agents, action_dim]``, each row mapped
    by its agent's :class:`~evolax.tasks.spaces.ActionMap` from its first entries
    (``Discrete(n)``: ``n`` scores; ``Box``: values in ``[-1, 1]``), and returns
    ``f32[n_agents]`` rewards.

    Example: ``JaxMARL("MPE_simple_spread_v3")`` has 3 agents, obs ``f32[18]`` and action
    ``f32[5]`` each, and 25 steps.

    Args:
        env_name: a registered JaxMARL environment (see :func:`registered_envs`).
        max_steps: episode length; default the environment's ``max_steps``.
        **make_kwargs: passed to ``jaxmarl.make``.
    """

    n_agents: int = eqx.field(static=True)
    agent_actions: tuple[ActionMap, ...]

    def __init__(self, env_name: str, max_steps: int | None = None, **make_kwargs: Any):
        jaxmarl = require("jaxmarl", "jaxmarl", "JaxMARL")
        check_env_name(env_name, registered_envs(), "JaxMARL")
        env = jaxmarl.make(env_name, **make_kwargs)
        self.n_agents = len(env.agents)
        self.agent_actions = tuple(
            ActionMap.from_space(env.action_space(agent), "JaxMARL") for agent in env.agents
        )
        widest = max(self.agent_actions, key=lambda m: m.action_shape)
        limit = getattr(env, "max_steps", None)
        default = int(limit) if isinstance(limit, int) and limit > 0 else DEFAULT_MAX_STEPS
        self._setup(env, env_name, None, widest, max_steps, default, None, None)
        self.obs_shape = self.obs_shape[1:]  # one agent's

    def _observe(self, obs: PyTree) -> Float[Array, "n_agents obs_dim"]:
        """Each agent's observation flattened, zero-padded to the largest and stacked."""
        rows = [flatten_obs(obs[agent]) for agent in self.env.agents]
        width = max(row.shape[0] for row in rows)
        return jnp.stack([jnp.pad(row, (0, width - row.shape[0])) for row in rows])

    def env_action(
        self, action: Float[Array, "n_agents action_dim"], mask: Array | None = None
    ) -> dict[str, Array]:
        """JaxMARL's actions, a dict by agent: row ``i`` mapped by agent ``i``'s map."""
        del mask
        self.check_actions(action)
        maps = zip(self.env.agents, self.agent_actions, action, strict=True)
        return {agent: m(row[: m.action_shape[0]]) for agent, m, row in maps}

    def _reset_env(self, key: PRNGKey, params: PyTree) -> tuple[PyTree, PyTree]:
        del params
        return self.env.reset(key)

    def _step_env(
        self, key: PRNGKey, env_state: PyTree, action: Array, params: PyTree
    ) -> tuple[PyTree, PyTree, Array, Array]:
        del params
        step_key, _ = jax.random.split(key)  # as JaxMARL's `step`, which resets with the other
        obs, env_state, rewards, dones, _ = self.env.step_env(step_key, env_state, action)
        reward = jnp.stack([jnp.asarray(rewards[agent]).reshape(()) for agent in self.env.agents])
        return obs, env_state, reward, dones["__all__"]
