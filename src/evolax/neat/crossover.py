"""NEAT's crossover: genes aligned by innovation number (connections) and id (nodes)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from evolax.neat.genome import NONE, Genome, conn_slot, node_slot
from evolax.types import PRNGKey


def crossover(key: PRNGKey, fitter: Genome, other: Genome) -> Genome:
    """The child of ``fitter`` and ``other`` (Stanley & Miikkulainen 2002, p. 108; neat-python's
    ``configure_crossover``).

    The child has the fitter parent's genes. A gene the other parent also has (same innovation
    number, or same node id) takes each attribute from either parent with probability 1/2; a
    connection disabled in either parent is disabled in the child with probability 3/4.
    """
    k_conn, k_disable, k_node = jax.random.split(key, 3)
    slot = conn_slot(other, fitter.innovation)
    match = (fitter.innovation != NONE) & (other.innovation[slot] == fitter.innovation)
    pick = jax.random.bernoulli(k_conn, 0.5, (2, fitter.max_conns)) & match[None]
    either_disabled = match & ~(fitter.enabled & other.enabled[slot])
    disable = either_disabled & jax.random.bernoulli(k_disable, 0.75, (fitter.max_conns,))
    enabled = jnp.where(pick[1], other.enabled[slot], fitter.enabled) & ~disable

    node = node_slot(other, fitter.node_id)
    same = (fitter.node_id != NONE) & (other.node_id[node] == fitter.node_id)
    take = jax.random.bernoulli(k_node, 0.5, (4, fitter.max_nodes)) & same[None]
    return dataclasses.replace(
        fitter,
        weight=jnp.where(pick[0], other.weight[slot], fitter.weight),
        enabled=enabled,
        bias=jnp.where(take[0], other.bias[node], fitter.bias),
        response=jnp.where(take[1], other.response[node], fitter.response),
        activation=jnp.where(take[2], other.activation[node], fitter.activation),
        aggregation=jnp.where(take[3], other.aggregation[node], fitter.aggregation),
    )
