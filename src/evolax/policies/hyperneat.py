"""HyperNEAT: a substrate network whose weights a CPPN paints (Stanley, D'Ambrosio & Gauci,
2009, "A Hypercube-Based Encoding for Evolving Large-Scale Neural Networks")."""

from __future__ import annotations

import dataclasses
import itertools
import math

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.neat.genome import Genome, minimal_genome
from evolax.neat.network import ACTIVATIONS, Network, check_options, decode, feed_forward
from evolax.policies.base import EmptyState, Policy
from evolax.types import PRNGKey
from evolax.validation import check_positive, check_positive_int


@chex.dataclass(frozen=True)
class CPPNGenome(Genome):
    """A NEAT genome (4 inputs ``x1, y1, x2, y2``, 1 output) with its substrate's input and
    output node coordinates, ``f32[I, 2]`` and ``f32[O, 2]`` (NEAT never changes them)."""

    input_coords: Float[Array, "I 2"]
    output_coords: Float[Array, "O 2"]


SUBSTRATES = ("line", "grid")
OUTPUT_ACTIVATIONS = ("tanh", "identity")


def spread(size: int) -> Float[Array, " size"]:
    """``size`` positions spread evenly over ``[-1, 1]`` (0 for one)."""
    return jnp.linspace(-1.0, 1.0, size) if size > 1 else jnp.zeros(1)


def layer_coordinates(size: int, y: float) -> Float[Array, "size 2"]:
    """``size`` substrate nodes spread over ``x`` in ``[-1, 1]`` at height ``y``."""
    return jnp.stack([spread(size), jnp.full(size, y)], axis=1)


def sheet_coordinates(shape: tuple[int, ...]) -> Float[Array, "n 2"]:
    """A sheet of ``rows x columns`` nodes over ``[-1, 1]^2``, ``(x, y) = (column, row)``
    positions in row-major order (the order of a flattened ``[rows, columns]`` array)."""
    y, x = jnp.meshgrid(spread(shape[0]), spread(shape[1]), indexing="ij")
    return jnp.stack([x.ravel(), y.ravel()], axis=1)


def output_sheet(obs_shape: tuple[int, ...], action_shape: tuple[int, ...]) -> tuple[int, int]:
    """The grid substrate's output sheet: ``action_shape`` if 2-D, or the observation's
    sheet for a flat action of as many values (a target field like the visual field)."""
    if len(obs_shape) != 2:
        raise ValueError(f"substrate='grid' needs a 2-D obs_shape (rows, columns), got {obs_shape}")
    if len(action_shape) == 2:
        return (action_shape[0], action_shape[1])
    if math.prod(action_shape) == math.prod(obs_shape):
        return (obs_shape[0], obs_shape[1])
    raise ValueError(
        f"substrate='grid' needs a 2-D action_shape, or a flat one the size of obs_shape "
        f"{obs_shape}, got {action_shape}"
    )


