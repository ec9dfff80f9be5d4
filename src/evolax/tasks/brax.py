"""Any Brax environment as an evolax task (Freeman et al., 2021, https://github.com/google/brax)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Generic, TypeVar, cast

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from evolax.tasks.base import ConstructedTask
from evolax.tasks.brax_physics import (
    BraxPhysics,
    apply_physics,
    check_distribution,
    check_draw,
    check_physics,
    model_physics,
)
from evolax.tasks.distributions import Distribution
from evolax.tasks.jax_env import check_env_name
from evolax.tasks.spaces import EnvTaskState, flatten_obs
from evolax.types import Done, PRNGKey, Reward
from evolax.validation import check_positive_int

INSTALL_HINT = "pip install evolax[brax]"

BACKENDS = ("mjx", "generalized", "positional", "spring")
"""Brax's physics pipelines (brax 0.14): MuJoCo XLA, generalized coordinates, position-based
dynamics and the spring model."""


def _import_brax_envs():
    """``brax.envs``, or an ``ImportError`` that says how to install Brax."""
    try:
        from brax import envs
    except ImportError as error:
        raise ImportError(
            f"the Brax task needs the optional brax package: {INSTALL_HINT} "
            f"(or pip install brax); importing it failed with: {error}"
        ) from error
    return envs


def registered_envs() -> list[str]:
    """The names of Brax's registered environments (``brax.envs.get_environment`` names)."""
    return sorted(getattr(_import_brax_envs(), "_envs", {}))


@chex.dataclass(frozen=True)
class BraxTaskState(EnvTaskState):
    """The state of one Brax episode: ``obs`` and Brax's own ``brax.envs.State`` as
    ``env_state``: ``pipeline_state`` (the physics state), ``obs``, ``reward``, ``done``,
    ``metrics`` and ``info``, where ``info["steps"]`` counts the episode's steps and
    ``info["truncation"]`` is 1 when the episode ended by reaching ``max_steps`` rather than by
    termination; ``physics``, the episode's :class:`~evolax.tasks.brax_physics.BraxPhysics`
    (``None`` when the task keeps Brax's model unchanged)."""

    physics: BraxPhysics | None = None


E = TypeVar("E", bound=EnvTaskState)


class BraxLikeTask(ConstructedTask, Generic[E]):
    """A task on an environment with Brax's interface (Brax's and MuJoCo Playground's):
    ``reset(key)`` is the environment's ``reset(key)`` and ``step(state, action, key)`` its
    ``step(env_state, action)`` (the dynamics take no key), whose state has ``obs``,
    ``reward`` and ``done``; implicit rank promotion is allowed, as these environments rely
    on it. The task's state is a ``state_type`` (``E``) of the flattened observation
    (:func:`~evolax.tasks.spaces.flatten_obs`) and the environment's state."""

    env: eqx.AbstractVar[Any]
    state_type: ClassVar[type[EnvTaskState]]

    def __check_init__(self):
        check_positive_int("max_steps", self.max_steps)

    def _state(self, env_state: Any) -> E:
        return cast(E, self.state_type(obs=flatten_obs(env_state.obs), env_state=env_state))

    def reset(self, key: PRNGKey) -> E:
        with jax.numpy_rank_promotion("allow"):
            env_state = self.env.reset(key)
        return self._state(env_state)

    def step(
        self, state: E, action: Float[Array, " action_dim"], key: PRNGKey
    ) -> tuple[E, Reward, Done]:
        del key  # the dynamics are deterministic (randomness lives in the state's info)
        self.check_action(action)
        with jax.numpy_rank_promotion("allow"):
            env_state = self.env.step(state.env_state, jnp.asarray(action, jnp.float32))
        reward = jnp.asarray(env_state.reward, jnp.float32).reshape(())
        return self._state(env_state), reward, jnp.asarray(env_state.done).reshape(()) != 0


