"""The shape of a decoder-only language model (Llama's architecture), and its translation to and
from the ``config.json`` that ``transformers`` writes."""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax.numpy as jnp

from evolax.validation import check_positive, check_positive_int

DTYPES = ("float32", "bfloat16")
WEIGHT_DTYPES = (None, "int8")
QUANT_METHOD = "evolax_int8"
"""``quantization_config.quant_method`` of a checkpoint with int8 weights (``config.json``)."""


class LMConfig(eqx.Module):
    """A decoder-only transformer: token embeddings, rotary positions, pre-norm blocks of
    RMSNorm, grouped-query attention and a gated (SwiGLU) MLP, a final RMSNorm and an output
    head, tied to the embeddings or separate (Llama's layout, Touvron et al., 2023).

    Args:
        vocab_size: tokens in the vocabulary.
        d_model: the residual stream's width.
        n_layers: blocks.
        n_heads: query heads; must divide ``d_model``.
        n_kv_heads: key/value heads (grouped-query attention), dividing ``n_heads``;
            ``None``: ``n_heads``.
        d_ff: the MLP's hidden width.
        max_len: the longest sequence (prompt and completion) the KV cache holds.
        rope_theta: the rotary embedding's base.
        norm_eps: RMSNorm's epsilon.
        tie_embeddings: the output head is the embedding matrix (no separate head).
        dtype: the weights' and activations' dtype, ``"float32"`` or ``"bfloat16"`` (norms,
            softmax and logits are computed in float32 either way).
        weight_dtype: ``None`` (the weights in ``dtype``) or ``"int8"``: every matrix stored
            as int8 with a float32 scale per output channel (symmetric absmax,
            :mod:`evolax.lm.quant`), the activations and norm scales in ``dtype``.
    """

    vocab_size: int = eqx.field(static=True, default=256)
    d_model: int = eqx.field(static=True, default=128)
    n_layers: int = eqx.field(static=True, default=4)
    n_heads: int = eqx.field(static=True, default=4)
    n_kv_heads: int = eqx.field(static=True, default=None)
    d_ff: int = eqx.field(static=True, default=384)
    max_len: int = eqx.field(static=True, default=128)
    rope_theta: float = eqx.field(static=True, default=10000.0)
    norm_eps: float = eqx.field(static=True, default=1e-6)
    tie_embeddings: bool = eqx.field(static=True, default=False)
    dtype: str = eqx.field(static=True, default="float32")
    weight_dtype: str | None = eqx.field(static=True, default=None)

    def __post_init__(self):
        if self.n_kv_heads is None:
            self.n_kv_heads = self.n_heads

    def __check_init__(self):
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "d_ff"):
            check_positive_int(name, getattr(self, name))
        check_positive_int("max_len", self.max_len)
        check_positive("rope_theta", self.rope_theta)
        check_positive("norm_eps", self.norm_eps)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"n_heads must divide d_model, got n_heads={self.n_heads}, d_model={self.d_model}"
            )
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_kv_heads must divide n_heads, got n_kv_heads={self.n_kv_heads}, "
                f"n_heads={self.n_heads}"
            )
        if (self.d_model // self.n_heads) % 2:
            raise ValueError(
                f"d_model // n_heads must be even for rotary positions, got "
                f"{self.d_model // self.n_heads}"
            )
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {list(DTYPES)}, got {self.dtype!r}")
        if self.weight_dtype not in WEIGHT_DTYPES:
            raise ValueError(
                "weight_dtype must be None (the weights in dtype) or 'int8', got "
                f"{self.weight_dtype!r}"
            )

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def jnp_dtype(self) -> jnp.dtype:
        return jnp.dtype(self.dtype)

    @property
    def int8(self) -> bool:
        """Whether the matrices are held as int8 with per-channel scales."""
        return self.weight_dtype == "int8"

    def n_params(self) -> int:
        """The number of parameters."""
        d, kv = self.d_model, self.n_kv_heads * self.head_dim
        block = 2 * d + 2 * d * d + 2 * d * kv + 3 * d * self.d_ff
        head = 0 if self.tie_embeddings else d * self.vocab_size
        return self.vocab_size * d + self.n_layers * block + d + head

    def to_hf(self) -> dict[str, Any]:
        """The ``config.json`` of ``transformers``' ``LlamaForCausalLM`` for this model (with
        int8 weights, a ``quantization_config`` that ``transformers`` refuses to load)."""
        quantization = (
            {"quantization_config": {"quant_method": QUANT_METHOD, "bits": 8, "scale": "channel"}}
            if self.int8
            else {}
        )
        return {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "vocab_size": self.vocab_size,
            "hidden_size": self.d_model,
            "intermediate_size": self.d_ff,
            "num_hidden_layers": self.n_layers,
            "num_attention_heads": self.n_heads,
            "num_key_value_heads": self.n_kv_heads,
            "max_position_embeddings": self.max_len,
            "rope_theta": self.rope_theta,
            "rms_norm_eps": self.norm_eps,
            "tie_word_embeddings": self.tie_embeddings,
            "hidden_act": "silu",
            "attention_bias": False,
            "mlp_bias": False,
            "torch_dtype": self.dtype,
            **quantization,
        }

    @classmethod
    def from_hf(cls, hf: dict[str, Any], **overrides: Any) -> LMConfig:
        """The model a ``transformers`` Llama ``config.json`` describes (``overrides``: fields
        to set otherwise, ``max_len``, ``dtype`` or ``weight_dtype`` say; a
        ``quantization_config`` of evolax's int8 weights sets ``weight_dtype="int8"``).
        Raises one line for another architecture or an option this model does not
        implement."""
        kind = hf.get("model_type")
        if kind not in ("llama", "mistral", "qwen2") and kind is not None:
            raise ValueError(
                f"config.json: model_type {kind!r} is not a Llama-style decoder "
                "(llama, mistral, qwen2 without biases)"
            )
        for option, plain in (("attention_bias", False), ("mlp_bias", False)):
            if hf.get(option, plain) != plain:
                raise ValueError(f"config.json: {option}={hf[option]!r} is not supported")
        if hf.get("hidden_act", "silu") != "silu":
            raise ValueError(f"config.json: hidden_act {hf['hidden_act']!r}, expected 'silu'")
        if hf.get("rope_scaling") not in (None, {}):
            raise ValueError(f"config.json: rope_scaling {hf['rope_scaling']!r} is not supported")
        method = (hf.get("quantization_config") or {}).get("quant_method")
        if method not in (None, QUANT_METHOD):
            raise ValueError(f"config.json: quantization {method!r} is not supported")
        fields = dict(
            vocab_size=hf["vocab_size"],
            d_model=hf["hidden_size"],
            n_layers=hf["num_hidden_layers"],
            n_heads=hf["num_attention_heads"],
            n_kv_heads=hf.get("num_key_value_heads") or hf["num_attention_heads"],
            d_ff=hf["intermediate_size"],
            max_len=hf.get("max_position_embeddings", 2048),
            rope_theta=float(hf.get("rope_theta", 10000.0)),
            norm_eps=float(hf.get("rms_norm_eps", 1e-6)),
            tie_embeddings=bool(hf.get("tie_word_embeddings", False)),
            weight_dtype="int8" if method == QUANT_METHOD else None,
        )
        return cls(**{**fields, **overrides})
