"""Direct encoding: the genome is the action."""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.policies.base import EmptyState, Policy
from evolax.types import PRNGKey


class Direct(Policy):
    """A policy whose parameters ARE its action, whatever it observes.

    For direct-encoding problems, where evolution searches the solution itself (the triangles
    of :class:`~evolax.tasks.image_approximation.ImageApproximation`, a vector to optimise
    through a one-step task): ``init`` draws an array of ``action_shape`` and ``apply``
    returns it unchanged, ignoring the observation.

    Args:
        initializer: ``initializer(key, shape, dtype) -> array`` draws the initial parameters,
            as ``jax.random.uniform`` (the default: uniform in ``[0, 1)``), ``jax.random.normal``
            and ``jax.nn.initializers`` functions do.
    """

    initializer: Callable[..., Array] = eqx.field(static=True, default=jax.random.uniform)

    def __check_init__(self):
        if not callable(self.initializer):
            raise TypeError(
                "initializer must be callable as initializer(key, shape, dtype), got "
                f"{type(self.initializer).__name__}"
            )

    def init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> Float[Array, "..."]:
        """``initializer(key, action_shape, float32)``; ``obs_shape`` is not used."""
        del obs_shape
        shape = tuple(action_shape)
        params = jnp.asarray(self.initializer(key, shape, jnp.float32))
        if params.shape != shape:
            raise ValueError(
                f"initializer returned an array of shape {params.shape}, expected action_shape "
                f"{shape}"
            )
        return params.astype(jnp.float32)

    def apply(
        self, params: Float[Array, "..."], obs: Array, state: EmptyState, key: PRNGKey
    ) -> tuple[Float[Array, "..."], EmptyState]:
        """Return ``params`` as the action (the observation and key are ignored)."""
        del obs, key
        return params, state
