"""A NEAT genome as a network: its weight matrix over node slots, evaluated feed-forward (in
topological order) or recurrently (a fixed number of activation steps)."""

from __future__ import annotations

from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from evolax.neat.genome import NONE, Genome, is_input, node_slot

# neat-python's activations (its sigmoid and tanh are steepened: sigmoid(5z), tanh(2.5z))
ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "sigmoid": lambda z: jax.nn.sigmoid(jnp.clip(5.0 * z, -60.0, 60.0)),
    "tanh": lambda z: jnp.tanh(jnp.clip(2.5 * z, -60.0, 60.0)),
    "relu": jax.nn.relu,
    "identity": lambda z: z,
    "sin": lambda z: jnp.sin(jnp.clip(5.0 * z, -60.0, 60.0)),
    "gauss": lambda z: jnp.exp(-5.0 * jnp.clip(z, -3.4, 3.4) ** 2),
    "abs": jnp.abs,
    "clamped": lambda z: jnp.clip(z, -1.0, 1.0),
    "square": jnp.square,
    "exp": lambda z: jnp.exp(jnp.clip(z, -60.0, 60.0)),
    "softplus": lambda z: 0.2 * jax.nn.softplus(jnp.clip(5.0 * z, -60.0, 60.0)),
}

AGGREGATIONS = ("sum", "product", "max", "min", "maxabs", "mean")
"""The aggregations a node may use (over its enabled incoming ``w_i x_i``; none: 0)."""


def check_options(name: str, options: tuple[str, ...], known) -> None:
    """Raise unless ``options`` (a policy's ``name`` field) is a non-empty list of ``known``
    names (:data:`ACTIVATIONS`, :data:`AGGREGATIONS`)."""
    unknown = [option for option in options if option not in known]
    if not options or unknown:
        raise ValueError(
            f"{name} must be a non-empty list of names from {list(known)}, got {list(options)}"
        )


@chex.dataclass(frozen=True)
class Network:
    """A genome decoded for evaluation: ``N`` node slots.

    Attributes:
        weight: ``f32[N, N]``, ``weight[i, j]``: the enabled connection from slot ``i`` to
            slot ``j`` (0 where there is none).
        linked: ``bool[N, N]``, where a connection is.
        depth: ``i32[N]``, a node's longest path from a node without inputs (feed-forward:
            nodes of one depth are evaluated together; -1 for empty slots).
        bias, response: ``f32[N]``.
        activation, aggregation: ``i32[N]``, indices into the policy's option lists.
        is_input: ``bool[N]``.
        input_index: ``i32[N]``, the observation entry an input slot reads.
        outputs: ``i32[O]``, the output nodes' slots.
    """

    weight: Float[Array, "N N"]
    linked: Bool[Array, "N N"]
    depth: Int[Array, " N"]
    bias: Float[Array, " N"]
    response: Float[Array, " N"]
    activation: Int[Array, " N"]
    aggregation: Int[Array, " N"]
    is_input: Bool[Array, " N"]
    input_index: Int[Array, " N"]
    outputs: Int[Array, " O"]


def decode(genome: Genome) -> Network:
    """The genome's :class:`Network` (disabled connections left out)."""
    n = genome.max_nodes
    active = genome.enabled & (genome.innovation != NONE)
    src, dst = node_slot(genome, genome.conn_in), node_slot(genome, genome.conn_out)
    weight = (
        jnp.zeros((n, n), genome.weight.dtype)
        .at[src, dst]
        .add(jnp.where(active, genome.weight, 0.0))
    )
    linked = jnp.zeros((n, n), bool).at[src, dst].max(active)
    present = genome.node_id != NONE

    def deeper(carry):
        depth, _ = carry
        reach = jnp.max(jnp.where(linked, depth[:, None] + 1, 0), axis=0)
        new = jnp.where(present, jnp.maximum(depth, reach), -1)
        # a cycle (a recurrent genome) would deepen forever: stop at n
        return new, jnp.any(new != depth) & (jnp.max(new) < n)

    depth, _ = jax.lax.while_loop(
        lambda c: c[1], deeper, (jnp.where(present, 0, -1), jnp.asarray(True))
    )
    inputs = present & is_input(genome, genome.node_id)
    return Network(
        weight=weight,
        linked=linked,
        depth=depth,
        bias=genome.bias,
        response=genome.response,
        activation=genome.activation,
        aggregation=genome.aggregation,
        is_input=inputs,
        input_index=jnp.where(inputs, genome.node_id, 0),
        outputs=node_slot(genome, genome.output_ids),
    )


