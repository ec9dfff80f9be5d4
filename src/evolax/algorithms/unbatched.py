"""Linear algebra that stays one matrix per call under ``vmap``.

``jax.vmap`` of ``jnp.linalg.eigh`` (or ``solve``) becomes one batched LAPACK call, and on the
CPU jaxlib (0.10) splits its batch over XLA's intra-op thread pool from inside that pool and
waits. With several CPU devices (``evolax.use_cpu_cores()``) every pool thread can be such a
waiting call, one per device, and the program deadlocks: CMA-ES vmapped over seeds hung in
its first generation. :func:`one_at_a_time` runs the batch as a loop (``lax.map``) of
unbatched calls instead, which also keeps a ``lax.cond`` inside lazy (``vmap`` would turn
it into a ``select`` that runs both branches for every item).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import jax
from jax import lax

__all__ = ["one_at_a_time"]

F = TypeVar("F", bound=Callable)


def one_at_a_time(fn: F) -> F:
    """``fn``, but ``vmap``-ped it loops over the batch, calling ``fn`` on one item at a time.

    ``fn`` takes positional pytree arguments; arguments that are not batched are passed to
    every call as they are. Nested ``vmap`` loops at every level. Not differentiable.
    """

    @jax.custom_batching.custom_vmap
    def wrapped(*args):
        return fn(*args)

    @wrapped.def_vmap
    def _loop(axis_size, in_batched, *args):
        del axis_size
        leaves, treedef = jax.tree.flatten(args)
        flags = jax.tree.leaves(in_batched)
        if not any(flags):
            out = wrapped(*args)
            return out, jax.tree.map(lambda _: False, out)

        def one(batched_leaves):
            it = iter(batched_leaves)
            item = [next(it) if flag else leaf for leaf, flag in zip(leaves, flags, strict=True)]
            return wrapped(*jax.tree.unflatten(treedef, item))

        out = lax.map(one, [leaf for leaf, flag in zip(leaves, flags, strict=True) if flag])
        return out, jax.tree.map(lambda _: True, out)

    del _loop
    return functools.wraps(fn)(wrapped)  # type: ignore[return-value]
