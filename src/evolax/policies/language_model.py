"""A decoder-only language model (:mod:`evolax.lm`) as a policy: prompts in, completions out."""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import jax
from jaxtyping import Array, Int

from evolax.compiled import compiled
from evolax.lm.config import LMConfig
from evolax.lm.decode import check_lengths, generate
from evolax.lm.model import init_params, quantized
from evolax.lm.quant import dequantize_params
from evolax.lm.tokenizer import ByteTokenizer
from evolax.lm.weights import load_pretrained
from evolax.policies.base import EmptyState, Policy
from evolax.types import Params, PRNGKey

BYTE_MODEL = LMConfig(vocab_size=ByteTokenizer.vocab_size)


class LanguageModel(Policy):
    """Decode a completion for each prompt of a batch: the observation is ``i32[batch,
    prompt_len]`` prompt tokens (left-padded with ``pad_id``, which is never attended to), the
    action ``i32[batch, completion_len]`` tokens, greedy at ``temperature == 0`` or sampled.

    The prompt is read once into the KV cache and each new token runs one position against
    it (:func:`evolax.lm.decode.generate`). Every weight is used as ``x @ W``, so a seeded
    population's members (:class:`~evolax.algorithms.LowRankES`'s low-rank views, or
    OpenES's full-rank noise held as seeds) decode with no member's weights ever formed.

    With int8 weights (``model.weight_dtype == "int8"``) the genome is the float master
    weights (the int8 weights dequantised, in ``model.dtype``): an evolution strategy moves
    them in float, and each episode first quantises the shared matrices per channel (once
    for the whole population) and decodes with them, a low-rank member's perturbation
    added in float inside the forward pass (a full-rank member's matrix is quantised
    whole). The deployed model is the mean quantised (:func:`~evolax.lm.save_pretrained`
    writes it so).

    Args:
        completion_len: tokens to write; must match the task's ``action_shape[1]``.
        model: the architecture (:class:`~evolax.lm.LMConfig`); by default a small model over
            the byte tokenizer's 259 tokens.
        temperature: sampling temperature, ``0`` for greedy decoding.
        pad_id: the prompts' padding token (the byte tokenizer's is 256).
        checkpoint: a ``transformers`` checkpoint folder (``config.json`` and safetensors) to
            start from instead of random weights; its configuration must be ``model``'s
            (build the policy with :meth:`from_pretrained` to read it from there).
    """

    completion_len: int = eqx.field(static=True, default=4)
    model: LMConfig = BYTE_MODEL
    temperature: float = 0.0
    pad_id: int = eqx.field(static=True, default=ByteTokenizer.pad_id)
    checkpoint: str | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        if not isinstance(self.model, LMConfig):
            raise ValueError(f"model must be an LMConfig, got {type(self.model).__name__}")
        if isinstance(self.temperature, int | float) and self.temperature < 0:
            raise ValueError(f"temperature must be at least 0, got {self.temperature}")

    @classmethod
    def from_pretrained(cls, path: str | Path, **fields) -> LanguageModel:
        """The policy of the checkpoint folder ``path``: its architecture, and its weights as
        the initial genome. ``fields``: this class's other fields; ``max_len``, ``dtype`` and
        ``weight_dtype`` there override the checkpoint's."""
        names = ("max_len", "dtype", "weight_dtype")
        overrides = {k: fields.pop(k) for k in names if k in fields}
        config, _ = load_pretrained(path, **overrides)  # checks it reads, once
        return cls(model=config, checkpoint=str(path), **fields)

    def init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> Params:
        """The weights (the checkpoint's, or random) for ``obs_shape = (batch, prompt_len)``
        and ``action_shape = (batch, completion_len)``; int8 weights dequantised (float
        master weights, see the class)."""
        if len(obs_shape) != 2 or len(action_shape) != 2 or obs_shape[0] != action_shape[0]:
            raise ValueError(
                "a language model reads obs_shape (batch, prompt_len) and writes action_shape "
                f"(batch, completion_len), got {tuple(obs_shape)} and {tuple(action_shape)}"
            )
        if action_shape[1] != self.completion_len:
            raise ValueError(
                f"completion_len is {self.completion_len} but the task asks for "
                f"{action_shape[1]} tokens (action_shape {tuple(action_shape)})"
            )
        check_lengths(self.model, obs_shape[1], self.completion_len)
        if self.checkpoint is None:
            return dequantize_params(init_params(self.model, key))
        overrides = {
            "max_len": self.model.max_len,
            "dtype": self.model.dtype,
            "weight_dtype": self.model.weight_dtype,
        }
        config, params = load_pretrained(self.checkpoint, **overrides)
        if config != self.model:
            raise ValueError(
                f"checkpoint {self.checkpoint}: its configuration {config} is not model's "
                f"{self.model} (use LanguageModel.from_pretrained)"
            )
        return dequantize_params(params)

    @compiled
    def apply(
        self, params: Params, obs: Int[Array, "batch prompt"], state, key: PRNGKey
    ) -> tuple[Int[Array, "batch completion"], EmptyState]:
        """The completions of the prompts ``obs`` (compiled once per shape when called
        eagerly, :func:`~evolax.compiled.compiled`)."""
        return self.complete(params, obs, self.completion_len, key), state

    def complete(
        self, params: Params, prompts: Int[Array, "batch prompt"], n_new: int, key: PRNGKey
    ) -> Int[Array, "batch n_new"]:
        """``n_new`` tokens after each prompt (one key per prompt)."""
        keys = jax.random.split(key, prompts.shape[0])
        params = quantized(self.model, params)  # int8: once for the batch (and population)

        def one(prompt, prompt_key):
            return generate(
                self.model,
                params,
                prompt,
                n_new,
                prompt_key,
                self.temperature,
                valid=prompt != self.pad_id,
            )

        return jax.vmap(one)(prompts, keys)
