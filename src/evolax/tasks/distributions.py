"""Task distributions: the environment parameters (or levels) an episode is played on, drawn
with the episode's key, so an ES optimises the expected return over the distribution, and a
held-out distribution measures how the result generalises."""

from __future__ import annotations

import abc
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float, Int, PyTree

from evolax.types import PRNGKey


class TaskDistribution(eqx.Module):
    """A distribution over an environment's parameters: :meth:`sample` draws one episode's
    parameters from a key and the task's own (default) parameters."""

    @abc.abstractmethod
    def sample(self, key: PRNGKey, params: PyTree) -> PyTree:
        """One episode's parameters (a pytree with the structure, shapes and dtypes of
        ``params``)."""


def _leading_size(tree: PyTree, name: str) -> int:
    """The common leading axis of ``tree``'s leaves (a ``ValueError`` unless there is one)."""
    sizes = {int(jnp.shape(leaf)[0]) if jnp.ndim(leaf) else -1 for leaf in jax.tree.leaves(tree)}
    if len(sizes) != 1 or min(sizes) < 1:
        raise ValueError(
            f"{name} must be a pytree of arrays sharing a leading axis of positive size (one "
            f"entry per member of the set), got leading sizes {sorted(sizes)}"
        )
    return sizes.pop()


class ParamSet(TaskDistribution):
    """A fixed set of parameters (or levels), one drawn uniformly per episode.

    Args:
        members: the set stacked on a leading axis: a pytree whose leaves are
            ``[n_members, ...]`` (e.g. ``jax.tree.map(lambda *x: jnp.stack(x), *params)``).
        replace: the parameter field the member replaces (``"ruleset"`` for XLand-MiniGrid's
            rulesets); ``None``: the member is the whole parameter pytree.
    """

    members: PyTree
    replace: str | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        _leading_size(self.members, "members")

    @property
    def size(self) -> int:
        """The number of members."""
        return _leading_size(self.members, "members")

    def member(self, index: int | Array) -> PyTree:
        """Member ``index`` of the set."""
        return jax.tree.map(lambda leaf: leaf[index], self.members)

    def vectors(self) -> Float[Array, "n_members dim"]:
        """Each member's leaves flattened into one row, ``f32[n_members, dim]``: the members'
        places in parameter space (multi-task MAP-Elites measures distances between them)."""
        flat = jax.vmap(lambda member: ravel_pytree(member)[0])(self.members)
        return jnp.asarray(flat, jnp.float32).reshape(self.size, -1)

    def split(self, n_first: int) -> tuple[ParamSet, ParamSet]:
        """The first ``n_first`` members and the rest (a training and a held-out set)."""
        if not 0 < n_first < self.size:
            raise ValueError(f"n_first must be in [1, {self.size - 1}], got {n_first}")
        first = jax.tree.map(lambda leaf: leaf[:n_first], self.members)
        rest = jax.tree.map(lambda leaf: leaf[n_first:], self.members)
        return ParamSet(first, self.replace), ParamSet(rest, self.replace)

    def sample(self, key: PRNGKey, params: PyTree) -> PyTree:
        """A member drawn uniformly, in ``params`` (at field ``replace``) or as the parameters."""
        drawn = self.member(jax.random.randint(key, (), 0, self.size))
        return drawn if self.replace is None else params.replace(**{self.replace: drawn})


class UniformParams(TaskDistribution):
    """Each named parameter field drawn uniformly from ``[low, high]`` per episode (randomised
    physics: ``UniformParams({"gravity": (9.0, 10.6)})``); other fields keep their values.

    Args:
        ranges: field name -> ``(low, high)``, scalars or arrays (or nested sequences) of the
            field's shape.
    """

    ranges: dict[str, tuple[Float[Array, "..."], Float[Array, "..."]]]

    def __check_init__(self):
        for name, bounds in self.ranges.items():
            if not isinstance(bounds, tuple | list) or len(bounds) != 2:
                raise ValueError(f"ranges[{name!r}] must be a (low, high) pair, got {bounds!r}")

    def sample(self, key: PRNGKey, params: PyTree) -> PyTree:
        """``params`` with every field in ``ranges`` drawn uniformly from its range."""
        keys = jax.random.split(key, len(self.ranges))
        values = {}
        for k, (name, (low, high)) in zip(keys, sorted(self.ranges.items()), strict=True):
            old = jnp.asarray(getattr(params, name))
            low, high = jnp.asarray(low, jnp.float32), jnp.asarray(high, jnp.float32)
            drawn = jax.random.uniform(k, old.shape, jnp.float32, low, high)
            values[name] = drawn.astype(old.dtype)
        return params.replace(**values)


def on_member(task: Any, index: Int[Array, ""] | int) -> Any:
    """``task`` with every episode played on member ``index`` of its parameter set: the task's
    ``distribution`` (a :class:`ParamSet`) replaced by the set of that one member. Batched by
    ``vmap`` over ``index``, it gives each individual its own task (multi-task MAP-Elites).
    """
    distribution = getattr(task, "distribution", None)
    if not isinstance(distribution, ParamSet):
        raise ValueError(
            f"task must draw its parameters from a ParamSet (task.distribution), got "
            f"{type(distribution).__name__} on {type(task).__name__}"
        )
    one = jax.tree.map(lambda leaf: leaf[index][None], distribution.members)
    return eqx.tree_at(lambda t: t.distribution, task, ParamSet(one, distribution.replace))


Distribution = ParamSet | UniformParams | TaskDistribution
"""The annotation of a task's ``distribution``: the concrete distributions a configuration
builds (by import path, ``evolax.tasks.distributions:UniformParams``), or any other."""
