"""Evolve an EvoJAX policy network in evolax: :class:`EvoJAXPolicy` wraps a ``PolicyNetwork``.

An EvoJAX policy (Tang et al., 2022, https://github.com/google/evojax) acts for a batch:
``get_actions(task_states, params[B, num_params], policy_states) -> (actions[B, ...],
policy_states)``, with ``reset(task_states) -> policy_states``. An evolax policy acts for one
individual in one environment, so the adapter calls EvoJAX with a batch of one and removes
that axis; the genome is EvoJAX's flat parameter vector ``f32[num_params]``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from evolax.evojax_interop import add_batch_axis, import_evojax, legacy_key, remove_batch_axis
from evolax.policies.base import Policy
from evolax.types import PRNGKey
from evolax.validation import check_non_negative

if TYPE_CHECKING:
    from evojax.policy.base import PolicyNetwork


@chex.dataclass(frozen=True)
class EvoJAXObservation:
    """The task state an adapted EvoJAX policy is shown: the observation alone.

    Attributes:
        obs: a batch of one observation, ``[1, *obs_shape]``.
    """

    obs: Array


def has_field(state: Any, name: str) -> bool:
    """Whether ``state`` is a dataclass instance with a field called ``name``."""
    return dataclasses.is_dataclass(state) and any(
        field.name == name for field in dataclasses.fields(state)
    )


class EvoJAXPolicy(Policy):
    """An EvoJAX ``PolicyNetwork`` as an evolax policy; the genome is ``f32[num_params]``.

    ``apply(params, obs, state, key)`` calls ``network.get_actions`` with a batch of one:
    ``params[None]``, a task state holding only ``obs[None]`` (an
    :class:`EvoJAXObservation`), and the policy state with a batch axis added; it returns the
    action and the new policy state without that axis. Policies whose ``get_actions`` reads
    task-state fields other than ``obs`` are not supported.

    ``reset(key)`` calls ``network.reset`` on a batch of one zero observation of shape
    ``obs_shape``. EvoJAX's default ``reset`` gives every row the same fixed keys
    (``split(PRNGKey(0), batch)``); with a batch of one every episode would share one key, so
    when the policy state has EvoJAX's ``keys`` field it is replaced by this episode's key
    data, and stochastic policies draw fresh noise per episode. The ``key`` of ``apply`` is
    unused: EvoJAX policies draw from the keys in their state.

    ``init`` returns ``init_std * N(0, I)``, and zeros by default, where EvoJAX's solvers
    start (their centre is zero unless given).

    Args:
        network: the EvoJAX policy, e.g. ``evojax.policy.MLPPolicy(5, [64, 64], 1)``.
        obs_shape: the shape of one observation, which ``network.reset`` is shown. Needed
            only when ``network`` overrides ``reset`` (EvoJAX's default reads only the batch
            size); ``init`` checks it against the task's.
        init_std: standard deviation of the initial genome, at least 0.

    Raises:
        ImportError: EvoJAX is not installed.
        TypeError: ``network`` is not an EvoJAX ``PolicyNetwork``.
        ValueError: a bad ``num_params``, ``obs_shape`` or ``init_std``.
    """

    network: PolicyNetwork = eqx.field(static=True)
    obs_shape: tuple[int, ...] | None = eqx.field(static=True)
    init_std: float

    def __init__(
        self,
        network: PolicyNetwork,
        obs_shape: tuple[int, ...] | None = None,
        init_std: float = 0.0,
    ):
        import_evojax("EvoJAXPolicy")
        from evojax.policy.base import PolicyNetwork

        if not isinstance(network, PolicyNetwork):
            raise TypeError(
                f"network must be an evojax.policy.base.PolicyNetwork, got {type(network).__name__}"
            )
        num_params = getattr(network, "num_params", None)
        if isinstance(num_params, bool) or not isinstance(num_params, (int, np.integer)):
            raise ValueError(f"network.num_params must be a positive integer, got {num_params!r}")
        if num_params <= 0:
            raise ValueError(f"network.num_params must be a positive integer, got {num_params!r}")
        if obs_shape is None:
            if type(network).reset is not PolicyNetwork.reset:
                raise ValueError(
                    f"obs_shape is required: {type(network).__name__} defines its own "
                    "reset(states), which may read the observation's shape"
                )
        else:
            obs_shape = tuple(obs_shape)
            if not all(isinstance(n, (int, np.integer)) and n > 0 for n in obs_shape):
                raise ValueError(f"obs_shape must be positive integers, got {obs_shape}")
            obs_shape = tuple(int(n) for n in obs_shape)
        check_non_negative("init_std", init_std)
        self.network = network
        self.obs_shape = obs_shape
        self.init_std = init_std

    @property
    def num_params(self) -> int:
        """The genome's length, EvoJAX's ``network.num_params``."""
        return int(self.network.num_params)

    def init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> Float[Array, " params"]:
        """The initial genome ``init_std * N(0, I)``, ``f32[num_params]``."""
        del action_shape  # an EvoJAX network fixes its output size itself
        if self.obs_shape is not None and tuple(obs_shape) != self.obs_shape:
            raise ValueError(
                f"obs_shape {tuple(obs_shape)} of the task differs from the policy's "
                f"obs_shape {self.obs_shape}"
            )
        return self.init_std * jax.random.normal(key, (self.num_params,), jnp.float32)

    def reset(self, key: PRNGKey):
        """``network.reset`` of one episode, without the batch axis (see the class)."""
        obs_shape = (1,) if self.obs_shape is None else self.obs_shape
        state = self.network.reset(EvoJAXObservation(obs=jnp.zeros((1, *obs_shape))))
        if has_field(state, "keys"):
            keys = legacy_key(key)[None]
            if jnp.shape(state.keys) == keys.shape and state.keys.dtype == keys.dtype:
                state = dataclasses.replace(state, keys=keys)
        return remove_batch_axis(state, f"{type(self.network).__name__}.reset's state")

    def apply(
        self, params: Float[Array, " params"], obs: Array, state, key: PRNGKey
    ) -> tuple[Array, Any]:
        """``network.get_actions`` for one individual and one observation."""
        del key
        if jnp.shape(params) != (self.num_params,):
            raise ValueError(
                f"params must have shape (num_params,) = ({self.num_params},), got "
                f"{jnp.shape(params)}"
            )
        name = type(self.network).__name__
        actions, new_state = self.network.get_actions(
            EvoJAXObservation(obs=jnp.asarray(obs)[None]), params[None], add_batch_axis(state)
        )
        return (
            remove_batch_axis(actions, f"{name}.get_actions' actions"),
            remove_batch_axis(new_state, f"{name}.get_actions' policy state"),
        )
