"""The population protocol: what every population is, whatever holds its members.

A population is a pytree whose leaves carry a leading population axis, except its
:class:`Shared` parts (common to every member: no population axis). Plain genome arrays,
NEAT genomes (:class:`evolax.neat.Genome`, a pytree of arrays) and populations held as seeds
(:class:`evolax.seeded.Seeded`, a :class:`Members` node whose members are drawn where they
are needed) all pass through the same functions: its :func:`size`, the ``vmap`` axes of its
members (:func:`pop_axes`), a function over its batched leaves (:func:`map_batched`: groups,
teams, slices) and :func:`materialize`, which draws the members a part of it holds. The
rollout applies them where a population enters evaluation; nothing else needs to know how a
population holds its members.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import equinox as eqx
import jax
import numpy as np
from jaxtyping import Array, PyTree

from evolax.types import Population


class Shared(eqx.Module):
    """A part of a population common to every member: it has no leading population axis
    (the rollout maps over members with ``in_axes=None`` for it, and shards it replicated)."""

    value: PyTree


def is_shared(node: object) -> bool:
    """Whether ``node`` is a :class:`Shared` part."""
    return isinstance(node, Shared)


def unshare(node: Any) -> Any:
    """The value of a :class:`Shared` part; anything else unchanged."""
    return node.value if isinstance(node, Shared) else node


def has_shared(population: Population) -> bool:
    """Whether ``population`` has shared parts (is held as seeds)."""
    return any(is_shared(x) for x in jax.tree.leaves(population, is_leaf=is_shared))


def pop_axes(population: Population) -> PyTree:
    """The ``vmap`` axes of ``population``'s members: ``None`` for its shared parts, ``0``
    elsewhere (a prefix of its pytree)."""
    return per_part(population, None, 0)


def per_part(population: Population, shared: Any, batched: Any) -> PyTree:
    """A prefix of ``population``'s pytree holding ``shared`` at its shared parts and
    ``batched`` at its other leaves (``vmap`` axes, sharding specs)."""
    return jax.tree.map(
        lambda x: shared if is_shared(x) else batched, population, is_leaf=is_shared
    )


def map_batched(fn: Callable[[Array], Array], population: Population) -> Population:
    """``fn`` applied to every leaf with a population axis; shared parts kept as they are."""
    return jax.tree.map(lambda x: x if is_shared(x) else fn(x), population, is_leaf=is_shared)


def batched_leaves(population: Population) -> list[Any]:
    """The leaves of ``population`` that have a leading population axis."""
    return [x for x in jax.tree.leaves(population, is_leaf=is_shared) if not is_shared(x)]


class Members(eqx.Module):
    """A population node that holds its members other than as ``[pop, ...]`` arrays (as
    seeds, say) and draws them on demand: its batched leaves lead with the population axis,
    and :meth:`materialize` returns the members as a pytree of ``[pop, ...]`` leaves (and
    :class:`Shared` parts)."""

    def materialize(self) -> PyTree:
        """The members this node holds, drawn."""
        raise NotImplementedError

    def groups(self, chunk: int) -> tuple[Members, Callable[[Array], Array]] | None:
        """The members as groups of ``chunk`` to evaluate one after another, in an order of
        the node's own (batched leaves ``[pop / chunk, chunk, ...]``), and the function that
        puts an output ``[pop / chunk, chunk, ...]`` back in the members' order ``[pop,
        ...]``; ``None`` (the default): consecutive groups."""
        del chunk
        return None


def materialize(population: Population) -> Population:
    """``population`` with its members drawn where a :class:`Members` node holds them (the
    whole population, or a group of it); a population of plain arrays as it is."""
    return population.materialize() if isinstance(population, Members) else population


def size(population: Population) -> int:
    """The population's size: the leading axis every batched leaf shares; raise if they
    disagree."""
    sizes = {np.shape(leaf)[0] if np.ndim(leaf) else None for leaf in batched_leaves(population)}
    if len(sizes) != 1 or None in sizes:
        raise ValueError(
            f"population leaves must share one leading pop axis, got leading sizes {sizes}"
        )
    return cast(int, sizes.pop())
