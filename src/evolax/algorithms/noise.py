"""Standard normal and uniform noise for the algorithms' populations, drawn with XLA's own
Threefry.

`jax.random.normal` builds Threefry-2x32 out of HLO operations; XLA's ``RngBitGenerator`` op
runs the same generator natively and draws bits about three times faster on CPU, which is
most of a generation for an evolution strategy at d = 1e5 (see docs/results.md). The draw is
a pure function of the key, like `jax.random.normal`, but its stream is different.

Under `jax.vmap`, JAX batches ``rng_bit_generator`` with the first key of the batch only;
:func:`random_bits` (under :func:`gaussian` and :func:`uniform`) therefore carries its own
batching rule, which draws for each key in turn, so a vmapped draw equals the separate draws.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Float, UInt32

from evolax.algorithms.unbatched import one_at_a_time
from evolax.types import PRNGKey

_MANTISSA_BITS = 23
_ONE_BITS = np.uint32(0x3F800000)  # float32 1.0
_LOW = np.nextafter(np.float32(-1.0), np.float32(0.0))


def gaussian(
    key: PRNGKey, shape: Sequence[int], dtype: jnp.dtype = jnp.float32
) -> Float[Array, "..."]:
    """Independent standard normal draws of ``shape`` (computed in float32, cast to ``dtype``).

    Args:
        key: a JAX PRNG key (typed or raw), as for `jax.random.normal`.
        shape: the output shape.
        dtype: a floating dtype for the result.
    """
    bits = random_bits(key, shape)
    _check_float(dtype)
    # uniform in (-1, 1) as jax.random.normal draws it, then its inverse error function
    symmetric = jnp.maximum(_LOW, 2.0 * unit_uniform(bits) - 1.0)
    return (np.float32(math.sqrt(2.0)) * lax.erf_inv(symmetric)).astype(dtype)


def uniform(
    key: PRNGKey, shape: Sequence[int], dtype: jnp.dtype = jnp.float32
) -> Float[Array, "..."]:
    """Independent uniform ``[0, 1)`` draws of ``shape`` (23 random mantissa bits, as
    `jax.random.uniform`; computed in float32, cast to ``dtype``)."""
    bits = random_bits(key, shape)
    _check_float(dtype)
    return unit_uniform(bits).astype(dtype)


def unit_uniform(bits: UInt32[Array, "..."]) -> Float[Array, "..."]:
    """Uniform ``[0, 1)`` float32 from random ``uint32`` bits (the top 23 bits become the
    mantissa of a float in ``[1, 2)``, as ``jax.random.uniform`` does)."""
    one = lax.bitcast_convert_type((bits >> (32 - _MANTISSA_BITS)) | _ONE_BITS, jnp.float32)
    return one - 1.0


def random_bits(key: PRNGKey, shape: Sequence[int]) -> UInt32[Array, "..."]:
    """Random ``uint32`` bits of ``shape`` from XLA's Threefry, seeded by ``key``."""
    shape = tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"shape must have non-negative sizes, got {shape}")
    seed = jax.random.bits(key, (4,), jnp.uint32)  # XLA's Threefry takes a 128-bit state
    return _draw(shape)(seed)


def _check_float(dtype) -> None:
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"dtype must be a floating dtype, got {dtype}")


@cache
def _draw(shape: tuple[int, ...]):
    """The bits of one ``shape`` as a function of the seed ``u32[4]``, batched key by key."""

    @one_at_a_time  # vmapped, key by key: the same draws as unbatched
    def draw(seed):
        if math.prod(shape) == 0:
            return jnp.zeros(shape, jnp.uint32)
        _, bits = lax.rng_bit_generator(
            seed, shape, dtype=jnp.uint32, algorithm=lax.RandomAlgorithm.RNG_THREE_FRY
        )
        return bits

    return draw
