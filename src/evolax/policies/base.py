"""The policy interface: one individual acting in one environment."""

from __future__ import annotations

import abc

import chex
import equinox as eqx
from jaxtyping import Array, Float

from evolax.compiled import explained_hash
from evolax.types import Params, PRNGKey


@chex.dataclass(frozen=True)
class EmptyState:
    """The state of a stateless policy."""


class Policy(eqx.Module):
    """A policy network. Written for ONE individual in ONE environment; evolax batches it."""

    __hash__ = explained_hash

    @abc.abstractmethod
    def init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> Params:
        """Initial parameters (the genome pytree) for the given observation/action shapes."""

    def reset(self, key: PRNGKey):
        """Per-episode state (an :class:`EmptyState` for stateless policies)."""
        del key
        return EmptyState()

    def prepare(self, params: Params):
        """What :meth:`apply` reads in place of ``params``, computed once per individual and
        evaluation, before its episodes (a NEAT genome decoded into its network, say); by
        default ``params`` itself."""
        return params

    @abc.abstractmethod
    def apply(self, params: Params, obs: Float[Array, "..."], state, key: PRNGKey):
        """Map one observation to ``(action, new_state)`` (``params`` as :meth:`prepare`
        returns them)."""
