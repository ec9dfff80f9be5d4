"""The shared adapter of the JAX environment families (Jumanji, NAVIX, XLand-MiniGrid,
Craftax, Kinetix, JaxMARL): the family's ``reset/step`` as evolax's single-environment
``reset/step``, its observations as one flat vector, its action space (with an action mask
where the observation holds one) as an :class:`~evolax.tasks.spaces.ActionMap`, its
environment parameters as an ordinary field that ``vmap`` batches, and an optional
:class:`~evolax.tasks.distributions.TaskDistribution` that draws each episode's parameters."""

from __future__ import annotations

import abc
import difflib
from typing import Any

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, PyTree

from evolax.tasks.base import ConstructedTask
from evolax.tasks.distributions import Distribution, TaskDistribution
from evolax.tasks.spaces import ActionMap, EnvTaskState, flatten_obs
from evolax.types import Done, PRNGKey, Reward
from evolax.validation import check_positive_int


def check_env_name(name: str, registered: list[str], kind: str) -> None:
    """Raise a ``ValueError`` naming the closest registered names unless ``name`` is one."""
    if not isinstance(name, str):
        raise TypeError(f"env_name must be a {kind} environment name (a str), got {name!r}")
    if name in registered:
        return
    close = difflib.get_close_matches(name, registered, n=3)
    hint = f"did you mean {', '.join(map(repr, close))}? " if close else ""
    raise ValueError(
        f"env_name {name!r} is not a registered {kind} environment; {hint}available: "
        f"{', '.join(map(repr, registered))}"
    )


def field_of(obs: Any, name: str) -> Any:
    """The observation's field ``name`` (a dict's entry or an attribute), or ``None``."""
    if isinstance(obs, dict):
        return obs.get(name)
    return getattr(obs, name, None)


