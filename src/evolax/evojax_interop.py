"""What the EvoJAX adapters (:class:`~evolax.tasks.EvoJAXTask`,
:class:`~evolax.policies.EvoJAXPolicy`) share: importing EvoJAX, its raw keys, and its batch of
one.

EvoJAX (https://github.com/google/evojax) is an optional dependency (``pip install evojax``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jaxtyping import Array, UInt32

from evolax.types import PRNGKey

EVOJAX_MISSING = (
    "{what} needs EvoJAX, which is not installed: `pip install evojax` (evolax is tested "
    "against evojax 0.2.17)"
)


def import_evojax(what: str):
    """Import and return the ``evojax`` package, or raise an ``ImportError`` that says how to
    install it (``what`` names the adapter that needs it)."""
    try:
        import evojax
    except ImportError as error:
        raise ImportError(EVOJAX_MISSING.format(what=what)) from error
    return evojax


def legacy_key(key: PRNGKey) -> UInt32[Array, "..."]:
    """The raw ``uint32`` key data EvoJAX expects (``uint32[2]`` for the default threefry
    implementation) of a new-style typed key (``jax.random.key``); raw keys pass unchanged.

    Raises:
        TypeError: ``key`` is neither a typed key nor a ``uint32`` array.
    """
    if not isinstance(key, jax.Array):
        key = jnp.asarray(key)
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    if key.dtype != jnp.uint32:
        raise TypeError(
            "key must be a typed PRNG key (jax.random.key) or raw uint32 key data, got dtype "
            f"{key.dtype}"
        )
    return key


def add_batch_axis(tree: Any) -> Any:
    """Every leaf with a leading batch axis of size one (EvoJAX's batch of one environment)."""
    return jax.tree.map(lambda x: jnp.asarray(x)[None], tree)


def remove_batch_axis(tree: Any, what: str) -> Any:
    """Every leaf without its leading batch axis of size one; a ``ValueError`` naming ``what``
    if a leaf has no such axis."""

    def squeeze(x):
        if jnp.ndim(x) == 0 or jnp.shape(x)[0] != 1:
            raise ValueError(
                f"{what} must have a leading batch axis of size 1 on every leaf (EvoJAX's "
                f"batched layout), got a leaf of shape {jnp.shape(x)}"
            )
        return x[0]

    return jax.tree.map(squeeze, tree)
