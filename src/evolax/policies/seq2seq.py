"""LSTM encoder-decoder policy for sequence-to-sequence tasks (EvoJAX's ``Seq2seqPolicy``)."""

from __future__ import annotations

import abc
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.policies.base import EmptyState, Policy
from evolax.policies.lstm import lstm_init, lstm_step, lstm_zero_carry
from evolax.types import Params, PRNGKey
from evolax.validation import check_positive_int


def check_sequence_shapes(
    obs_shape: tuple[int, ...], action_shape: tuple[int, ...], output_length: int
) -> None:
    """Raise unless both shapes are ``(batch, length, vocabulary)`` of positive ints and the
    action asks for ``output_length`` tokens."""
    for name, shape in (("obs_shape", obs_shape), ("action_shape", action_shape)):
        if len(shape) != 3 or not all(
            isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape
        ):
            raise ValueError(
                f"{name} must be (batch, length, vocabulary) of positive ints, got {shape}"
            )
    if tuple(action_shape)[1] != output_length:
        raise ValueError(
            f"action_shape {tuple(action_shape)} asks for {action_shape[1]} tokens, but "
            f"output_length is {output_length}"
        )


class SequencePolicy(Policy):
    """A policy that reads a batch of one-hot token sequences and decodes ``output_length``
    tokens: ``init`` checks the shapes (:func:`check_sequence_shapes`) and ``apply`` the
    observation's rank before the subclass's ``_init`` and ``_decode``."""

    output_length: eqx.AbstractVar[int]

    def init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> Params:
        """Parameters for one-hot ``obs_shape = (batch, in_len, vocab_in)`` and
        ``action_shape = (batch, output_length, vocab_out)``."""
        check_sequence_shapes(obs_shape, action_shape, self.output_length)
        return self._init(key, obs_shape, action_shape)

    def apply(
        self, params: Params, obs: Float[Array, "batch in_len vocab_in"], state, key: PRNGKey
    ) -> tuple[Float[Array, "batch out_len vocab_out"], EmptyState]:
        """Token logits ``f32[batch, output_length, vocab_out]`` for a batch of sequences."""
        del key
        if obs.ndim != 3:
            raise ValueError(
                f"obs must be one-hot sequences (batch, length, vocabulary), got shape {obs.shape}"
            )
        return self._decode(params, obs), state

    @abc.abstractmethod
    def _init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> Params:
        """The parameters, for shapes :meth:`init` has checked."""

    @abc.abstractmethod
    def _decode(
        self, params: Params, obs: Float[Array, "batch in_len vocab_in"]
    ) -> Float[Array, "batch out_len vocab_out"]:
        """The token logits of :meth:`apply`, for an observation of rank 3."""


class Seq2Seq(SequencePolicy):
    """Encode a one-hot token sequence with an LSTM, then decode ``output_length`` tokens.

    The encoder reads the whole input from a zero state; the decoder starts from the
    encoder's final state with an all-zero input, and from then on reads the one-hot of the
    token it just chose (greedy decoding, no teacher forcing). A dense layer maps each decoder
    output to token logits. With ``hidden_size=256``, a 12-token input vocabulary and 10 output
    tokens (:class:`~evolax.tasks.Seq2SeqAddition`) that is 551,434 parameters.

    Parameters: ``{"encoder": lstm, "decoder": lstm, "out": {"w": f32[hidden, vocab_out],
    "b": f32[vocab_out]}}`` (see :func:`~evolax.policies.lstm.lstm_init`).

    Args:
        hidden_size: LSTM width (the paper's model has 256).
        output_length: tokens to decode; must match the task's ``action_shape[1]``.
    """

    hidden_size: int = eqx.field(static=True, default=256)
    output_length: int = eqx.field(static=True, default=4)

    def __check_init__(self):
        check_positive_int("hidden_size", self.hidden_size)
        check_positive_int("output_length", self.output_length)

    def _init(self, key, obs_shape, action_shape):
        vocab_in, vocab_out, hidden = obs_shape[2], action_shape[2], self.hidden_size
        encoder_key, decoder_key, out_key = jax.random.split(key, 3)
        return {
            "encoder": lstm_init(encoder_key, vocab_in, hidden),
            "decoder": lstm_init(decoder_key, vocab_out, hidden),
            "out": {
                "w": jax.random.normal(out_key, (hidden, vocab_out)) / math.sqrt(hidden),
                "b": jnp.zeros(vocab_out),
            },
        }

    def _decode(self, params, obs):
        carry = lstm_zero_carry(obs.shape[0], self.hidden_size)
        carry, _ = jax.lax.scan(
            lambda carry, x: (lstm_step(params["encoder"], carry, x), None),
            carry,
            jnp.swapaxes(obs, 0, 1),  # time-major
        )
        vocab_out = params["out"]["b"].shape[0]

        def decode(carry, _):
            carry, previous = carry
            carry = lstm_step(params["decoder"], carry, previous)
            logits = carry[0] @ params["out"]["w"] + params["out"]["b"][None, :]
            chosen = jax.nn.one_hot(jnp.argmax(logits, axis=-1), vocab_out, dtype=logits.dtype)
            return (carry, chosen), logits

        start = jnp.zeros((obs.shape[0], vocab_out), obs.dtype)
        _, logits = jax.lax.scan(decode, (carry, start), None, length=self.output_length)
        return jnp.swapaxes(logits, 0, 1)
