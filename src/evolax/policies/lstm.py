"""A long short-term memory cell (Hochreiter & Schmidhuber, 1997), as pure functions."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.types import Params, PRNGKey

LSTMCarry = tuple[Float[Array, "... hidden"], Float[Array, "... hidden"]]
"""``(h, c)``: the cell's output and its memory."""


def lstm_init(key: PRNGKey, n_in: int, hidden: int) -> Params:
    """Parameters ``{"wx": f32[n_in, 4 hidden], "wh": f32[hidden, 4 hidden], "b": f32[4 hidden]}``.

    The four gate blocks are ordered input, forget, cell, output. Weights are LeCun-normal
    (``N(0, 1 / fan_in)``), biases zero. (flax's ``LSTMCell`` makes the recurrent blocks
    orthogonal; that needs a QR decomposition, which XLA's CPU backend takes over a second
    per 128 x 128 block to compute, and the recurrent blocks drawn here have spectral radius
    about 1 too.)
    """
    input_key, hidden_key = jax.random.split(key)
    return {
        "wx": jax.random.normal(input_key, (n_in, 4 * hidden)) / math.sqrt(n_in),
        "wh": jax.random.normal(hidden_key, (hidden, 4 * hidden)) / math.sqrt(hidden),
        "b": jnp.zeros(4 * hidden),
    }


def lstm_zero_carry(batch: int, hidden: int) -> LSTMCarry:
    """The all-zero ``(h, c)`` of a batch."""
    return jnp.zeros((batch, hidden)), jnp.zeros((batch, hidden))


def lstm_step(params: Params, carry: LSTMCarry, x: Float[Array, "batch n_in"]) -> LSTMCarry:
    """One step: ``c' = f * c + i * g`` and ``h' = o * tanh(c')`` from input ``x``."""
    h, c = carry
    z = x @ params["wx"] + h @ params["wh"] + params["b"][None, :]
    i, f, g, o = jnp.split(z, 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    return jax.nn.sigmoid(o) * jnp.tanh(c), c
