"""Multi-layer perceptron policy."""

from __future__ import annotations

import math
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.policies.base import EmptyState, Policy
from evolax.types import Params, PRNGKey
from evolax.validation import check_positive_int

OUTPUT_ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "tanh": jnp.tanh,
    "softmax": jax.nn.softmax,
    "log_softmax": jax.nn.log_softmax,
    "sigmoid": jax.nn.sigmoid,
    "linear": lambda x: x,
}


class MLP(Policy):
    """Dense layers with tanh hidden activations (EvoJAX's ``MLPPolicy``).

    Parameters are a list of ``{"w": f32[in, out], "b": f32[out]}`` dicts, initialised
    LeCun-normal with zero biases. Observations are flattened; the output is a vector of
    ``prod(action_shape)`` values.

    Args:
        hidden_sizes: widths of the hidden layers, e.g. ``(64, 64)``; ``()`` (``[]``) has none:
            a linear policy, ``output_activation(W obs + b)``.
        output_activation: one of ``tanh``, ``softmax``, ``log_softmax``, ``sigmoid``, ``linear``.
    """

    hidden_sizes: tuple[int, ...] = eqx.field(static=True, default=(64, 64), converter=tuple)
    output_activation: str = eqx.field(static=True, default="tanh")

    def __check_init__(self):
        for i, width in enumerate(self.hidden_sizes):
            check_positive_int(f"hidden_sizes[{i}]", width)
        if self.output_activation not in OUTPUT_ACTIVATIONS:
            raise ValueError(
                f"output_activation must be one of {sorted(OUTPUT_ACTIVATIONS)}, "
                f"got {self.output_activation!r}"
            )

    def init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> Params:
        sizes = (math.prod(obs_shape), *self.hidden_sizes, math.prod(action_shape))
        keys = jax.random.split(key, len(sizes) - 1)
        return [
            {
                "w": jax.random.normal(k, (n_in, n_out)) / math.sqrt(n_in),
                "b": jnp.zeros(n_out),
            }
            for k, n_in, n_out in zip(keys, sizes[:-1], sizes[1:], strict=True)
        ]

    def apply(
        self, params: Params, obs: Float[Array, "..."], state: EmptyState, key: PRNGKey
    ) -> tuple[Float[Array, "..."], EmptyState]:
        del key
        x = jnp.ravel(obs)
        for layer in params[:-1]:
            x = jnp.tanh(x @ layer["w"] + layer["b"])
        out = x @ params[-1]["w"] + params[-1]["b"]
        return OUTPUT_ACTIVATIONS[self.output_activation](out), state
