"""Decoder-only language models as pure JAX functions: the model (:mod:`~evolax.lm.model`), its
KV cache, decoding (:mod:`~evolax.lm.decode`), a byte-level tokenizer and weights in and out of
``safetensors`` in ``transformers``' layout (:mod:`~evolax.lm.weights`)."""

from evolax.lm.cache import KVCache, empty_cache
from evolax.lm.config import LMConfig
from evolax.lm.model import forward, init_params, param_shapes
from evolax.lm.weights import load_pretrained, save_pretrained

__all__ = [
    "KVCache",
    "LMConfig",
    "empty_cache",
    "forward",
    "init_params",
    "load_pretrained",
    "param_shapes",
    "save_pretrained",
]
