"""The key/value cache of a decoding language model: every layer's keys and values of the
positions read so far, so that each new token attends to them without recomputing them."""

from __future__ import annotations

import chex
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from evolax.lm.config import LMConfig


@chex.dataclass(frozen=True)
class KVCache:
    """Keys and values of ``max_len`` positions.

    Attributes:
        k: ``[n_layers, max_len, n_kv_heads, head_dim]`` (rotary positions applied).
        v: ``[n_layers, max_len, n_kv_heads, head_dim]``.
        valid: ``bool[max_len]``: positions written with a real token (not padding, not yet
            read); only those are attended to.
    """

    k: Float[Array, "layers len kv_heads head_dim"]
    v: Float[Array, "layers len kv_heads head_dim"]
    valid: Bool[Array, " len"]


def empty_cache(config: LMConfig) -> KVCache:
    """An empty cache for ``config`` (nothing valid), in its dtype."""
    shape = (config.n_layers, config.max_len, config.n_kv_heads, config.head_dim)
    zeros = jnp.zeros(shape, config.jnp_dtype)
    return KVCache(k=zeros, v=zeros, valid=jnp.zeros(config.max_len, bool))
