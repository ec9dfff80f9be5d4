"""An environment's observations and actions as a policy's flat vectors, for the adapters of
other libraries' environments: the flattened observation and the state that holds it with the
environment's own (gymnax, Brax, Playground), and the action map of the gymnax and gymnasium
adapters, whose ``Discrete`` and ``Box`` spaces have the same attributes."""

from __future__ import annotations

import math
from typing import Any

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PyTree


def flatten_obs(obs: PyTree) -> Float[Array, " obs_dim"]:
    """Every leaf of an environment's observation (an array, or a pytree of arrays such as a
    dict) raveled, cast to ``float32`` and concatenated."""
    leaves = [jnp.ravel(leaf).astype(jnp.float32) for leaf in jax.tree.leaves(obs)]
    return jnp.concatenate(leaves) if len(leaves) > 1 else leaves[0]


@chex.dataclass(frozen=True)
class EnvTaskState:
    """The state of one episode of another library's environment.

    Attributes:
        obs: the flattened observation, ``f32[obs_dim]`` (:func:`flatten_obs`).
        env_state: the environment's own state.
    """

    obs: Float[Array, " obs_dim"]
    env_state: PyTree


class ActionMap(eqx.Module):
    """The environment's action for a policy output of shape ``action_shape``.

    - ``Discrete(n)``: ``action_shape = (n,)``, one score per action; the action is the
      ``argmax`` (the first on ties), so any monotone output activation works.
    - ``Box(low, high, shape)`` with finite bounds: ``action_shape = (prod(shape),)``. The
      output is read as values in ``[-1, 1]`` (an ``MLP`` with ``output_activation="tanh"``):
      clipped to ``[-1, 1]``, rescaled linearly to ``low + (a + 1) / 2 * (high - low)`` and
      reshaped to ``shape``.

    Build it with :meth:`from_space`; other spaces raise a ``TypeError``, a ``Box`` with an
    infinite bound a ``ValueError``. Its fields are static, so a task holding it stays
    hashable.
    """

    discrete: bool = eqx.field(static=True)
    action_shape: tuple[int, ...] = eqx.field(static=True)
    env_shape: tuple[int, ...] = eqx.field(static=True)
    env_dtype: str = eqx.field(static=True)
    low: tuple[float, ...] | None = eqx.field(static=True, default=None)
    high: tuple[float, ...] | None = eqx.field(static=True, default=None)

    @classmethod
    def from_space(cls, space: Any, owner: str) -> ActionMap:
        """The map for a ``Discrete`` or ``Box`` space (``owner`` names the adapter in errors)."""
        kind = type(space).__name__
        if kind == "Discrete":
            return cls(True, (int(space.n),), tuple(space.shape), np.dtype(space.dtype).name)
        if kind == "Box":
            shape = tuple(int(n) for n in space.shape)
            low = np.broadcast_to(np.asarray(space.low, np.float64), shape).ravel()
            high = np.broadcast_to(np.asarray(space.high, np.float64), shape).ravel()
            if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high)) and np.all(low <= high)):
                raise ValueError(
                    f"{owner} rescales [-1, 1] to a Box action space's [low, high], which must "
                    f"be finite with low <= high; got low={space.low}, high={space.high}"
                )
            bounds = tuple(map(float, low)), tuple(map(float, high))
            return cls(False, (math.prod(shape),), shape, np.dtype(space.dtype).name, *bounds)
        raise TypeError(f"{owner} supports Discrete and Box action spaces, got {kind} ({space!r})")

    def __call__(self, action: Float[Array, " action_dim"]) -> Array:
        """The environment's action for one output: ``argmax`` (Discrete) or the output
        rescaled from ``[-1, 1]`` to ``[low, high]`` (Box)."""
        if self.discrete:  # int64 spaces get JAX's int32 (without x64) without a warning
            return jnp.argmax(action).astype(jax.dtypes.canonicalize_dtype(self.env_dtype))
        low = jnp.asarray(self.low, jnp.float32)
        high = jnp.asarray(self.high, jnp.float32)
        unit = (jnp.clip(action, -1.0, 1.0) + 1.0) / 2.0
        scaled = low + unit * (high - low)
        return scaled.reshape(self.env_shape).astype(self.env_dtype)