class Brax(BraxLikeTask[BraxTaskState]):
    """A Brax environment (ant, halfcheetah, humanoid, hopper, ...) as a task.

    The environment is ``brax.envs.create(env_name, episode_length=max_steps,
    auto_reset=False, backend=backend, **env_kwargs)``: Brax's environment inside its
    ``EpisodeWrapper`` and nothing else. ``reset(key)`` is its ``reset(key)`` and
    ``step(state, action, key)`` its ``step(env_state, action)`` (Brax's dynamics take no key),
    so the same keys and actions give the episode Brax itself gives.

    ``done`` is Brax's ``done``: termination (for the ant, its torso leaving the healthy
    height range) or truncation after ``max_steps`` steps (then
    ``env_state.info["truncation"]`` is 1). There is no auto-reset: evolax ignores every
    reward after an episode's first ``done`` and stops once every episode is done, so an
    episode's return is the sum of its rewards up to and including the first ``done``,
    which is how EvoJAX's ``BraxTask`` and ``SimManager`` score Brax episodes (their masked sum
    of rewards; EvoJAX's auto-reset never counts).

    Observations are flattened and cast to ``f32[obs_dim]`` (dict observations are
    concatenated in key order). Actions ``f32[action_size]`` go to Brax unchanged, as in
    EvoJAX, whose Brax policy ends in ``tanh`` (an ``MLP`` with the default
    ``output_activation="tanh"``): most Brax actuators take controls in ``[-1, 1]`` (the
    ant's, halfcheetah's) and the physics clips controls to each actuator's range (the
    inverted pendulum's is ``[-3, 3]``, some of the humanoid's ``[-0.4, 0.4]``).
    Observation normalisation, which EvoJAX's Brax benchmark uses, is the trainer's:
    ``Trainer(..., normalize_obs=True)``.

    Pictures: :meth:`render` draws one state with MuJoCo's renderer (it needs OpenGL; on a
    machine without a display set ``MUJOCO_GL=egl`` or ``osmesa`` before Brax is imported);
    :meth:`render_html` writes Brax's interactive HTML viewer for an episode, and
    :func:`evolax.render.render_episode` does so for a ``.html`` path.

    Brax is optional: ``pip install evolax[brax]``. Compiling an episode takes seconds for
    ``inverted_pendulum`` and about a minute for ``ant`` on CPU; JAX's persistent compilation
    cache (``jax.config.update("jax_compilation_cache_dir", ...)``) saves it on reruns.

    Randomised physics: ``physics`` and ``distribution`` change the model an episode runs on
    (:class:`~evolax.tasks.brax_physics.BraxPhysics`: friction, mass and gear scales and the
    gravity vector, on every backend). ``reset`` draws the episode's physics from
    ``distribution`` (a :class:`~evolax.tasks.distributions.UniformParams` or
    :class:`~evolax.tasks.distributions.ParamSet` over its fields) with a key split off the
    episode's key, as the JAX environment families draw theirs, keeps it in the state, and
    ``reset`` and ``step`` run Brax's environment on the ``System`` it rebuilds, so that under
    ``vmap`` every episode has its own physics. Without either, Brax's model is used as it
    is and the episodes are the ones above, bit for bit.

    Example: ``Brax("ant")`` has obs ``f32[27]``, action ``f32[8]`` and 1000 steps;
    ``Brax("inverted_pendulum", backend="generalized", max_steps=200)`` has obs ``f32[4]``,
    action ``f32[1]``; ``Brax("inverted_pendulum", distribution=UniformParams({"mass_scale":
    (0.5, 2.0)}))`` plays each episode with the bodies' masses scaled by a draw from
    ``[0.5, 2]``.

    Args:
        env_name: a registered Brax environment (see :func:`registered_envs`).
        backend: the physics pipeline, one of :data:`BACKENDS` (default ``"mjx"``).
        max_steps: episode length; Brax's ``EpisodeWrapper`` truncates episodes there.
        physics: the episode's physics when there is no ``distribution``, and the values of
            the fields a distribution does not draw; ``None``: the model's own.
        distribution: a task distribution drawing each episode's
            :class:`~evolax.tasks.brax_physics.BraxPhysics` from ``physics``, or ``None``.
        **env_kwargs: passed to the environment's constructor (e.g. the ant's
            ``terminate_when_unhealthy=False`` or ``use_contact_forces=True``).
    """

    state_type = BraxTaskState

    env: Any = eqx.field(static=True)
    env_name: str = eqx.field(static=True)
    backend: str = eqx.field(static=True)
    physics: BraxPhysics | None
    distribution: Distribution | None

    def __init__(
        self,
        env_name: str,
        backend: str = "mjx",
        max_steps: int = 1000,
        physics: BraxPhysics | None = None,
        distribution: Distribution | None = None,
        **env_kwargs: Any,
    ):
        envs = _import_brax_envs()
        if not isinstance(env_name, str):
            raise TypeError(
                f"env_name must be the name of a Brax environment (str), got "
                f"{type(env_name).__name__}"
            )
        check_env_name(env_name, registered_envs(), "Brax")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        check_positive_int("max_steps", max_steps)
        if physics is not None:
            check_physics(physics)
        if distribution is not None:
            check_distribution(distribution)
        try:
            env = envs.create(
                env_name,
                episode_length=max_steps,
                auto_reset=False,
                backend=backend,
                **env_kwargs,
            )
        except (TypeError, ValueError) as error:  # e.g. an unknown keyword, or a backend
            kind = TypeError if isinstance(error, TypeError) else ValueError  # the env lacks
            raise kind(  # (swimmer has no spring backend)
                f"Brax could not create {env_name!r} with backend={backend!r} and env_kwargs "
                f"{sorted(env_kwargs)}: {error}"
            ) from error
        self.env = env
        self.env_name = env_name
        self.backend = backend
        self.max_steps = max_steps
        with jax.numpy_rank_promotion("allow"):
            state = jax.eval_shape(env.reset, jax.random.key(0))
        self.obs_shape = (sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(state.obs)),)
        self.action_shape = (int(env.action_size),)
        self.physics, self.distribution = None, distribution
        if physics is None and distribution is None:
            return
        if getattr(env.unwrapped, "sys", None) is None:
            raise ValueError(f"Brax's {env_name!r} has no physics model (sys) to randomise")
        self.physics = model_physics(env.sys, physics)
        if distribution is not None:
            check_draw(distribution, self.physics)

    @property
    def sys(self) -> Any:
        """Brax's ``System`` (the physics model) of the environment, unchanged."""
        return self.env.sys

    def episode_physics(self, key: PRNGKey) -> tuple[PRNGKey, BraxPhysics | None]:
        """The key left for Brax's ``reset`` and the episode's physics: drawn from
        ``distribution`` with a key split off ``key``, else ``(key, physics)``."""
        if self.distribution is None:
            return key, self.physics
        key, physics_key = jax.random.split(key)
        return key, self.distribution.sample(physics_key, self.physics)

    @contextlib.contextmanager
    def _on(self, physics: BraxPhysics | None) -> Iterator[None]:
        """Brax's environment running on the system ``physics`` rebuilds, while tracing the
        block (its own system put back after); nothing changes for ``None``."""
        if physics is None:
            yield
            return
        inner = self.env.unwrapped
        model = inner.sys
        inner.sys = apply_physics(model, physics)
        try:
            yield
        finally:
            inner.sys = model

    def reset(self, key: PRNGKey) -> BraxTaskState:
        key, physics = self.episode_physics(key)
        with self._on(physics):
            state = super().reset(key)
        return state.replace(physics=physics)  # type: ignore[attr-defined]

    def step(
        self, state: BraxTaskState, action: Float[Array, " action_dim"], key: PRNGKey
    ) -> tuple[BraxTaskState, Reward, Done]:
        with self._on(state.physics):
            next_state, reward, done = super().step(state, action, key)
        return next_state.replace(physics=state.physics), reward, done  # type: ignore[attr-defined]

    def render(self, state: BraxTaskState, height: int = 240, width: int = 320) -> np.ndarray:
        """Draw one (unbatched) state with MuJoCo's renderer as ``uint8[height, width, 3]``.

        The picture is the one ``brax.io.image.render_array`` draws (the model's default free
        camera). It needs an OpenGL context: on a machine without a display set
        ``MUJOCO_GL=egl`` (or ``osmesa``) before Brax is first imported; without one this
        raises ``NotImplementedError`` (use :meth:`render_html` instead).
        """
        mujoco = _import_mujoco()
        check_positive_int("height", height)
        check_positive_int("width", width)
        pipeline_state = jax.device_get(state.env_state.pipeline_state)
        model = self.sys.mj_model
        renderer = _renderer(self.env, height, width)
        data = mujoco.MjData(model)
        data.qpos, data.qvel = np.asarray(pipeline_state.q), np.asarray(pipeline_state.qd)
        mujoco.mj_forward(model, data)
        renderer.update_scene(data, camera=-1)
        return np.asarray(renderer.render(), dtype=np.uint8)

    def render_html(self, states: Sequence[BraxTaskState] | BraxTaskState) -> str:
        """Brax's interactive 3-D viewer (``brax.io.html.render``) of an episode as one HTML page.

        Args:
            states: the episode's (unbatched) states in order, as a list, or stacked on a
                leading time axis (as :func:`evolax.render.episode_states` returns them).

        Returns:
            The page; it loads the viewer's JavaScript (three.js and Brax's viewer) from
            public CDNs when opened.
        """
        from brax.io import html

        states = jax.device_get(states)
        if isinstance(states, BraxTaskState):
            n_states = int(np.shape(states.obs)[0])
            states = [jax.tree.map(lambda x, i=i: x[i], states) for i in range(n_states)]
        if len(states) == 0:
            raise ValueError("states must hold at least one state")
        pipeline_states = [state.env_state.pipeline_state for state in states]
        return html.render(self.sys, pipeline_states, height="100vh", colab=False)


def _import_mujoco() -> Any:
    """MuJoCo (installed with Brax), imported by name: it ships no type information."""
    return importlib.import_module("mujoco")


@functools.lru_cache(maxsize=4)
def _renderer(env: Any, height: int, width: int) -> Any:
    """A MuJoCo renderer for ``env``'s model, kept for the next frames of the same size."""
    mujoco = _import_mujoco()
    try:
        return mujoco.Renderer(env.sys.mj_model, height=height, width=width)
    except Exception as error:  # mujoco raises several types when OpenGL is missing
        raise NotImplementedError(
            f"MuJoCo could not open an OpenGL context to draw Brax frames ({error}); on a "
            "machine without a display set MUJOCO_GL=egl (or osmesa) before importing brax, "
            "or write Brax's HTML viewer instead (Brax.render_html, or a .html path for "
            "evolax.render.render_episode / `evolax render --out episode.html`)"
        ) from error
