"""What the tasks over text share: prompts as left-padded token ids, completions as token ids,
numbers written as tokens, answers checked in JAX (no Python in the reward), and held-out
problem sets."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Int

from evolax.lm.tokenizer import ByteTokenizer
from evolax.types import PRNGKey
from evolax.validation import check_positive_int

BYTES = ByteTokenizer()
PAD, EOS = BYTES.pad_id, BYTES.eos_id
ZERO = ord("0")
MAX_DIGITS = 4  # problem indices a * 10**n + b must fit in int32


def number_tokens(x: Int[Array, ""], width: int) -> tuple[Int[Array, " width"], Int[Array, ""]]:
    """The decimal bytes of ``x >= 0`` (no leading zeros, ``"0"`` for 0) left-aligned in
    ``width`` slots (``PAD`` after them), and how many there are."""
    powers = 10 ** jnp.arange(width - 1, -1, -1, dtype=jnp.int32)
    digits = (x // powers) % 10  # most significant first, zero-padded on the left
    length = jnp.maximum(1, width - jnp.argmax(digits > 0)).astype(jnp.int32)
    length = jnp.where(jnp.any(digits > 0), length, 1)
    shift = width - length
    shifted = jnp.roll(digits, -shift)
    return jnp.where(jnp.arange(width) < length, ZERO + shifted, PAD), length


def pack(pieces: list[Int[Array, " n"]]) -> Int[Array, " total"]:
    """The pieces' non-``PAD`` tokens joined in order and right-aligned (``PAD`` on the
    left): a prompt as the model reads it."""
    joined = jnp.concatenate(pieces)
    real = joined != PAD
    order = jnp.argsort(real, stable=True)  # the padding first, then the tokens in order
    return joined[order]


def leading_number(
    tokens: Int[Array, " n"], answer: Int[Array, " n"]
) -> tuple[Bool[Array, ""], Int[Array, ""]]:
    """Whether the completion ``tokens`` starts with exactly the digits of ``answer`` (its
    decimal bytes, ``PAD`` after them) followed by a non-digit or its end, and how many of
    the answer's digits it has right in place."""
    is_digit = (tokens >= ZERO) & (tokens <= ZERO + 9)
    run = jnp.cumprod(is_digit.astype(jnp.int32))  # 1 while the leading number lasts
    n_answer = jnp.sum(answer != PAD)
    in_answer = jnp.arange(tokens.shape[0]) < n_answer
    matches = (tokens == answer) & in_answer & (run == 1)
    exact = (jnp.sum(run) == n_answer) & (jnp.sum(matches) == n_answer)
    return exact, jnp.sum(matches)


def check_n_digits(n_digits: int) -> None:
    """Raise unless ``n_digits``, the digits of each operand of a problem indexed ``a *
    10**n + b``, is an integer in ``[1, MAX_DIGITS]``."""
    check_positive_int("n_digits", n_digits)
    if n_digits > MAX_DIGITS:
        raise ValueError(f"n_digits must be at most {MAX_DIGITS}, got {n_digits}")


def held_out_set(n_problems: int, size: int, seed: int) -> Int[Array, " size"]:
    """``size`` distinct problem indices in ``[0, n_problems)``, sorted, drawn once from
    ``seed`` (the test split)."""
    if size >= n_problems:
        raise ValueError(f"test_size must leave training problems: below {n_problems}, got {size}")
    rng = np.random.default_rng(seed)
    return jnp.asarray(np.sort(rng.choice(n_problems, size, replace=False)), jnp.int32)


def outside(
    key: PRNGKey, held_out: Int[Array, " k"], n_problems: int, size: int
) -> Int[Array, " size"]:
    """``size`` uniform draws from the indices in ``[0, n_problems)`` that are not
    ``held_out`` (sorted). With ``s`` those, ``s[j] - j`` training problems come before
    ``s[j]``, so the ``r``-th training problem is ``r`` plus the number of ``j`` with
    ``s[j] - j <= r``."""
    rank = jax.random.randint(key, (size,), 0, n_problems - held_out.shape[0])
    before = held_out - jnp.arange(held_out.shape[0], dtype=jnp.int32)
    return rank + jnp.searchsorted(before, rank, side="right").astype(jnp.int32)


def pad_to(tokens: Int[Array, "... n"], length: int) -> Int[Array, "... length"]:
    """``tokens`` padded with ``PAD`` (or cut) to ``length`` on the last axis."""
    extra = length - tokens.shape[-1]
    if extra <= 0:
        return tokens[..., :length]
    padding = jnp.full((*tokens.shape[:-1], extra), PAD, tokens.dtype)
    return jnp.concatenate([tokens, padding], axis=-1)
