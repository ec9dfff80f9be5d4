"""NEAT genomes as fixed-capacity tensors (Stanley & Miikkulainen, 2002).

A genome holds up to ``N`` nodes and ``C`` connections in arrays of static shape, so a
population is one pytree with a leading population axis that ``jit``, ``vmap`` and ``lax.scan``
carry like any other genome. An empty slot has the id :data:`NONE`, the largest ``int32``:
nodes are kept sorted by id and connections by innovation number, so empty slots sit at the
end and a gene is found by binary search (``jnp.searchsorted``).

Node ids: the ``I`` inputs are ``0 .. I-1``, the ``O`` outputs ``I .. I+O-1`` (so they are the
first ``I + O`` slots of every genome, always present), and hidden nodes get ids from a
counter that starts at ``I + O``. A connection names its two nodes by id.
"""

from __future__ import annotations

import dataclasses
import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

NONE = int(jnp.iinfo(jnp.int32).max)
"""The id and innovation number of an empty slot."""


@chex.dataclass(frozen=True)
class Genome:
    """One NEAT genome: ``N`` node slots sorted by id, ``C`` connection slots sorted by
    innovation number (empty slots last, with id or innovation :data:`NONE`).

    Attributes:
        node_id: ``i32[N]``.
        bias, response: ``f32[N]``: a node computes ``act(bias + response * agg(w_i x_i))``.
        activation, aggregation: ``i32[N]``, indices into the policy's option lists.
        conn_in, conn_out: ``i32[C]``, the node ids a connection joins.
        weight: ``f32[C]``.
        enabled: ``bool[C]``.
        innovation: ``i32[C]``, its historical marking.
        output_ids: ``i32[O]``, the output nodes' ids ``I .. I+O-1`` (never changed).
        n_activations, n_aggregations: ``i32[]``, the sizes of the policy's option lists
            (what a mutation of ``activation`` or ``aggregation`` draws from).
    """

    node_id: Int[Array, " N"]
    bias: Float[Array, " N"]
    response: Float[Array, " N"]
    activation: Int[Array, " N"]
    aggregation: Int[Array, " N"]
    conn_in: Int[Array, " C"]
    conn_out: Int[Array, " C"]
    weight: Float[Array, " C"]
    enabled: Bool[Array, " C"]
    innovation: Int[Array, " C"]
    output_ids: Int[Array, " O"]
    n_activations: Int[Array, ""]
    n_aggregations: Int[Array, ""]

    # not fields: the kind of genome, for the algorithms' check at init
    # (evolax.algorithms.base.Algorithm.genome_kind), and what evolves it
    genome_kind = "neat"
    evolved_by = (
        "a NEAT genome (the NEATNetwork policy's: nodes and connections) is evolved by NEAT "
        "(algorithm.name=neat)"
    )

    @property
    def max_nodes(self) -> int:
        return self.node_id.shape[-1]

    @property
    def max_conns(self) -> int:
        return self.innovation.shape[-1]


def minimal_genome(
    n_inputs: int,
    n_outputs: int,
    max_nodes: int,
    max_conns: int,
    connected: bool = True,
    n_activations: int = 1,
    n_aggregations: int = 1,
    self_loops: bool = False,
    n_hidden: int = 0,
) -> Genome:
    """The start genome: inputs, outputs and ``n_hidden`` hidden nodes (ids in that order).
    When ``connected``, each input is joined to each output (no hidden nodes), or, as
    neat-python's ``full_nodirect``, each input to each hidden node and each hidden node to
    each output (innovations from 0 in that order, source-major); with ``self_loops`` each
    output and hidden node also to itself (neat-python's full start for a recurrent genome).
    Weights and biases zero, responses one.

    Raises:
        ValueError: the capacities cannot hold the nodes and first connections.
    """
    used = n_inputs + n_outputs + n_hidden
    if max_nodes < used:
        raise ValueError(
            f"max_nodes must hold the {n_inputs} inputs, {n_outputs} outputs and {n_hidden} "
            f"hidden nodes, got {max_nodes}"
        )
    inputs, outputs = np.arange(n_inputs), np.arange(n_inputs, n_inputs + n_outputs)
    hidden = np.arange(n_inputs + n_outputs, used)
    pairs: list[tuple[int, int]] = []
    if connected:
        layers = [inputs, outputs] if n_hidden == 0 else [inputs, hidden, outputs]
        for sources, targets in itertools.pairwise(layers):
            pairs += [(int(a), int(b)) for a in sources for b in targets]
        if self_loops:
            pairs += [(int(n), int(n)) for n in np.concatenate([outputs, hidden])]
    if max_conns < max(len(pairs), 1):
        raise ValueError(f"max_conns must hold the {len(pairs)} first connections, got {max_conns}")
    ends = np.full((max_conns, 2), int(NONE))
    ends[: len(pairs)] = np.asarray(pairs, int).reshape(-1, 2)
    real = jnp.arange(max_conns) < len(pairs)
    node_id = jnp.where(jnp.arange(max_nodes) < used, jnp.arange(max_nodes), NONE)
    return Genome(
        node_id=node_id.astype(jnp.int32),
        bias=jnp.zeros(max_nodes),
        response=jnp.ones(max_nodes),
        activation=jnp.zeros(max_nodes, jnp.int32),
        aggregation=jnp.zeros(max_nodes, jnp.int32),
        conn_in=jnp.asarray(ends[:, 0], jnp.int32),
        conn_out=jnp.asarray(ends[:, 1], jnp.int32),
        weight=jnp.zeros(max_conns),
        enabled=real,
        innovation=jnp.where(real, jnp.arange(max_conns), NONE).astype(jnp.int32),
        output_ids=jnp.asarray(outputs, jnp.int32),
        n_activations=jnp.asarray(n_activations, jnp.int32),
        n_aggregations=jnp.asarray(n_aggregations, jnp.int32),
    )


