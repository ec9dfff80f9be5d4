"""Any gymnasium environment as a task stepped on the host, in worker processes
(https://gymnasium.farama.org): classic control, Box2D, and MuJoCo (``gymnasium[mujoco]``)."""

from __future__ import annotations

from typing import Any, ClassVar

import equinox as eqx
import jax
import numpy as np
from jaxtyping import Array, Float

from evolax.host.envs import GymnasiumSpec, import_gymnasium
from evolax.host.pool import Pool, WorkerPool, default_workers, get_pool
from evolax.tasks.base import ConstructedTask
from evolax.tasks.spaces import ActionMap
from evolax.types import PRNGKey
from evolax.validation import check_positive, check_positive_int

BACKENDS = ("processes", "ray")


def _pairs(kwargs: Any) -> tuple[tuple[str, Any], ...]:
    """``gymnasium.make``'s keyword arguments as sorted ``(name, value)`` pairs (hashable)."""
    if kwargs is None:
        return ()
    items = kwargs.items() if isinstance(kwargs, dict) else kwargs
    return tuple(sorted((str(k), tuple(v) if isinstance(v, list) else v) for k, v in items))


class Gymnasium(ConstructedTask):
    """A gymnasium environment, evaluated by the host rollout engine.

    Its episodes do not run inside the compiled program: :func:`~evolax.rollout.evaluate`
    (and so :class:`~evolax.Trainer`, :func:`evolax.train` and the CLI) steps
    ``pop_size * n_repeats`` copies of the environment in ``n_workers`` worker processes,
    while the policy, batched as for any task, computes the actions on the device. With
    ``overlap`` the population is evaluated in two halves: the device computes one half's
    actions while the workers step the other's environments.

    Episode ``r`` of a generation starts from ``env.reset(seed=s_r)``, where ``s_r`` comes
    from the evaluation's key (every individual sees the same seeds), so a run is
    reproducible and resumes exactly from a checkpoint. Observations are flattened to
    ``f32[obs_dim]``; actions map from the policy's output as for
    :class:`~evolax.tasks.GymnaxTask` (:class:`~evolax.tasks.spaces.ActionMap`: ``argmax``
    of ``n`` scores for ``Discrete(n)``, ``[-1, 1]`` rescaled to a ``Box``). ``done`` is
    gymnasium's ``terminated or truncated``.

    Example: ``Gymnasium("HalfCheetah-v5")`` has obs ``f32[17]``, action ``f32[6]`` and 1000
    steps; ``Gymnasium("CartPole-v1")`` obs ``f32[4]``, two action scores and 500 steps.

    Args:
        env_id: a registered gymnasium id, or ``module:Id`` for an environment a package
            registers when imported.
        env_kwargs: keyword arguments of ``gymnasium.make`` (``{"ctrl_cost_weight": 0.2}``).
        max_steps: episode length (gymnasium's ``max_episode_steps``); default: the
            environment's own time limit, which must then exist.
        n_workers: worker processes (or Ray actors); default: this process's cores.
        overlap: compute one half's actions while the workers step the other half. Default
            (``None``): on where the policy does not take the workers' cores, that is on an
            accelerator or with fewer workers than cores; off when the workers fill a CPU
            machine's cores, where the doubled dispatches cost more than they hide
            (docs/host.md, Throughput).
        timeout: seconds to wait for a worker's step before the run stops as hung.
        backend: ``"processes"`` (this machine), or ``"ray"``: the workers are Ray actors
            on the cluster at ``ray_address`` (``pip install evolax[ray]``).
        ray_address: the Ray cluster (``"auto"``: the one this machine belongs to; ``None``:
            start a local one).
    """

    on_host: ClassVar[bool] = True

    env_id: str = eqx.field(static=True)
    env_kwargs: tuple[tuple[str, Any], ...] = eqx.field(static=True)
    n_workers: int = eqx.field(static=True)
    overlap: bool = eqx.field(static=True)
    timeout: float = eqx.field(static=True)
    backend: str = eqx.field(static=True)
    ray_address: str | None = eqx.field(static=True)
    actions: ActionMap

    def __init__(
        self,
        env_id: str,
        env_kwargs: dict[str, Any] | None = None,
        max_steps: int | None = None,
        n_workers: int | None = None,
        overlap: bool | None = None,
        timeout: float = 600.0,
        backend: str = "processes",
        ray_address: str | None = None,
    ):
        if not isinstance(env_id, str) or not env_id:
            raise ValueError(f"env_id must be a gymnasium environment id, got {env_id!r}")
        self.env_id = env_id
        self.env_kwargs = _pairs(env_kwargs)
        if n_workers is not None:
            check_positive_int("n_workers", n_workers)
        self.n_workers = default_workers() if n_workers is None else n_workers
        check_positive("timeout", timeout)
        if overlap is None:  # on where the policy has cores or a device of its own
            overlap = jax.default_backend() != "cpu" or self.n_workers < default_workers()
        self.overlap, self.timeout = bool(overlap), float(timeout)
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.backend, self.ray_address = backend, ray_address
        env = _make(env_id, self.env_kwargs)
        try:
            limit = env.spec.max_episode_steps if env.spec is not None else None
            if max_steps is None:
                if limit is None:
                    raise ValueError(
                        f"{env_id} has no time limit of its own: give max_steps (episode length)"
                    )
                max_steps = int(limit)
            check_positive_int("max_steps", max_steps)
            self.max_steps = max_steps
            space = env.observation_space
            self.obs_shape = (int(import_gymnasium().spaces.flatdim(space)),)
            self.actions = ActionMap.from_space(env.action_space, "Gymnasium")
            self.action_shape = self.actions.action_shape
        finally:
            env.close()

    @property
    def spec(self) -> GymnasiumSpec:
        """How each worker makes its environments (the episode length included)."""
        return GymnasiumSpec(self.env_id, (*self.env_kwargs, ("max_episode_steps", self.max_steps)))

    def pool(self) -> Pool:
        """This task's workers: started on first use, then kept for later evaluations."""
        spec = self.spec

        def start() -> Pool:
            if self.backend == "ray":
                from evolax.host.ray_pool import RayPool

                return RayPool(spec, self.n_workers, self.timeout, self.ray_address)
            return WorkerPool(spec, self.n_workers, self.timeout)

        return get_pool((spec, self.n_workers, self.backend, self.ray_address), start)

    def env_action(self, action: Float[Array, " action_dim"]) -> Array:
        """The environment's action for one policy output (:class:`ActionMap`)."""
        self.check_action(action)
        return self.actions(action)

    def reset(self, key: PRNGKey):
        raise TypeError(
            f"Gymnasium({self.env_id!r}) runs on the host: evaluate it with "
            "evolax.rollout.evaluate_host or train it with evolax.HostTrainer, which step it "
            "in worker processes"
        )

    def step(self, state, action, key: PRNGKey):
        return self.reset(key)

    def render(self, state) -> np.ndarray:
        raise NotImplementedError("Gymnasium tasks are drawn by gymnasium (render_mode)")

    @property
    def can_render(self) -> bool:
        return False


def _make(env_id: str, kwargs: tuple[tuple[str, Any], ...]) -> Any:
    """One environment in this process (to read its spaces), with a one-line error for an
    unknown id."""
    gymnasium = import_gymnasium()
    try:
        return GymnasiumSpec(env_id, kwargs).make()
    except gymnasium.error.Error as error:  # unknown id, wrong version, missing extra
        raise ValueError(f"env_id {env_id!r}: {error}") from None
