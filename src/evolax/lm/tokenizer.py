"""A byte-level tokenizer that ships with evolax (no vocabulary file): token ``i < 256`` is byte
``i`` of the UTF-8 text, and three special tokens follow. Any tokenizer with the same two
methods (``encode``: text to token ids, ``decode``: ids to text) plugs in instead."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Tokenizer(Protocol):
    """Text to token ids and back (a ``transformers`` tokenizer wrapped in two functions
    fits)."""

    vocab_size: int
    pad_id: int
    eos_id: int

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


class ByteTokenizer:
    """UTF-8 bytes as tokens ``0 .. 255``; ``PAD = 256``, ``BOS = 257``, ``EOS = 258``.

    ``decode`` stops at the first ``EOS``, skips ``PAD`` and ``BOS``, and replaces invalid
    UTF-8 with U+FFFD."""

    vocab_size = 259
    pad_id, bos_id, eos_id = 256, 257, 258

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Sequence[int]) -> str:
        out = bytearray()
        for token in np.asarray(ids).tolist():
            if token == self.eos_id:
                break
            if 0 <= token < 256:
                out.append(token)
        return out.decode("utf-8", errors="replace")

    def encode_batch(self, texts: Sequence[str], length: int) -> tuple[np.ndarray, np.ndarray]:
        """``texts`` left-padded with ``PAD`` to ``length`` tokens: ``i32[n, length]`` and the
        mask of real tokens ``bool[n, length]``. Raises one line for a text too long."""
        ids = np.full((len(texts), length), self.pad_id, np.int32)
        for row, text in enumerate(texts):
            encoded = self.encode(text)
            if len(encoded) > length:
                raise ValueError(f"text {text!r} has {len(encoded)} tokens, over length={length}")
            if encoded:
                ids[row, length - len(encoded) :] = encoded
        return ids, ids != self.pad_id