NODE_FIELDS = ("node_id", "bias", "response", "activation", "aggregation")
CONN_FIELDS = ("conn_in", "conn_out", "weight", "enabled", "innovation")


def compact_genes(genome: Genome) -> Genome:
    """The genome with emptied slots moved to the end, the others kept in order (sorted
    genes stay sorted: cheaper than sorting again after deletions)."""

    def positions(ids):
        keep = ids != NONE
        return jnp.where(keep, jnp.cumsum(keep) - 1, jnp.sum(keep) + jnp.cumsum(~keep) - 1)

    nodes, conns = positions(genome.node_id), positions(genome.innovation)
    return dataclasses.replace(
        genome,
        **{
            f: jnp.zeros_like(getattr(genome, f)).at[nodes].set(getattr(genome, f))
            for f in NODE_FIELDS
        },
        **{
            f: jnp.zeros_like(getattr(genome, f)).at[conns].set(getattr(genome, f))
            for f in CONN_FIELDS
        },
    )


def node_slot(genome: Genome, ids: Int[Array, "..."]) -> Int[Array, "..."]:
    """The slots of the nodes ``ids`` (each present in the genome)."""
    return jnp.searchsorted(genome.node_id, ids).clip(0, genome.max_nodes - 1)


def conn_slot(genome: Genome, innovations: Int[Array, "..."]) -> Int[Array, "..."]:
    """The slots of the connections ``innovations`` (where present)."""
    return jnp.searchsorted(genome.innovation, innovations).clip(0, genome.max_conns - 1)


def is_input(genome: Genome, ids: Int[Array, "..."]) -> Bool[Array, "..."]:
    return ids < genome.output_ids[0]


def is_output(genome: Genome, ids: Int[Array, "..."]) -> Bool[Array, "..."]:
    return (ids >= genome.output_ids[0]) & (ids <= genome.output_ids[-1])


def node_count(genome: Genome) -> Int[Array, ""]:
    """Nodes other than inputs (neat-python's ``len(genome.nodes)``)."""
    return jnp.sum((genome.node_id != NONE) & ~is_input(genome, genome.node_id))


def conn_count(genome: Genome, enabled_only: bool = False) -> Int[Array, ""]:
    real = genome.innovation != NONE
    return jnp.sum(real & genome.enabled if enabled_only else real)


def reaches(genome: Genome, source: Int[Array, ""], target: Int[Array, ""]) -> Bool[Array, ""]:
    """Whether a path of connections (enabled or not) leads from node ``source`` to node
    ``target`` (neat-python's cycle test for a new connection ``target -> source``)."""
    real = genome.innovation != NONE
    src, dst = node_slot(genome, genome.conn_in), node_slot(genome, genome.conn_out)
    start = jnp.zeros(genome.max_nodes, bool).at[node_slot(genome, source)].set(True)

    def grow(carry):
        seen, _ = carry
        more = seen.at[dst].max(real & seen[src])
        return more, jnp.any(more != seen)

    seen, _ = jax.lax.while_loop(lambda c: c[1], grow, (start, jnp.asarray(True)))
    return seen[node_slot(genome, target)]
