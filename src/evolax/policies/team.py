"""A team: ``n_agents`` individuals acting together in one multi-agent environment."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.policies.base import Policy
from evolax.population import pop_axes
from evolax.types import Params, PRNGKey
from evolax.validation import check_positive_int


def replicate(params: Params, n: int) -> Params:
    """``n`` copies of a pytree stacked on a leading axis (broadcast, not copied in memory): a
    team (or a population) in which every agent plays the genome ``params``, or states shared
    by a whole population."""
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (n, *x.shape)), params)


class Team(Policy):
    """Runs ``policy`` for ``n_agents`` agents at once, each with its own parameters.

    This is how the rollout plays a :class:`~evolax.tasks.MultiAgentTask`: the team's
    parameters are ``n_agents`` genomes stacked on a leading axis, its observation is
    ``[n_agents, *obs_shape]`` and its action ``[n_agents, *action_shape]``. Each agent gets its
    own policy state and its own key (``split(key, n_agents)``).

    Args:
        policy: the policy every agent runs.
        n_agents: agents in the team, positive.
    """

    policy: Policy
    n_agents: int = eqx.field(static=True)

    def __check_init__(self):
        check_positive_int("n_agents", self.n_agents)

    def init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> Params:
        """``n_agents`` independent initialisations of ``policy``, stacked."""
        keys = jax.random.split(key, self.n_agents)
        return jax.vmap(lambda k: self.policy.init(k, obs_shape, action_shape))(keys)

    def reset(self, key: PRNGKey):
        return jax.vmap(self.policy.reset)(jax.random.split(key, self.n_agents))

    def apply(self, params: Params, obs: Float[Array, "agents ..."], state, key: PRNGKey):
        keys = jax.random.split(key, self.n_agents)
        return jax.vmap(self.policy.apply, in_axes=(pop_axes(params), 0, 0, 0))(
            params, obs, state, keys
        )
