"""NEAT networks as a policy: a genome of nodes and connections, evaluated feed-forward or
recurrently (Stanley & Miikkulainen, 2002)."""

from __future__ import annotations

import math

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.neat.export import to_dict
from evolax.neat.genome import Genome, minimal_genome
from evolax.neat.network import (
    ACTIVATIONS,
    AGGREGATIONS,
    Network,
    check_options,
    decode,
    feed_forward,
    recurrent_step,
)
from evolax.policies.base import EmptyState, Policy
from evolax.types import PRNGKey
from evolax.validation import check_non_negative_int, check_positive_int


class NEATNetwork(Policy):
    """The network a NEAT genome (:class:`evolax.neat.Genome`) describes; pair it with
    :class:`evolax.algorithms.NEAT`.

    The genome holds up to ``max_nodes`` nodes (inputs included) and ``max_conns``
    connections. :meth:`prepare` decodes it once per evaluation into a weight matrix over its
    node slots and each node's depth; a step then evaluates the nodes depth by depth
    (``recurrent=False``: connections never form a cycle) or runs ``activation_steps`` steps
    of every node at once from the previous values, kept between environment steps
    (``recurrent=True``, neat-python's ``RecurrentNetwork``). A node computes
    ``act(bias + response * agg(w_i x_i))`` over its enabled incoming connections. The action
    is the output nodes' values. Observations are flattened.

    Args:
        max_nodes: node capacity of a genome, inputs and outputs included.
        max_conns: connection capacity.
        recurrent: allow cycles and keep node values between steps.
        activation_steps: activation steps per environment step (recurrent only).
        activation_options: the activations a node may have; new nodes take the first. Names
            from ``sigmoid`` (neat-python's, ``1 / (1 + exp(-5 z))``), ``tanh`` (``tanh(2.5
            z)``), ``relu``, ``identity``, ``sin``, ``gauss``, ``abs``, ``clamped``, ``square``,
            ``exp``, ``softplus``.
        aggregation_options: likewise, from ``sum``, ``product``, ``max``, ``min``,
            ``maxabs``, ``mean`` (each one computed costs a pass over the weight matrix).
        initial_connection: ``"full"``: every input joined to every output, or, with
            ``n_hidden``, to every hidden node and each of those to every output
            (neat-python's ``full_nodirect``); when ``recurrent``, each output and hidden
            node also joined to itself, as neat-python starts a recurrent genome. ``"none"``.
        n_hidden: hidden nodes of the start genome (neat-python's ``num_hidden``), ``>= 0``.
    """

    max_nodes: int = eqx.field(static=True, default=32)
    max_conns: int = eqx.field(static=True, default=128)
    recurrent: bool = eqx.field(static=True, default=False)
    activation_steps: int = eqx.field(static=True, default=1)
    activation_options: tuple[str, ...] = eqx.field(
        static=True, default=("sigmoid",), converter=tuple
    )
    aggregation_options: tuple[str, ...] = eqx.field(static=True, default=("sum",), converter=tuple)
    initial_connection: str = eqx.field(static=True, default="full")
    n_hidden: int = eqx.field(static=True, default=0)

    def __check_init__(self):
        check_positive_int("max_nodes", self.max_nodes)
        check_positive_int("max_conns", self.max_conns)
        check_positive_int("activation_steps", self.activation_steps)
        check_non_negative_int("n_hidden", self.n_hidden)
        check_options("activation_options", self.activation_options, ACTIVATIONS)
        check_options("aggregation_options", self.aggregation_options, AGGREGATIONS)
        if self.initial_connection not in ("full", "none"):
            raise ValueError(
                f"initial_connection must be 'full' or 'none', got {self.initial_connection!r}"
            )

    def init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> Genome:
        """The minimal genome (weights and biases zero: :class:`~evolax.algorithms.NEAT`
        draws its population's)."""
        del key
        return minimal_genome(
            math.prod(obs_shape),
            math.prod(action_shape),
            self.max_nodes,
            self.max_conns,
            connected=self.initial_connection == "full",
            self_loops=self.recurrent,
            n_activations=len(self.activation_options),
            n_aggregations=len(self.aggregation_options),
            n_hidden=self.n_hidden,
        )

    def export(self, genome: Genome) -> dict:
        """One genome as plain Python (:func:`evolax.neat.export.to_dict`, option indices as
        names); :func:`~evolax.neat.export.to_python` and :func:`~evolax.neat.export.to_sympy`
        turn it into source code or expressions."""
        return to_dict(genome, self.activation_options, self.aggregation_options)

    def reset(self, key: PRNGKey):
        del key
        if self.recurrent:
            return jnp.zeros(self.max_nodes)
        return EmptyState()

    def prepare(self, params: Genome) -> Network:
        return decode(params)

    def apply(
        self, params: Network, obs: Float[Array, "..."], state, key: PRNGKey
    ) -> tuple[Float[Array, " O"], Float[Array, " N"] | EmptyState]:
        del key
        obs = jnp.ravel(obs)
        if self.recurrent:
            values = state
            for _ in range(self.activation_steps):
                values = recurrent_step(
                    params, values, obs, self.activation_options, self.aggregation_options
                )
            state = values
        else:
            values = feed_forward(params, obs, self.activation_options, self.aggregation_options)
        return values[params.outputs], state
