"""Autoregressive decoding: a prompt in, ``n_new`` tokens out, greedy or sampled at a
temperature, with the KV cache (one position per step) or without it (the whole sequence
recomputed each step: the reference the cache is checked against)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from evolax.compiled import compiled
from evolax.lm.cache import empty_cache
from evolax.lm.config import LMConfig
from evolax.lm.model import forward, quantized
from evolax.types import Params, PRNGKey


def pick(
    logits: Float[Array, " vocab"], key: PRNGKey, temperature: float | Float[Array, ""]
) -> Int[Array, ""]:
    """The next token: the most likely at ``temperature == 0``, else a draw from
    ``softmax(logits / temperature)``."""
    greedy = jnp.argmax(logits).astype(jnp.int32)
    if isinstance(temperature, int | float) and temperature == 0:
        return greedy
    scaled = logits / jnp.maximum(jnp.asarray(temperature, logits.dtype), 1e-6)
    drawn = jax.random.categorical(key, scaled).astype(jnp.int32)
    return jnp.where(temperature > 0, drawn, greedy)


def check_lengths(config: LMConfig, prompt_len: int, n_new: int) -> None:
    """Raise one line unless ``prompt_len + n_new`` fits ``config.max_len``."""
    if n_new < 1:
        raise ValueError(f"n_new must be at least 1, got {n_new}")
    if prompt_len + n_new > config.max_len:
        raise ValueError(
            f"a prompt of {prompt_len} tokens and {n_new} new ones exceed max_len={config.max_len}"
        )


@compiled
def generate(
    config: LMConfig,
    params: Params,
    prompt: Int[Array, " prompt"],
    n_new: int,
    key: PRNGKey,
    temperature: float | Float[Array, ""] = 0.0,
    valid: Bool[Array, " prompt"] | None = None,
    cache: bool = True,
) -> Int[Array, " n_new"]:
    """``n_new`` tokens after ``prompt`` (``valid``: its real tokens, ``False`` for left
    padding, never attended to). With ``cache`` the prompt is read once and each step runs one
    position against the KV cache; without, each step reruns the whole sequence."""
    prompt_len = prompt.shape[0]
    check_lengths(config, prompt_len, n_new)
    params = quantized(config, params)  # once, not at every step
    keys = jax.random.split(key, n_new)
    if valid is None:
        valid = jnp.ones(prompt_len, bool)
    if not cache:
        return _generate_uncached(config, params, prompt, valid, n_new, keys, temperature)
    logits, kv = forward(config, params, prompt, empty_cache(config), 0, valid)
    first = pick(logits[-1], keys[0], temperature)

    def step(carry, inputs):
        token, kv = carry
        position, step_key = inputs
        logits, kv = forward(config, params, token[None], kv, position)
        nxt = pick(logits[0], step_key, temperature)
        return (nxt, kv), token

    positions = prompt_len + jnp.arange(n_new - 1)
    (last, _), tokens = jax.lax.scan(step, (first, kv), (positions, keys[1:]))
    return jnp.concatenate([tokens, last[None]])


def _generate_uncached(config, params, prompt, valid, n_new, keys, temperature):
    prompt_len = prompt.shape[0]
    buffer = jnp.concatenate([prompt, jnp.zeros(n_new, prompt.dtype)])
    mask = jnp.concatenate([valid, jnp.zeros(n_new, bool)])

    def step(carry, inputs):
        buffer, mask = carry
        t, step_key = inputs
        logits, _ = forward(config, params, buffer, None, 0, mask)
        token = pick(logits[prompt_len - 1 + t], step_key, temperature)
        buffer = buffer.at[prompt_len + t].set(token)
        return (buffer, mask.at[prompt_len + t].set(True)), token

    _, tokens = jax.lax.scan(step, (buffer, mask), (jnp.arange(n_new), keys))
    return tokens