def node_inputs(
    net: Network, values: Float[Array, " N"], aggregations: tuple[str, ...]
) -> Float[Array, " N"]:
    """Every node's aggregated input ``agg_j(w_ij x_i)``, computing only ``aggregations``
    (the policy's options; the node's index picks one)."""
    if aggregations == ("sum",):
        return values @ net.weight
    terms = values[:, None] * net.weight
    count = jnp.sum(net.linked, axis=0)
    some = count > 0
    out = {
        "sum": lambda: values @ net.weight,
        "product": lambda: jnp.where(some, jnp.prod(jnp.where(net.linked, terms, 1.0), 0), 0.0),
        "max": lambda: jnp.where(some, jnp.max(jnp.where(net.linked, terms, -jnp.inf), 0), 0.0),
        "min": lambda: jnp.where(some, jnp.min(jnp.where(net.linked, terms, jnp.inf), 0), 0.0),
        "maxabs": lambda: (
            jnp.take_along_axis(
                terms, jnp.argmax(jnp.where(net.linked, jnp.abs(terms), -1.0), 0)[None], 0
            )[0]
            * some
        ),
        "mean": lambda: (values @ net.weight) / jnp.maximum(count, 1),
    }
    computed = jnp.stack([out[name]() for name in aggregations])
    return jnp.take_along_axis(computed, net.aggregation[None].clip(0, len(aggregations) - 1), 0)[0]


def activate(
    net: Network, total: Float[Array, " N"], activations: tuple[str, ...]
) -> Float[Array, " N"]:
    """``act(bias + response * total)`` per node, ``act`` picked from ``activations``."""
    z = net.bias + net.response * total
    if len(activations) == 1:
        return ACTIVATIONS[activations[0]](z)
    outs = jnp.stack([ACTIVATIONS[name](z) for name in activations])
    return jnp.take_along_axis(outs, net.activation[None].clip(0, len(activations) - 1), 0)[0]


def feed_forward(
    net: Network,
    obs: Float[Array, " I"],
    activations: tuple[str, ...],
    aggregations: tuple[str, ...],
) -> Float[Array, " N"]:
    """Every node's value for the inputs ``obs``, nodes evaluated depth by depth (a node's
    inputs are all shallower)."""
    inputs = jnp.where(net.is_input, obs[net.input_index], 0.0)

    def level(carry):
        values, d = carry
        new = activate(net, node_inputs(net, values, aggregations), activations)
        values = jnp.where((net.depth == d) & ~net.is_input, new, values)
        return values, d + 1

    values, _ = jax.lax.while_loop(
        lambda c: c[1] <= jnp.max(net.depth), level, (inputs, jnp.zeros([], jnp.int32))
    )
    return values


def recurrent_step(
    net: Network,
    values: Float[Array, " N"],
    obs: Float[Array, " I"],
    activations: tuple[str, ...],
    aggregations: tuple[str, ...],
) -> Float[Array, " N"]:
    """One activation step of a recurrent network: every node at once from the previous
    values (neat-python's ``RecurrentNetwork.activate``). As there, a node without enabled
    incoming connections stays 0 (a feed-forward network gives it ``act(bias)``, as
    neat-python's ``FeedForwardNetwork`` does)."""
    values = jnp.where(net.is_input, obs[net.input_index], values)
    new = activate(net, node_inputs(net, values, aggregations), activations)
    return jnp.where(net.is_input, values, jnp.where(jnp.any(net.linked, axis=0), new, 0.0))
