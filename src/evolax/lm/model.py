"""A decoder-only language model as pure functions over a parameter pytree: ``init_params``
draws the weights, ``forward`` maps tokens (and a :class:`~evolax.lm.cache.KVCache`) to logits.

Every weight matrix is used as ``x @ W`` (the embedding as a row lookup, a tied head as
``x @ E.T``), so a low-rank evolution strategy's members (:class:`~evolax.seeded.LowRank`
views) run inside the forward pass with no member's matrix ever formed.

With ``config.weight_dtype == "int8"`` every matrix is an :class:`~evolax.lm.quant.Int8Matrix`
(int8 weights, a float32 scale per output channel) used the same way; float matrices given
instead are quantised on the way in (:func:`quantized`).

Parameters: ``{"embed": [vocab, d], "layers": [{"attn_norm": [d], "wq": [d, heads * hd],
"wk": [d, kv_heads * hd], "wv": [d, kv_heads * hd], "wo": [heads * hd, d], "mlp_norm": [d],
"w_gate": [d, d_ff], "w_up": [d, d_ff], "w_down": [d_ff, d]}, ...], "norm": [d]}`` and
``"head": [d, vocab]`` unless the head is tied to the embeddings.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from evolax.compiled import compiled
from evolax.lm.cache import KVCache
from evolax.lm.config import LMConfig
from evolax.lm.quant import quantize_params
from evolax.seeded import LowRank
from evolax.types import Params, PRNGKey

INIT_STD = 0.02
"""The standard deviation of the initial weights (Llama's ``initializer_range``)."""

LAYER_SHAPES = ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down")


def layer_shapes(config: LMConfig) -> dict[str, tuple[int, ...]]:
    """The shape of each leaf of one block."""
    d, q, kv, f = (
        config.d_model,
        config.n_heads * config.head_dim,
        config.n_kv_heads * config.head_dim,
        config.d_ff,
    )
    return {
        "attn_norm": (d,),
        "wq": (d, q),
        "wk": (d, kv),
        "wv": (d, kv),
        "wo": (q, d),
        "mlp_norm": (d,),
        "w_gate": (d, f),
        "w_up": (d, f),
        "w_down": (f, d),
    }


def param_shapes(config: LMConfig) -> dict[str, Any]:
    """The shape of every leaf of the parameter pytree, in its structure."""
    shapes: dict[str, Any] = {
        "embed": (config.vocab_size, config.d_model),
        "layers": [layer_shapes(config) for _ in range(config.n_layers)],
        "norm": (config.d_model,),
    }
    if not config.tie_embeddings:
        shapes["head"] = (config.d_model, config.vocab_size)
    return shapes


def quantized(config: LMConfig, params: Params) -> Params:
    """``params`` as the forward pass of ``config`` reads them: with int8 weights, every float
    matrix (and a :class:`LowRank` view's shared matrix) quantised per output channel
    (:func:`~evolax.lm.quant.quantize_params`); else unchanged."""
    return quantize_params(params, config.jnp_dtype) if config.int8 else params


@compiled
def init_params(config: LMConfig, key: PRNGKey) -> Params:
    """Weights ``N(0, 0.02^2)`` and norm scales 1, in ``config.dtype`` (with int8 weights,
    the matrices drawn in float32 and quantised); one program, compiled once per
    configuration when called eagerly."""
    is_shape = lambda x: isinstance(x, tuple)  # noqa: E731
    pairs, treedef = jax.tree_util.tree_flatten_with_path(param_shapes(config), is_leaf=is_shape)
    keys = jax.random.split(key, len(pairs))
    dtype = config.jnp_dtype
    draw = jnp.float32 if config.int8 else dtype
    values = [
        jnp.ones(shape, dtype)
        if "norm" in jax.tree_util.keystr(path)
        else (INIT_STD * jax.random.normal(k, shape)).astype(draw)
        for (path, shape), k in zip(pairs, keys, strict=True)
    ]
    return quantized(config, jax.tree.unflatten(treedef, values))


def rms_norm(x: Float[Array, "... d"], scale: Float[Array, " d"], eps: float) -> Array:
    """``x / sqrt(mean(x^2) + eps) * scale``, computed in float32, returned in ``x``'s dtype."""
    x32 = x.astype(jnp.float32)
    normed = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + eps)
    return normed.astype(x.dtype) * scale.reshape((1,) * (x.ndim - 1) + (-1,))


def rotary(x: Float[Array, "len heads hd"], positions: Int[Array, " len"], theta: float) -> Array:
    """Rotary position embedding (Su et al., 2021) in the half-split convention of Llama's
    reference code: dimensions ``j`` and ``j + hd/2`` rotate by ``position * theta^(-2j/hd)``."""
    half = x.shape[-1] // 2
    inv_freq = 1.0 / theta ** (jnp.arange(half, dtype=jnp.float32) / half)
    angle = positions.astype(jnp.float32)[:, None] * inv_freq[None]  # [len, half]
    cos, sin = jnp.cos(angle)[:, None], jnp.sin(angle)[:, None]
    x32 = x.astype(jnp.float32)
    first, second = x32[..., :half], x32[..., half:]
    rotated = jnp.concatenate([first * cos - second * sin, second * cos + first * sin], -1)
    return rotated.astype(x.dtype)