class ByIdentity:
    """A static field's value compared and hashed by identity: environment objects holding
    arrays (NAVIX's spaces) stay usable as static configuration of a jitted module."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ByIdentity) and other.value is self.value

    def __repr__(self) -> str:
        return repr(self.value)


@chex.dataclass(frozen=True)
class JaxEnvState(EnvTaskState):
    """One episode of a JAX environment family: ``obs`` (flat), the family's own state as
    ``env_state``, the episode's ``env_params`` (drawn from the task's distribution, if any)
    and the ``action_mask`` of the current observation (``None`` when there is none)."""

    env_params: PyTree = None
    action_mask: Bool[Array, "..."] | None = None


class JaxEnvTask(ConstructedTask):
    """Base of the adapters: a subclass sets the fields in ``__init__`` (with :meth:`_setup`)
    and writes :meth:`_reset_env` and :meth:`_step_env` in the family's own terms.

    ``reset(key)`` draws the episode's parameters from ``distribution`` with a key split off
    ``key`` (without a distribution, ``env_params`` and ``key`` itself, so the episode is the
    one the family's own ``reset`` gives for ``key``); ``step(state, action, key)`` maps the
    policy output to the family's action (:class:`~evolax.tasks.spaces.ActionMap`, masked
    by the observation's action mask when it has one) and passes ``key`` on where the family
    takes a key. Observations (any pytree of arrays: dicts, named tuples, pixels) are
    flattened to ``f32[obs_dim]``, the mask included.

    Attributes:
        env: the family's environment object (static: held as ``static_env``, by identity).
        env_name: its registered name (static).
        env_params: the family's environment parameters (an ordinary field: set by the
            configuration, batched by ``vmap``), ``None`` for families without them.
        distribution: the task distribution drawing each episode's parameters, or ``None``.
        actions: the map from policy outputs to the family's actions.
        mask_field: the observation field holding the action mask, or ``None``.
    """

    static_env: ByIdentity = eqx.field(static=True)
    env_name: str = eqx.field(static=True)
    env_params: PyTree
    distribution: Distribution | None
    actions: ActionMap
    mask_field: str | None = eqx.field(static=True)

    @property
    def env(self) -> Any:
        """The family's environment object."""
        return self.static_env.value

    def _setup(
        self,
        env: Any,
        env_name: str,
        env_params: PyTree,
        action_space: Any,
        max_steps: int | None,
        default_max_steps: int,
        distribution: Distribution | None,
        mask_field: str | None = "action_mask",
    ) -> None:
        """Set the fields: the shapes come from an abstract ``reset`` of the environment."""
        if distribution is not None and not isinstance(distribution, TaskDistribution):
            raise TypeError(
                f"distribution must be an evolax TaskDistribution (ParamSet, UniformParams, "
                f"...) or None, got {type(distribution).__name__}"
            )
        self.static_env, self.env_name, self.env_params = ByIdentity(env), env_name, env_params
        self.distribution = distribution
        self.max_steps = default_max_steps if max_steps is None else max_steps
        check_positive_int("max_steps", self.max_steps)
        self.actions = (
            action_space
            if isinstance(action_space, ActionMap)
            else ActionMap.from_space(action_space, type(self).__name__)
        )
        self.action_shape = self.actions.action_shape
        with jax.numpy_rank_promotion("allow"):  # as Brax, the families promote ranks
            obs, _ = jax.eval_shape(
                lambda k, p: self._reset_env(k, p), jax.random.key(0), env_params
            )
        mask = None if mask_field is None else field_of(obs, mask_field)
        fits = mask is not None and self.actions.mask_fits(mask.shape)
        self.mask_field = mask_field if fits else None
        self.obs_shape = tuple(jax.eval_shape(lambda o: self._observe(o), obs).shape)

    @abc.abstractmethod
    def _reset_env(self, key: PRNGKey, params: PyTree) -> tuple[PyTree, PyTree]:
        """The family's reset: ``(observation, env_state)``."""

    @abc.abstractmethod
    def _step_env(
        self, key: PRNGKey, env_state: PyTree, action: Array, params: PyTree
    ) -> tuple[PyTree, PyTree, Array, Array]:
        """The family's step: ``(observation, env_state, reward, done)``."""

    def _observe(self, obs: PyTree) -> Float[Array, "..."]:
        """The policy's observation: every leaf flattened into ``f32[obs_dim]``."""
        return flatten_obs(obs)

    def _state(self, obs: PyTree, env_state: PyTree, params: PyTree) -> JaxEnvState:
        mask = None if self.mask_field is None else field_of(obs, self.mask_field)
        return JaxEnvState(
            obs=self._observe(obs), env_state=env_state, env_params=params, action_mask=mask
        )

    def env_action(self, action: Float[Array, " action_dim"], mask: Array | None = None) -> PyTree:
        """The family's action for a policy output (:class:`~evolax.tasks.spaces.ActionMap`)."""
        self.check_action(action)
        return self.actions(action, mask)

    def episode_params(self, key: PRNGKey) -> tuple[PRNGKey, PyTree]:
        """The key left for the family's reset and the episode's parameters: drawn from
        ``distribution`` with a key split off ``key``, else ``(key, env_params)``."""
        if self.distribution is None:
            return key, self.env_params
        key, task_key = jax.random.split(key)
        return key, self.distribution.sample(task_key, self.env_params)

    def reset(self, key: PRNGKey) -> JaxEnvState:
        key, params = self.episode_params(key)
        with jax.numpy_rank_promotion("allow"):
            obs, env_state = self._reset_env(key, params)
        return self._state(obs, env_state, params)

    def step(
        self, state: JaxEnvState, action: Float[Array, " action_dim"], key: PRNGKey
    ) -> tuple[JaxEnvState, Reward, Done]:
        env_action = self.env_action(action, state.action_mask)
        with jax.numpy_rank_promotion("allow"):
            obs, env_state, reward, done = self._step_env(
                key, state.env_state, env_action, state.env_params
            )
        reward = jnp.asarray(reward, jnp.float32)  # f32[], or f32[n_agents] (JaxMARL)
        return self._state(obs, env_state, state.env_params), reward, jnp.asarray(done, bool)


class GymnaxStyleTask(JaxEnvTask):
    """An adapter for a family with gymnax's interface (Craftax, Kinetix): ``reset(key,
    params) -> (obs, state)`` and ``step(key, state, action, params) -> (obs, state, reward,
    done, info)``, stepped with evolax's key."""

    def _reset_env(self, key: PRNGKey, params: PyTree) -> tuple[PyTree, PyTree]:
        return self.env.reset(key, params)

    def _step_env(
        self, key: PRNGKey, env_state: PyTree, action: Array, params: PyTree
    ) -> tuple[PyTree, PyTree, Array, Array]:
        obs, env_state, reward, done, _ = self.env.step(key, env_state, action, params)
        return obs, env_state, reward, done
