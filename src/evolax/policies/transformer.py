"""A small decoder-only transformer policy for sequence-to-sequence tasks."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.policies.seq2seq import SequencePolicy
from evolax.seeded import dense
from evolax.types import Params, PRNGKey
from evolax.validation import check_positive_int


def _dense(key: PRNGKey, n_in: int, n_out: int) -> Params:
    return {"w": jax.random.normal(key, (n_in, n_out)) / math.sqrt(n_in), "b": jnp.zeros(n_out)}


def _norm(x: Float[Array, "... d"], params: Params) -> Float[Array, "... d"]:
    """Layer normalisation with a learned scale and shift."""
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    lead = (1,) * (x.ndim - 1)
    scale, shift = params["scale"].reshape(*lead, -1), params["shift"].reshape(*lead, -1)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale + shift


class Transformer(SequencePolicy):
    """Causal self-attention and an MLP (pre-norm blocks), greedily decoding
    ``output_length`` tokens after a one-hot input sequence.

    The input tokens and then the tokens decoded so far are embedded (plus a learned
    position), and each block applies ``h + attention(norm(h))`` and ``h + mlp(norm(h))``
    with a causal mask. Token ``t`` is read from the position before it: the last input
    token for the first one, and each chosen token (greedy, no teacher forcing, as
    :class:`~evolax.policies.Seq2Seq`) is fed back. Every weight is used as ``x @ W``, so
    a low-rank evolution strategy's members (:class:`~evolax.seeded.LowRank`) run inside
    its forward pass.

    Parameters: ``{"embed_in": f32[vocab_in, d], "embed_out": f32[vocab_out, d],
    "position": f32[in_len + output_length, d], "blocks": [{"norm1", "qkv", "proj",
    "norm2", "up", "down"}, ...], "norm": ..., "out": {"w": f32[d, vocab_out], "b"}}``.

    Args:
        d_model: the width of the residual stream.
        n_heads: attention heads (must divide ``d_model``).
        n_layers: blocks.
        d_ff: the MLP's hidden width.
        output_length: tokens to decode; must match the task's ``action_shape[1]``.
    """

    d_model: int = eqx.field(static=True, default=64)
    n_heads: int = eqx.field(static=True, default=4)
    n_layers: int = eqx.field(static=True, default=2)
    d_ff: int = eqx.field(static=True, default=256)
    output_length: int = eqx.field(static=True, default=4)

    def __check_init__(self):
        for name in ("d_model", "n_heads", "n_layers", "d_ff", "output_length"):
            check_positive_int(name, getattr(self, name))
        if self.d_model % self.n_heads:
            raise ValueError(
                f"n_heads must divide d_model, got n_heads={self.n_heads} and "
                f"d_model={self.d_model}"
            )

    def _init(self, key, obs_shape, action_shape):
        d, length = self.d_model, obs_shape[1] + self.output_length
        keys = iter(jax.random.split(key, 4 + 4 * self.n_layers))
        norm = {"scale": jnp.ones(d), "shift": jnp.zeros(d)}
        return {
            "embed_in": jax.random.normal(next(keys), (obs_shape[2], d)),
            "embed_out": jax.random.normal(next(keys), (action_shape[2], d)),
            "position": 0.1 * jax.random.normal(next(keys), (length, d)),
            "blocks": [
                {
                    "norm1": norm,
                    "qkv": _dense(next(keys), d, 3 * d),
                    "proj": _dense(next(keys), d, d),
                    "norm2": norm,
                    "up": _dense(next(keys), d, self.d_ff),
                    "down": _dense(next(keys), self.d_ff, d),
                }
                for _ in range(self.n_layers)
            ],
            "norm": norm,
            "out": _dense(next(keys), d, action_shape[2]),
        }

    def _attention(self, block: Params, h: Float[Array, "batch len d"]) -> Array:
        batch, length, d = h.shape
        heads, width = self.n_heads, d // self.n_heads
        qkv = h @ block["qkv"]["w"] + block["qkv"]["b"][None, None]
        q, k, v = (x.reshape(batch, length, heads, width) for x in jnp.split(qkv, 3, axis=-1))
        scores = jnp.einsum("bqhw,bkhw->bhqk", q, k) / math.sqrt(width)
        causal = jnp.tril(jnp.ones((length, length), bool))[None, None]
        weights = jax.nn.softmax(jnp.where(causal, scores, -jnp.inf), axis=-1)
        mixed = jnp.einsum("bhqk,bkhw->bqhw", weights, v).reshape(batch, length, d)
        return mixed @ block["proj"]["w"] + block["proj"]["b"][None, None]

    def _logits(self, params: Params, h: Float[Array, "batch len d"]) -> Array:
        for block in params["blocks"]:
            h = h + self._attention(block, _norm(h, block["norm1"]))
            up = _norm(h, block["norm2"]) @ block["up"]["w"] + block["up"]["b"][None, None]
            up = jax.nn.gelu(up)
            h = h + up @ block["down"]["w"] + block["down"]["b"][None, None]
        return _norm(h, params["norm"]) @ params["out"]["w"] + params["out"]["b"][None, None]

    def _decode(self, params, obs):
        in_len, vocab_out = obs.shape[1], params["out"]["b"].shape[0]
        position = dense(params["position"])  # added, not multiplied: formed per member
        inputs = obs @ params["embed_in"]
        # the decoded tokens' slots, filled as they are chosen (causality hides the rest)
        slots = jnp.zeros((obs.shape[0], self.output_length, self.d_model), inputs.dtype)

        def decode(slots, t):
            h = jnp.concatenate([inputs, slots], axis=1) + position[None]
            logits = self._logits(params, h)
            logits = jax.lax.dynamic_index_in_dim(logits, in_len - 1 + t, 1, keepdims=False)
            chosen = jax.nn.one_hot(jnp.argmax(logits, axis=-1), vocab_out, dtype=logits.dtype)
            slots = jax.lax.dynamic_update_index_in_dim(
                slots, chosen @ params["embed_out"], t, axis=1
            )
            return slots, logits

        _, logits = jax.lax.scan(decode, slots, jnp.arange(self.output_length))
        return jnp.swapaxes(logits, 0, 1)
