"""Language-model weights in and out of ``safetensors``: a checkpoint in the layout
``transformers`` writes (``config.json`` and ``model.safetensors``, or shards with
``model.safetensors.index.json``), in PyTorch's naming (``*.weight``, ``[out, in]`` matrices:
every Llama checkpoint on the Hub) or in its Flax models' (``*.kernel``, ``[in, out]``).

``load_pretrained`` reads one into an :class:`~evolax.lm.config.LMConfig` and the parameter
pytree of :mod:`evolax.lm.model`; ``save_pretrained`` writes evolved weights back in either
layout, for ``transformers`` (or any Llama reader) to load.

With int8 weights (``weight_dtype="int8"``) each matrix is written as its int8 tensor under
its usual name and its float32 scales, one per output channel (``[out]``), as ``NAME.scale``
(``model.layers.0.self_attn.q_proj.weight.scale``); ``config.json`` then says so in a
``quantization_config`` that ``transformers`` refuses rather than misreads. Reading a float
checkpoint into an int8 configuration quantises it; reading an int8 one into a float
configuration dequantises it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import jax
import jax.numpy as jnp

from evolax.lm.config import LMConfig
from evolax.lm.model import param_shapes
from evolax.lm.quant import Int8Matrix, channel_axis, quantize
from evolax.seeded import dense
from evolax.types import Params

SCALE = ".scale"
"""The suffix of a quantised tensor's scales: ``NAME.scale`` beside the int8 ``NAME``."""

Layout = Literal["pytorch", "flax"]

# our block leaf -> (the name inside model.layers.{i}, transposed in PyTorch's naming)
BLOCK = {
    "attn_norm": ("input_layernorm", False),
    "wq": ("self_attn.q_proj", True),
    "wk": ("self_attn.k_proj", True),
    "wv": ("self_attn.v_proj", True),
    "wo": ("self_attn.o_proj", True),
    "mlp_norm": ("post_attention_layernorm", False),
    "w_gate": ("mlp.gate_proj", True),
    "w_up": ("mlp.up_proj", True),
    "w_down": ("mlp.down_proj", True),
}


def _names(config: LMConfig, layout: Layout) -> dict[tuple, tuple[str, bool]]:
    """Each parameter's path in our pytree -> its tensor name in ``layout`` and whether the
    tensor is the transpose of our matrix."""
    matrix = "weight" if layout == "pytorch" else "kernel"
    flip = layout == "pytorch"
    names: dict[tuple, tuple[str, bool]] = {
        ("embed",): ("model.embed_tokens." + ("weight" if flip else "embedding"), False),
        ("norm",): ("model.norm.weight", False),
    }
    if not config.tie_embeddings:
        names[("head",)] = (f"lm_head.{matrix}", flip)
    for i in range(config.n_layers):
        for leaf, (name, is_matrix) in BLOCK.items():
            suffix = matrix if is_matrix else "weight"
            names[("layers", i, leaf)] = (f"model.layers.{i}.{name}.{suffix}", flip and is_matrix)
    return names


def _get(tree: Params, path: tuple):
    for part in path:
        tree = tree[part]
    return tree


def _int8(config: LMConfig, path: tuple, value) -> Int8Matrix:
    """A parameter of an int8 configuration as an :class:`Int8Matrix` (a float matrix, or a
    member's view formed, quantised)."""
    if isinstance(value, Int8Matrix):
        return value
    return quantize(dense(value), channel_axis(path), config.jnp_dtype)


def to_state_dict(config: LMConfig, params: Params, layout: Layout = "pytorch") -> dict:
    """The tensors of ``params`` under ``transformers``' names in ``layout`` (a member's
    :class:`~evolax.seeded.LowRank` views formed); with int8 weights, each matrix's int8
    tensor and its scales (``NAME.scale``, ``[out]``), float matrices quantised."""
    out = {}
    for path, (name, transposed) in _names(config, layout).items():
        value = _get(params, path)
        if config.int8 and len(param_shapes_of(config, path)) == 2:
            matrix = _int8(config, path, value)
            out[name] = matrix.q.T if transposed else matrix.q
            out[name + SCALE] = matrix.scale
            continue
        value = dense(value)
        value = value.dense() if isinstance(value, Int8Matrix) else value
        out[name] = value.T if transposed else value
    if config.tie_embeddings:  # the head too, for readers that do not tie (transformers' Flax)
        embedding = "model.embed_tokens." + ("weight" if layout == "pytorch" else "embedding")
        head = "lm_head." + ("weight" if layout == "pytorch" else "kernel")
        out[head] = out[embedding] if layout == "pytorch" else out[embedding].T
        if embedding + SCALE in out:
            out[head + SCALE] = out[embedding + SCALE]
    return out


def param_shapes_of(config: LMConfig, path: tuple) -> tuple[int, ...]:
    """The shape of the parameter at ``path``."""
    return _get(param_shapes(config), path)


def detect_layout(names: set[str]) -> Layout:
    """``"flax"`` when the tensors use Flax's names (``*.kernel``), else ``"pytorch"``."""
    return "flax" if any(n.endswith((".kernel", ".embedding")) for n in names) else "pytorch"


