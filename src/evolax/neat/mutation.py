"""NEAT's mutations of one genome, and the numbering of new genes across a population.

Structural mutations are proposed by each child on its own (``propose_*``), numbered for the
whole population at once (:func:`number_new_genes`: the same new gene in two children this
generation gets the same number, as the paper asks), then applied (``apply_*``).
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from evolax.neat.genome import (
    NONE,
    Genome,
    compact_genes,
    conn_slot,
    is_input,
    is_output,
    reaches,
)
from evolax.types import PRNGKey


class Attribute(eqx.Module):
    """A float gene attribute as neat-python draws and mutates it: a new value is
    ``N(init_mean, init_stdev)``; a mutation adds ``N(0, mutate_power)`` with probability
    ``mutate_rate``, else draws a new value with probability ``replace_rate``; values are
    clipped to ``[min_value, max_value]``."""

    init_mean: float
    init_stdev: float
    mutate_power: float
    mutate_rate: float
    replace_rate: float
    min_value: float
    max_value: float

    def new(self, key: PRNGKey, shape: tuple[int, ...]) -> Float[Array, "..."]:
        value = self.init_mean + self.init_stdev * jax.random.normal(key, shape)
        return jnp.clip(value, self.min_value, self.max_value)

    def mutate(self, key: PRNGKey, value: Float[Array, "..."]) -> Float[Array, "..."]:
        k_choice, k_step, k_new = jax.random.split(key, 3)
        r = jax.random.uniform(k_choice, value.shape)
        step = jnp.clip(
            value + self.mutate_power * jax.random.normal(k_step, value.shape),
            self.min_value,
            self.max_value,
        )
        new = self.new(k_new, value.shape)
        return jnp.where(
            r < self.mutate_rate,
            step,
            jnp.where(r < self.mutate_rate + self.replace_rate, new, value),
        )


def mutate_choice(
    key: PRNGKey, value: Int[Array, "..."], rate: float, n_options: Int[Array, ""]
) -> Int[Array, "..."]:
    """With probability ``rate``, an option drawn uniformly from ``n_options`` (neat-python's
    string attributes)."""
    k_r, k_new = jax.random.split(key)
    new = jax.random.randint(k_new, value.shape, 0, jnp.maximum(n_options, 1), value.dtype)
    return jnp.where(jax.random.uniform(k_r, value.shape) < rate, new, value)


def random_slot(key: PRNGKey, allowed: Bool[Array, " K"]) -> tuple[Int[Array, ""], Bool[Array, ""]]:
    """A uniformly chosen index where ``allowed``, and whether there was one."""
    score = jnp.where(allowed, jax.random.uniform(key, allowed.shape), -1.0)
    return jnp.argmax(score), jnp.any(allowed)


def structural_choices(
    key: PRNGKey, probs: tuple[float, float, float, float], single: bool
) -> Bool[Array, " 4"]:
    """Which of add node, delete node, add connection, delete connection a child tries: each
    with its probability, or (``single``, neat-python's ``single_structural_mutation``) at most
    one, drawn once with the probabilities divided by ``max(1, their sum)``."""
    p = jnp.asarray(probs, jnp.float32)
    if not single:
        return jax.random.uniform(key, (4,)) < p
    edges = jnp.cumsum(p) / jnp.maximum(1.0, jnp.sum(p))
    r = jax.random.uniform(key)
    pick = jnp.sum(r >= edges)  # 4: none
    return jnp.arange(4) == pick


def propose_split(
    key: PRNGKey, genome: Genome, want: Bool[Array, ""]
) -> tuple[Bool[Array, ""], Int[Array, ""]]:
    """Add node, proposed: whether (``want``, a connection to split, a free node slot and two
    free connection slots) and the innovation of the connection to split (any connection,
    enabled or not, as neat-python chooses)."""
    real = genome.innovation != NONE
    slot, some = random_slot(key, real)
    room = (jnp.sum(genome.node_id == NONE) >= 1) & (jnp.sum(~real) >= 2)
    do = want & some & room
    return do, jnp.where(do, genome.innovation[slot], NONE)


def propose_connection(
    key: PRNGKey, genome: Genome, want: Bool[Array, ""], feed_forward: bool
) -> tuple[Bool[Array, ""], Bool[Array, ""], Int[Array, ""], Int[Array, ""]]:
    """Add connection, proposed: whether, whether its pair is already joined, and its input
    and output node ids. The output is a node that is not an input, the input one that is not
    an output (neat-python's choice); a pair already joined, one that would close a cycle
    (``feed_forward``) or one with no free slot is not proposed."""
    k_out, k_in = jax.random.split(key)
    present = genome.node_id != NONE
    out_slot, _ = random_slot(k_out, present & ~is_input(genome, genome.node_id))
    in_slot, _ = random_slot(k_in, present & ~is_output(genome, genome.node_id))
    source, target = genome.node_id[in_slot], genome.node_id[out_slot]
    real = genome.innovation != NONE
    exists = jnp.any(real & (genome.conn_in == source) & (genome.conn_out == target))
    cycle = (source == target) | reaches(genome, target, source)
    do = want & ~exists & jnp.any(~real) & ~(cycle & feed_forward)
    return do, want & exists, source, target


def enable_connection(
    genome: Genome, do: Bool[Array, ""], source: Int[Array, ""], target: Int[Array, ""]
) -> Genome:
    """The connection ``source -> target`` enabled (where ``do``): neat-python's
    ``structural_mutation_surer`` when an added connection is already there."""
    hit = do & (genome.conn_in == source) & (genome.conn_out == target)
    return dataclasses.replace(genome, enabled=genome.enabled | hit)


def number_new_genes(
    split: Bool[Array, " pop"],
    split_innovation: Int[Array, " pop"],
    connect: Bool[Array, " pop"],
    source: Int[Array, " pop"],
    target: Int[Array, " pop"],
    next_node: Int[Array, ""],
    next_innovation: Int[Array, ""],
) -> tuple[
    Int[Array, " pop"], Int[Array, " pop"], Int[Array, " pop"], Int[Array, ""], Int[Array, ""]
]:
    """Numbers for the population's proposed genes: children splitting the same connection
    get the same new node id and the same two connection innovations; children adding the
    same ``source -> target`` the same innovation.

    Returns:
        ``(node_id, split_innovation_base, connect_innovation, next_node, next_innovation)``:
        per child, its new node's id, the innovation of its first new split connection (the
        second is one more) and of its new connection; then the counters after them.
    """
    split_rank, n_splits = pair_ranks(split_innovation, split_innovation, split)
    conn_rank, n_connects = pair_ranks(source, target, connect)
    node_id = jnp.where(split, next_node + split_rank, NONE)
    base = jnp.where(split, next_innovation + 2 * split_rank, NONE)
    conn_innovation = jnp.where(connect, next_innovation + 2 * n_splits + conn_rank, NONE)
    return (
        node_id,
        base,
        conn_innovation,
        next_node + n_splits,
        next_innovation + 2 * n_splits + n_connects,
    )


def pair_ranks(
    a: Int[Array, " pop"], b: Int[Array, " pop"], valid: Bool[Array, " pop"]
) -> tuple[Int[Array, " pop"], Int[Array, ""]]:
    """The rank of each valid ``(a, b)`` among the distinct valid pairs (in ``(a, b)``
    order), and their number."""
    big = jnp.iinfo(jnp.int32).max
    a, b = jnp.where(valid, a, big), jnp.where(valid, b, big)
    order = jnp.lexsort((b, a))
    sa, sb = a[order], b[order]
    first = jnp.concatenate([jnp.ones(1, bool), (sa[1:] != sa[:-1]) | (sb[1:] != sb[:-1])])
    first = first & (sa != big)
    rank_sorted = jnp.cumsum(first) - 1
    return jnp.zeros(a.shape[0], jnp.int32).at[order].set(rank_sorted), jnp.sum(
        first, dtype=jnp.int32
    )


def _put(genome: Genome, index, do: Bool[Array, ""], **values) -> dict[str, Array]:
    """Each named field of ``genome`` with ``values`` written at ``index`` where ``do``."""
    return {
        field: getattr(genome, field)
        .at[index]
        .set(jnp.where(do, value, getattr(genome, field)[index]))
        for field, value in values.items()
    }


def apply_split(
    genome: Genome,
    do: Bool[Array, ""],
    split_innovation: Int[Array, ""],
    node_id: Int[Array, ""],
    base: Int[Array, ""],
) -> Genome:
    """Add node: the split connection ``a -> b`` is disabled; a new node (bias 0, response 1,
    the first activation and aggregation) joins ``a -> new`` (weight 1) and ``new -> b`` (the
    old weight), innovations ``base`` and ``base + 1``. New ids and innovations are larger
    than the genome's (:func:`number_new_genes` draws them from the counters), so the genes
    stay sorted."""
    slot = conn_slot(genome, split_innovation)
    a, b, w = genome.conn_in[slot], genome.conn_out[slot], genome.weight[slot]
    node = jnp.argmax(genome.node_id == NONE)  # the first free slots
    conns = (jnp.sum(genome.innovation != NONE) + jnp.arange(2)).clip(0, genome.max_conns - 1)
    g = dataclasses.replace(genome, **_put(genome, slot, do, enabled=False))
    return dataclasses.replace(
        g,
        **_put(g, node, do, node_id=node_id, bias=0.0, response=1.0, activation=0, aggregation=0),
        **_put(
            g,
            conns,
            do,
            conn_in=jnp.stack([a, node_id]),
            conn_out=jnp.stack([node_id, b]),
            weight=jnp.stack([jnp.ones_like(w), w]),
            enabled=True,
            innovation=jnp.stack([base, base + 1]),
        ),
    )


def apply_connection(
    key: PRNGKey,
    genome: Genome,
    do: Bool[Array, ""],
    source: Int[Array, ""],
    target: Int[Array, ""],
    innovation: Int[Array, ""],
    weight: Attribute,
) -> Genome:
    """Add connection ``source -> target`` (enabled, a new weight) as ``innovation``."""
    free = jnp.argmax(genome.innovation == NONE)
    new = _put(
        genome,
        free,
        do,
        conn_in=source,
        conn_out=target,
        weight=weight.new(key, ()),
        enabled=True,
        innovation=innovation,
    )
    # the new number is the largest: the first empty slot keeps the order
    return dataclasses.replace(genome, **new)


def delete_node(key: PRNGKey, genome: Genome, want: Bool[Array, ""]) -> Genome:
    """Where ``want``, a random hidden node and its connections are removed."""
    ids = genome.node_id
    hidden = (ids != NONE) & ~is_input(genome, ids) & ~is_output(genome, ids)
    slot, some = random_slot(key, hidden)
    do = want & some
    gone = ids[slot]
    touching = do & ((genome.conn_in == gone) | (genome.conn_out == gone))
    g = dataclasses.replace(
        genome,
        node_id=ids.at[slot].set(jnp.where(do, NONE, gone)),
        innovation=jnp.where(touching, NONE, genome.innovation),
        conn_in=jnp.where(touching, NONE, genome.conn_in),
        conn_out=jnp.where(touching, NONE, genome.conn_out),
    )
    return compact_genes(g)


def delete_connection(key: PRNGKey, genome: Genome, want: Bool[Array, ""]) -> Genome:
    """Where ``want``, a random connection is removed."""
    slot, some = random_slot(key, genome.innovation != NONE)
    do = want & some
    g = dataclasses.replace(
        genome,
        innovation=genome.innovation.at[slot].set(jnp.where(do, NONE, genome.innovation[slot])),
        conn_in=genome.conn_in.at[slot].set(jnp.where(do, NONE, genome.conn_in[slot])),
        conn_out=genome.conn_out.at[slot].set(jnp.where(do, NONE, genome.conn_out[slot])),
    )
    return compact_genes(g)


def mutate_attributes(
    key: PRNGKey,
    genome: Genome,
    weight: Attribute,
    bias: Attribute,
    response: Attribute,
    enabled_rate: float,
    activation_rate: float,
    aggregation_rate: float,
) -> Genome:
    """Every connection's weight and enabled flag, every node's bias, response, activation and
    aggregation mutated (inputs' node attributes are never read)."""
    keys = jax.random.split(key, 6)
    k_flip, k_value = jax.random.split(keys[1])
    flip = jax.random.uniform(k_flip, genome.enabled.shape) < enabled_rate
    enabled = jnp.where(
        flip, jax.random.bernoulli(k_value, 0.5, genome.enabled.shape), genome.enabled
    )
    return dataclasses.replace(
        genome,
        weight=weight.mutate(keys[0], genome.weight),
        enabled=enabled,
        bias=bias.mutate(keys[2], genome.bias),
        response=response.mutate(keys[3], genome.response),
        activation=mutate_choice(keys[4], genome.activation, activation_rate, genome.n_activations),
        aggregation=mutate_choice(
            keys[5], genome.aggregation, aggregation_rate, genome.n_aggregations
        ),
    )
