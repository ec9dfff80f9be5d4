"""The policy interface: one individual acting in one environment."""

from __future__ import annotations

import abc

import chex
import equinox as eqx
from jaxtyping import Array, Float

from evolax.types import Params, PRNGKey


@chex.dataclass(frozen=True)
class EmptyState:
    """The state of a stateless policy."""


class Policy(eqx.Module):
    """A policy network. Written for ONE individual in ONE environment; evolax batches it."""

    @abc.abstractmethod
    def init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> Params:
        """Initial parameters (the genome pytree) for the given observation/action shapes."""

    def reset(self, key: PRNGKey):
        """Per-episode state (an :class:`EmptyState` for stateless policies)."""
        del key
        return EmptyState()

    @abc.abstractmethod
    def apply(self, params: Params, obs: Float[Array, "..."], state, key: PRNGKey):
        """Map one observation to ``(action, new_state)``."""
