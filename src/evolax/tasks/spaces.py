"""An environment's observations and actions as a policy's flat vectors, for the adapters of
other libraries' environments: the flattened observation and the state that holds it with the
environment's own (gymnax, Brax, Playground, the JAX environment families), and the action map
of every adapter with discrete, multi-discrete or box actions (gymnax's, gymnasium's and
Jumanji's spaces alike: see :meth:`ActionMap.from_space`)."""

from __future__ import annotations

import math
from typing import Any

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int, PyTree


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
    - ``MultiDiscrete(nvec)``: ``action_shape = (sum(nvec),)``, one block of scores per
      component; the action is each block's ``argmax``, an ``int[len(nvec)]``.
    - ``Box(low, high, shape)`` with finite bounds: ``action_shape = (prod(shape),)``. The
      output is read as values in ``[-1, 1]`` (an ``MLP`` with ``output_activation="tanh"``):
      clipped to ``[-1, 1]``, rescaled linearly to ``low + (a + 1) / 2 * (high - low)`` and
      reshaped to ``shape``.

    An action mask (``True``: allowed), given to :meth:`__call__`, restricts the ``argmax`` to
    the allowed actions: ``bool[n]`` for ``Discrete``; for ``MultiDiscrete`` either one row
    per component, ``bool[len(nvec), max(nvec)]``, or a joint mask ``bool[*nvec]``, whose
    action is the allowed combination with the largest summed score (without a mask, the
    same as the blocks' own ``argmax``); where the two shapes coincide (``nvec = (k, k)``)
    the mask is read as joint.

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
    nvec: tuple[int, ...] | None = eqx.field(static=True, default=None)
    """The components' sizes of a ``MultiDiscrete`` space (``None`` otherwise)."""

    @classmethod
    def from_space(cls, space: Any, owner: str) -> ActionMap:
        """The map for a ``Discrete``, ``MultiDiscrete`` or ``Box`` space (gymnax, gymnasium,
        Craftax, NAVIX, JaxMARL) or Jumanji's ``DiscreteArray``, ``MultiDiscreteArray`` and
        ``BoundedArray`` specs (``owner`` names the adapter in errors)."""
        kind = type(space).__name__
        dtype = np.dtype(getattr(space, "dtype", "int32")).name
        if kind in ("Discrete", "DiscreteArray"):
            n = int(space.n if kind == "Discrete" else space.num_values)
            return cls(True, (n,), tuple(space.shape), dtype)
        if kind in ("MultiDiscrete", "MultiDiscreteArray"):
            nvec = np.asarray(space.nvec if kind == "MultiDiscrete" else space.num_values)
            nvec_t = tuple(int(n) for n in nvec.ravel())
            if nvec.ndim != 1 or min(nvec_t, default=0) < 1:
                raise TypeError(
                    f"{owner} supports MultiDiscrete action spaces with a 1-d vector of "
                    f"positive sizes, got {nvec.tolist()}"
                )
            return cls(True, (sum(nvec_t),), (len(nvec_t),), dtype, nvec=nvec_t)
        if kind in ("Box", "BoundedArray"):
            shape = tuple(int(n) for n in space.shape)
            bounds = (space.low, space.high) if kind == "Box" else (space.minimum, space.maximum)
            low = np.broadcast_to(np.asarray(bounds[0], np.float64), shape).ravel()
            high = np.broadcast_to(np.asarray(bounds[1], np.float64), shape).ravel()
            if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high)) and np.all(low <= high)):
                raise ValueError(
                    f"{owner} rescales [-1, 1] to a Box action space's [low, high], which must "
                    f"be finite with low <= high; got low={bounds[0]}, high={bounds[1]}"
                )
            limits = tuple(map(float, low)), tuple(map(float, high))
            return cls(False, (math.prod(shape),), shape, dtype, *limits)
        raise TypeError(
            f"{owner} supports Discrete, MultiDiscrete and Box action spaces, got {kind} "
            f"({space!r})"
        )

    def mask_fits(self, shape: tuple[int, ...]) -> bool:
        """Whether an action mask of ``shape`` is one :meth:`__call__` takes."""
        if not self.discrete:
            return False
        if self.nvec is None:
            return tuple(shape) == self.action_shape
        return tuple(shape) in (self.nvec, (len(self.nvec), max(self.nvec)))

    def __call__(
        self, action: Float[Array, " action_dim"], mask: Bool[Array, "..."] | None = None
    ) -> Array:
        """The environment's action for one output: the (masked) ``argmax`` (Discrete,
        MultiDiscrete) or the output rescaled from ``[-1, 1]`` to ``[low, high]`` (Box)."""
        # int64 spaces get JAX's int32 (without x64) without a warning
        dtype = jax.dtypes.canonicalize_dtype(self.env_dtype)
        if self.discrete and self.nvec is None:
            scores = action if mask is None else jnp.where(mask, action, -jnp.inf)
            return jnp.argmax(scores).astype(dtype)
        if self.nvec is not None:
            return self._multi_discrete(action, mask).astype(dtype)
        low = jnp.asarray(self.low, jnp.float32)
        high = jnp.asarray(self.high, jnp.float32)
        unit = (jnp.clip(action, -1.0, 1.0) + 1.0) / 2.0
        scaled = low + unit * (high - low)
        return scaled.reshape(self.env_shape).astype(self.env_dtype)

    def _multi_discrete(self, action: Array, mask: Array | None) -> Int[Array, " k"]:
        """Each block's (masked) ``argmax``, or the best allowed combination (joint mask)."""
        assert self.nvec is not None
        blocks = jnp.split(action, np.cumsum(self.nvec)[:-1])
        if mask is not None and tuple(mask.shape) == self.nvec:  # a joint mask
            k = len(self.nvec)
            total = sum(
                block.reshape([-1 if i == j else 1 for j in range(k)])
                for i, block in enumerate(blocks)
            )
            best = jnp.argmax(jnp.where(mask, total, -jnp.inf))
            return jnp.stack(jnp.unravel_index(best, self.nvec))
        if mask is not None:  # one row per component
            blocks = [
                jnp.where(mask[i, :n], b, -jnp.inf)
                for i, (n, b) in enumerate(zip(self.nvec, blocks, strict=True))
            ]
        return jnp.stack([jnp.argmax(block) for block in blocks])
