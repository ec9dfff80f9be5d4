"""Language-model weights in and out of ``safetensors``: a checkpoint in the layout
``transformers`` writes (``config.json`` and ``model.safetensors``, or shards with
``model.safetensors.index.json``), in PyTorch's naming (``*.weight``, ``[out, in]`` matrices:
every Llama checkpoint on the Hub) or in its Flax models' (``*.kernel``, ``[in, out]``).

``load_pretrained`` reads one into an :class:`~evolax.lm.config.LMConfig` and the parameter
pytree of :mod:`evolax.lm.model`; ``save_pretrained`` writes evolved weights back in either
layout, for ``transformers`` (or any Llama reader) to load."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import jax
import jax.numpy as jnp

from evolax.lm.config import LMConfig
from evolax.lm.model import param_shapes
from evolax.seeded import dense
from evolax.types import Params

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


def to_state_dict(config: LMConfig, params: Params, layout: Layout = "pytorch") -> dict:
    """The tensors of ``params`` under ``transformers``' names in ``layout`` (a member's
    :class:`~evolax.seeded.LowRank` views formed)."""
    out = {}
    for path, (name, transposed) in _names(config, layout).items():
        value = dense(_get(params, path))
        out[name] = value.T if transposed else value
    if config.tie_embeddings:  # the head too, for readers that do not tie (transformers' Flax)
        embedding = out["model.embed_tokens." + ("weight" if layout == "pytorch" else "embedding")]
        out["lm_head." + ("weight" if layout == "pytorch" else "kernel")] = (
            embedding if layout == "pytorch" else embedding.T
        )
    return out


def detect_layout(names: set[str]) -> Layout:
    """``"flax"`` when the tensors use Flax's names (``*.kernel``), else ``"pytorch"``."""
    return "flax" if any(n.endswith((".kernel", ".embedding")) for n in names) else "pytorch"


def from_state_dict(config: LMConfig, tensors: Mapping[str, jax.Array]) -> Params:
    """The parameter pytree of ``tensors`` (either layout, detected from the names), cast to
    ``config.dtype``. Raises one line naming the first missing, unexpected or misshapen
    tensor."""
    layout = detect_layout(set(tensors))
    names = _names(config, layout)
    expected = {name for name, _ in names.values()}
    ignored = {n for n in tensors if n.endswith("rotary_emb.inv_freq")}
    if config.tie_embeddings:  # a tied head is the embedding: a copy of it is not read
        ignored |= {n for n in tensors if n.startswith("lm_head.")}
    if missing := sorted(expected - set(tensors)):
        hint = " (a tied head? set tie_word_embeddings)" if "lm_head" in missing[0] else ""
        raise ValueError(
            f"checkpoint lacks {len(missing)} tensor(s) the model needs, first "
            f"{missing[-1 if hint else 0]!r}{hint}"
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
        target[path[-1]] = value.astype(config.jnp_dtype)
    return params


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
