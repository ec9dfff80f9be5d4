"""Evolve a flax network: :class:`FlaxPolicy` wraps any ``flax.linen.Module``.

The genome is the module's ``params`` collection as flax builds it, a nested dict such as
``{"Dense_0": {"kernel": f32[in, out], "bias": f32[out]}, ...}``; evolax's algorithms flatten
it for their arithmetic and hand back the same pytree. flax is an optional dependency
(``pip install flax``); it is imported only when a policy is built.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array

from evolax.policies.base import EmptyState, Policy
from evolax.types import Params, PRNGKey

if TYPE_CHECKING:
    import flax.linen as nn

FLAX_MISSING = "FlaxPolicy needs flax, which is not installed: `pip install flax`"


def _names(names: str | tuple[str, ...]) -> tuple[str, ...]:
    """``rng_names`` as a tuple (a single name may be given as a string)."""
    return (names,) if isinstance(names, str) else tuple(names)


class FlaxPolicy(Policy):
    """A ``flax.linen.Module`` as a stateless evolax policy; its ``params`` are the genome.

    ``init`` calls ``module.init(key, zeros(obs_shape))`` and returns the ``params``
    collection; ``apply`` calls ``module.apply({"params": params}, obs)`` on one observation
    (the module sees exactly the observation's shape: flatten inside the module if needed).
    The module's output must have the task's ``action_shape``. Modules with other variable
    collections (``batch_stats``, ...) are refused: only ``params`` are evolved.

    Args:
        module: the network, e.g. a ``linen.Module`` with ``Dense`` layers ending in ``tanh``.
            It is configuration (a static field), so it must be hashable: give its sequence
            fields as tuples.
        rng_names: random-number streams the module draws from in ``apply`` (e.g.
            ``("dropout",)``); each gets a key split from ``apply``'s key.

    Raises:
        ImportError: flax is not installed.
        TypeError: ``module`` is not a ``flax.linen.Module`` or is not hashable.
    """

    module: nn.Module = eqx.field(static=True)
    rng_names: tuple[str, ...] = eqx.field(static=True, default=(), converter=_names)

    def __check_init__(self):
        try:
            import flax.linen as nn
        except ImportError as error:
            raise ImportError(FLAX_MISSING) from error
        if not isinstance(self.module, nn.Module):
            raise TypeError(f"module must be a flax.linen.Module, got {type(self.module).__name__}")
        try:
            hash(self.module)
        except TypeError as error:
            raise TypeError(
                f"module must be hashable (it is static configuration): give "
                f"{type(self.module).__name__}'s sequence fields as tuples, not lists ({error})"
            ) from None
        for name in self.rng_names:
            if not isinstance(name, str) or name == "params":
                raise ValueError(
                    f"rng_names must be names of random streams other than 'params', got "
                    f"{self.rng_names!r}"
                )

    def _rngs(self, key: PRNGKey) -> dict[str, PRNGKey] | None:
        if not self.rng_names:
            return None
        keys = jax.random.split(key, len(self.rng_names))
        return {name: keys[i] for i, name in enumerate(self.rng_names)}

    def init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> Params:
        """The module's initial ``params`` for one observation of shape ``obs_shape``.

        Raises:
            ValueError: the module has variable collections besides ``params``, or its
                output shape is not ``action_shape``.
        """
        obs = jnp.zeros(obs_shape, jnp.float32)
        params_key, apply_key = jax.random.split(key)
        variables = self.module.init({"params": params_key, **(self._rngs(apply_key) or {})}, obs)
        others = sorted(set(variables) - {"params"})
        if others:
            raise ValueError(
                f"module has variable collections {others} besides 'params'; FlaxPolicy "
                "evolves only 'params' (use a module without them)"
            )
        params = variables.get("params", {})
        if not jax.tree.leaves(params):
            raise ValueError(f"module {type(self.module).__name__} has no params to evolve")
        action = jax.eval_shape(self.apply, params, obs, EmptyState(), apply_key)[0]
        if tuple(action.shape) != tuple(action_shape):
            raise ValueError(
                f"module outputs shape {tuple(action.shape)} for one observation of shape "
                f"{tuple(obs_shape)}, expected action_shape {tuple(action_shape)} "
                f"({math.prod(action_shape)} outputs)"
            )
        return params

    def apply(
        self, params: Params, obs: Array, state: EmptyState, key: PRNGKey
    ) -> tuple[Array, EmptyState]:
        """``module.apply({"params": params}, obs)``; the policy state passes through."""
        out: Any = self.module.apply({"params": params}, obs, rngs=self._rngs(key))
        return out, state