def embed(params: Params, tokens: Int[Array, " len"]) -> Float[Array, "len d"]:
    """The tokens' embedding rows (a :class:`LowRank` view's rows without forming it)."""
    table = params["embed"]
    return table.rows(tokens) if isinstance(table, LowRank) else table[tokens]


def head(params: Params, h: Float[Array, "len d"]) -> Float[Array, "len vocab"]:
    """The output logits ``h @ head`` (``h @ embed.T`` when tied), in float32."""
    if "head" in params:
        logits = h @ params["head"]
    elif isinstance(params["embed"], LowRank):
        logits = params["embed"].matmul_transposed(h)
    else:
        logits = h @ params["embed"].T
    return logits.astype(jnp.float32)


def attention(
    q: Float[Array, "len heads hd"],
    k: Float[Array, "keys kv_heads hd"],
    v: Float[Array, "keys kv_heads hd"],
    mask: Bool[Array, "len keys"],
) -> Float[Array, "len dq"]:
    """Grouped-query attention: query head ``h`` reads key/value head ``h // (heads //
    kv_heads)``; softmax in float32 over the keys ``mask`` allows."""
    length, heads, hd = q.shape
    kv_heads = k.shape[1]
    grouped = q.reshape(length, kv_heads, heads // kv_heads, hd)
    scores = jnp.einsum("tkgd,skd->kgts", grouped, k, preferred_element_type=jnp.float32)
    scores = jnp.where(mask[None, None], scores / jnp.sqrt(hd).astype(jnp.float32), -jnp.inf)
    weights = jax.nn.softmax(scores, axis=-1).astype(v.dtype)
    out = jnp.einsum("kgts,skd->tkgd", weights, v)
    return out.reshape(length, heads * hd)


@compiled
def forward(
    config: LMConfig,
    params: Params,
    tokens: Int[Array, " len"],
    cache: KVCache | None = None,
    start: int | Int[Array, ""] = 0,
    valid: Bool[Array, " len"] | None = None,
) -> tuple[Float[Array, "len vocab"], KVCache | None]:
    """The next-token logits (float32) of ``tokens`` at positions ``start .. start + len - 1``.

    Without a ``cache``, the tokens attend causally to each other only (``start`` then only
    offsets the rotary positions). With one, their keys and values are written at those
    positions and they attend to every valid position up to their own: the cache returned
    holds them too. ``valid`` marks real tokens (``False``: padding, never attended to by
    another position); all are real by default.
    """
    params = quantized(config, params)
    length = tokens.shape[0]
    if valid is None:
        valid = jnp.ones(length, bool)
    positions = start + jnp.arange(length)
    h = embed(params, tokens)
    if cache is None:
        key_pos, key_valid = positions, valid
    else:
        key_pos = jnp.arange(config.max_len)
        key_valid = jax.lax.dynamic_update_slice(cache.valid, valid, (start,))
    own = key_pos[None] == positions[:, None]
    mask = ((key_pos[None] <= positions[:, None]) & key_valid[None]) | own
    heads, kv_heads, hd = config.n_heads, config.n_kv_heads, config.head_dim
    new_k, new_v = [], []
    for i, layer in enumerate(params["layers"]):
        x = rms_norm(h, layer["attn_norm"], config.norm_eps)
        q = rotary((x @ layer["wq"]).reshape(length, heads, hd), positions, config.rope_theta)
        k = rotary((x @ layer["wk"]).reshape(length, kv_heads, hd), positions, config.rope_theta)
        v = (x @ layer["wv"]).reshape(length, kv_heads, hd)
        if cache is not None:
            k = jax.lax.dynamic_update_slice(cache.k[i], k.astype(cache.k.dtype), (start, 0, 0))
            v = jax.lax.dynamic_update_slice(cache.v[i], v.astype(cache.v.dtype), (start, 0, 0))
            new_k.append(k)
            new_v.append(v)
        h = h + attention(q, k.astype(q.dtype), v.astype(q.dtype), mask) @ layer["wo"]
        x = rms_norm(h, layer["mlp_norm"], config.norm_eps)
        h = h + (jax.nn.silu(x @ layer["w_gate"]) * (x @ layer["w_up"])) @ layer["w_down"]
    logits = head(params, rms_norm(h, params["norm"], config.norm_eps))
    if cache is None:
        return logits, None
    return logits, KVCache(k=jnp.stack(new_k), v=jnp.stack(new_v), valid=key_valid)
