"""Multi-agent assignment: consecutive groups of ``n_agents`` individuals share one
environment of a :class:`~evolax.tasks.MultiAgentTask`."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.policies.base import Policy
from evolax.policies.team import Team
from evolax.population import map_batched
from evolax.tasks.base import MultiAgentTask, Task
from evolax.types import Population
from evolax.validation import population_size


def agents_per_unit(task: Task) -> int:
    """Individuals per environment: ``task.n_agents`` for a multi-agent task, else 1."""
    return task.n_agents if isinstance(task, MultiAgentTask) else 1


def as_teams(policy: Policy, task: Task, population: Population) -> tuple[Policy, Population]:
    """The policy and the population the rollout runs: for a multi-agent task a
    :class:`~evolax.policies.Team` and the population grouped ``[pop / n_agents, n_agents,
    ...]`` (the population must be a multiple of ``n_agents``); otherwise both unchanged."""
    n_agents = agents_per_unit(task)
    if n_agents == 1:
        return policy, population
    pop_size = population_size(population)
    if pop_size % n_agents:
        raise ValueError(
            f"the population evaluated here ({pop_size}) must be a multiple of "
            f"task.n_agents={n_agents}: each environment holds n_agents individuals"
        )
    teams = map_batched(
        lambda x: x.reshape(pop_size // n_agents, n_agents, *x.shape[1:]), population
    )
    return Team(policy, n_agents), teams


def from_teams(
    returns: Float[Array, "units repeats *agents"],
    lengths: Int[Array, "units repeats"],
    n_agents: int,
) -> tuple[Float[Array, "pop repeats"], Int[Array, "pop repeats"]]:
    """Each individual's own returns and lengths from its team's: ``[pop, repeats]``."""
    if n_agents == 1:
        return returns, lengths
    returns = jnp.moveaxis(returns, -1, 1).reshape(-1, returns.shape[1])
    return returns, jnp.repeat(lengths, n_agents, axis=0)