def from_state_dict(config: LMConfig, tensors: Mapping[str, jax.Array]) -> Params:
    """The parameter pytree of ``tensors`` (either layout, detected from the names), in
    ``config``'s dtypes: an int8 tensor with its ``NAME.scale`` kept as an
    :class:`~evolax.lm.quant.Int8Matrix` by an int8 configuration, dequantised by a float
    one; a float matrix quantised by an int8 one. Raises one line naming the first missing,
    unexpected or misshapen tensor."""
    layout = detect_layout(set(tensors))
    names = _names(config, layout)
    expected = {name for name, _ in names.values()}
    expected |= {n + SCALE for n in expected if n in tensors and _is_int8(tensors[n])}
    ignored = {n for n in tensors if n.endswith("rotary_emb.inv_freq")}
    if config.tie_embeddings:  # a tied head is the embedding: a copy of it is not read
        ignored |= {n for n in tensors if n.startswith("lm_head.")}
    if missing := sorted(expected - set(tensors)):
        hint = " (a tied head? set tie_word_embeddings)" if "lm_head" in missing[0] else ""
        hint = " (an int8 tensor's scales)" if missing[0].endswith(SCALE) else hint
        raise ValueError(
            f"checkpoint lacks {len(missing)} tensor(s) the model needs, first "
            f"{missing[-1 if 'tied' in hint else 0]!r}{hint}"
        )
    if unexpected := sorted(set(tensors) - expected - ignored):
        raise ValueError(
            f"checkpoint has {len(unexpected)} tensor(s) the model does not use, first "
            f"{unexpected[0]!r}"
        )
    shapes = param_shapes(config)
    params: dict = {k: v for k, v in shapes.items() if k != "layers"}
    params["layers"] = [{} for _ in range(config.n_layers)]
    for path, (name, transposed) in names.items():
        value = jnp.asarray(tensors[name])
        value = value.T if transposed else value
        want = _get(shapes, path)
        if tuple(value.shape) != tuple(want):
            shown = tuple(reversed(want)) if transposed else tuple(want)
            raise ValueError(
                f"tensor {name!r} has shape {tuple(tensors[name].shape)}, the configuration "
                f"needs {shown}"
            )
        target = params if len(path) == 1 else params["layers"][path[1]]
        target[path[-1]] = _parameter(config, path, name, value, tensors)
    return params


def _is_int8(tensor) -> bool:
    return jnp.dtype(tensor.dtype) == jnp.int8


def _parameter(config: LMConfig, path: tuple, name: str, value: jax.Array, tensors: Mapping):
    """One parameter from its tensor ``value`` (in our orientation) in ``config``'s form."""
    axis = channel_axis(path)
    if _is_int8(value):
        scale = jnp.asarray(tensors[name + SCALE], jnp.float32)
        if value.ndim != 2 or tuple(scale.shape) != (value.shape[axis],):
            raise ValueError(
                f"tensor {name + SCALE!r} has shape {tuple(scale.shape)}, its int8 tensor "
                f"needs ({value.shape[axis] if value.ndim == 2 else '...'},)"
            )
        matrix = Int8Matrix(value, scale, axis, config.jnp_dtype.name)
        return matrix if config.int8 else matrix.dense()
    if config.int8 and value.ndim == 2:
        return quantize(value, axis, config.jnp_dtype)
    return value.astype(config.jnp_dtype)


def _safetensors():
    try:
        import safetensors.flax as st
    except ImportError:  # pragma: no cover - a dependency; named for a broken install
        raise ImportError(
            "reading language-model weights needs `pip install safetensors`"
        ) from None
    return st


def read_tensors(directory: Path) -> dict[str, jax.Array]:
    """Every tensor of ``model.safetensors``, or of the shards ``model.safetensors.index.json``
    lists."""
    st = _safetensors()
    index = directory / "model.safetensors.index.json"
    if index.exists():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        files = [directory / shard for shard in shards]
    else:
        files = [directory / "model.safetensors"]
    if not files[0].exists():
        raise FileNotFoundError(f"{directory}: no model.safetensors or its index")
    tensors: dict[str, jax.Array] = {}
    for file in files:
        tensors.update(st.load_file(str(file)))
    return tensors


def load_pretrained(path: str | Path, **overrides) -> tuple[LMConfig, Params]:
    """The configuration and weights of the checkpoint folder ``path`` (``config.json`` and
    safetensors, as ``transformers``' ``save_pretrained`` writes them). ``overrides`` set
    configuration fields (``dtype="bfloat16"``, ``max_len``)."""
    directory = Path(path)
    config_file = directory / "config.json"
    if not config_file.exists():
        raise FileNotFoundError(f"{directory}: no config.json (a transformers checkpoint folder)")
    config = LMConfig.from_hf(json.loads(config_file.read_text()), **overrides)
    return config, from_state_dict(config, read_tensors(directory))


def save_pretrained(
    path: str | Path, config: LMConfig, params: Params, layout: Layout = "pytorch"
) -> Path:
    """Write ``config.json`` and ``model.safetensors`` for ``params`` into the folder ``path``
    (made if needed) in ``layout``; returns the folder."""
    directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {k: jnp.asarray(v) for k, v in to_state_dict(config, params, layout).items()}
    _safetensors().save_file(
        tensors,
        str(directory / "model.safetensors"),
        {"format": "pt" if layout == "pytorch" else "flax"},
    )
    (directory / "config.json").write_text(json.dumps(config.to_hf(), indent=2) + "\n")
    return directory


__all__ = [
    "detect_layout",
    "from_state_dict",
    "load_pretrained",
    "read_tensors",
    "save_pretrained",
    "to_state_dict",
]