class HyperNEAT(Policy):
    """A layered substrate whose weight from node ``(x1, y1)`` to node ``(x2, y2)`` of the
    next layer is a CPPN's output at ``(x1, y1, x2, y2)``; the genome is the CPPN, which
    :class:`evolax.algorithms.NEAT` evolves (give it an ``activation_mutate_rate`` so the nodes'
    functions vary).

    The substrate (``substrate="line"``): the inputs at height -1, ``hidden_sizes`` layers
    evenly between, the outputs at height 1, each layer's nodes spread over ``x`` in
    ``[-1, 1]``. With ``substrate="grid"`` the observation is 2-D, and its nodes and the
    action's (:func:`output_sheet`) are two sheets over ``[-1, 1]^2`` at their pixels'
    positions (:func:`sheet_coordinates`; no hidden layers): the CPPN's ``(x1, y1)`` is a
    node of the input sheet and ``(x2, y2)`` one of the output sheet, as in the paper's
    visual discrimination task. The genome carries the input and output coordinates: set
    others there. :meth:`prepare` paints the weights once per evaluation: an output ``w``
    (clipped to ``[-1, 1]``) with ``|w| < weight_threshold`` makes no connection, any other
    ``sign(w) (|w| - weight_threshold) / (1 - weight_threshold) * max_weight`` (the paper's
    expression threshold). Substrate nodes are
    tanh units without biases; the outputs are tanh (in ``[-1, 1]``) or, with
    ``output_activation="identity"``, their weighted sums (a choice by the highest output
    then has no ties where tanh saturates). Observations are flattened; the action is a
    vector.

    Args:
        hidden_sizes: the substrate's hidden layers.
        max_nodes, max_conns: the CPPN genome's capacity.
        activation_options: the CPPN nodes' activations (the first for new nodes), names as
            :class:`~evolax.policies.NEATNetwork`'s.
        weight_threshold: in ``[0, 1)``.
        max_weight: the largest substrate weight, positive.
        substrate: ``"line"`` (default) or ``"grid"``.
        output_activation: ``"tanh"`` (default) or ``"identity"``.
    """

    hidden_sizes: tuple[int, ...] = eqx.field(static=True, default=(8,), converter=tuple)
    max_nodes: int = eqx.field(static=True, default=24)
    max_conns: int = eqx.field(static=True, default=64)
    activation_options: tuple[str, ...] = eqx.field(
        static=True, default=("tanh", "sin", "gauss", "abs", "identity"), converter=tuple
    )
    weight_threshold: float = 0.2
    max_weight: float = 3.0
    substrate: str = eqx.field(static=True, default="line")
    output_activation: str = eqx.field(static=True, default="tanh")

    def __check_init__(self):
        if self.substrate not in SUBSTRATES:
            raise ValueError(f"substrate must be one of {SUBSTRATES}, got {self.substrate!r}")
        if self.substrate == "grid" and self.hidden_sizes:
            raise ValueError(
                "hidden_sizes must be [] with substrate='grid' (the CPPN's 4 inputs hold a node "
                f"of each sheet, not a layer), got {list(self.hidden_sizes)}"
            )
        if self.output_activation not in OUTPUT_ACTIVATIONS:
            raise ValueError(
                f"output_activation must be one of {OUTPUT_ACTIVATIONS}, got "
                f"{self.output_activation!r}"
            )
        for i, size in enumerate(self.hidden_sizes):
            check_positive_int(f"hidden_sizes[{i}]", size)
        check_positive_int("max_nodes", self.max_nodes)
        check_positive_int("max_conns", self.max_conns)
        check_options("activation_options", self.activation_options, ACTIVATIONS)
        if isinstance(self.weight_threshold, int | float) and not 0 <= self.weight_threshold < 1:
            raise ValueError(f"weight_threshold must be in [0, 1), got {self.weight_threshold}")
        check_positive("max_weight", self.max_weight)

    def init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> CPPNGenome:
        """The minimal CPPN (each of its 4 inputs joined to its output) and the substrate's
        input and output coordinates."""
        del key
        cppn = minimal_genome(
            4, 1, self.max_nodes, self.max_conns, n_activations=len(self.activation_options)
        )
        if self.substrate == "grid":
            sheet = output_sheet(obs_shape, action_shape)
            inputs, outputs = sheet_coordinates(obs_shape), sheet_coordinates(sheet)
        else:
            inputs = layer_coordinates(math.prod(obs_shape), -1.0)
            outputs = layer_coordinates(math.prod(action_shape), 1.0)
        return CPPNGenome(
            **{f.name: getattr(cppn, f.name) for f in dataclasses.fields(cppn)},
            input_coords=inputs,
            output_coords=outputs,
        )

    def paint(
        self, cppn: Network, source: Float[Array, "n 2"], target: Float[Array, "m 2"]
    ) -> Float[Array, "n m"]:
        """The weights from the nodes at ``source`` to those at ``target``."""
        pairs = jnp.concatenate(
            [jnp.repeat(source, target.shape[0], axis=0), jnp.tile(target, (source.shape[0], 1))],
            axis=1,
        )
        values = jax.vmap(lambda q: feed_forward(cppn, q, self.activation_options, ("sum",)))(pairs)
        w = jnp.clip(values[:, cppn.outputs[0]], -1.0, 1.0)
        t = self.weight_threshold
        scaled = jnp.sign(w) * (jnp.abs(w) - t) / (1.0 - t) * self.max_weight
        return jnp.where(jnp.abs(w) < t, 0.0, scaled).reshape(source.shape[0], target.shape[0])

    def prepare(self, params: CPPNGenome) -> list[Float[Array, "n m"]]:
        """The substrate's weight matrices, layer to layer."""
        cppn = decode(params)
        depth = len(self.hidden_sizes) + 1
        layers = [
            params.input_coords,
            *(
                layer_coordinates(n, -1.0 + 2.0 * (k + 1) / depth)
                for k, n in enumerate(self.hidden_sizes)
            ),
            params.output_coords,
        ]
        return [self.paint(cppn, a, b) for a, b in itertools.pairwise(layers)]

    def apply(
        self,
        params: list[Float[Array, "n m"]],
        obs: Float[Array, "..."],
        state: EmptyState,
        key: PRNGKey,
    ) -> tuple[Float[Array, " O"], EmptyState]:
        del key
        x = jnp.ravel(obs)
        for w in params[:-1]:
            x = jnp.tanh(x @ w)
        x = x @ params[-1]
        return (jnp.tanh(x) if self.output_activation == "tanh" else x), state
