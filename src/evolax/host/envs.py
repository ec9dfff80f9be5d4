"""The environments one host worker steps: gymnasium environments in groups, in NumPy.

This module runs in the worker processes (and Ray actors); it imports no JAX.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np


def import_gymnasium() -> Any:
    """The ``gymnasium`` package, or an ``ImportError`` that says how to install it."""
    try:
        import gymnasium
    except ImportError as error:
        raise ImportError(
            "host tasks need the optional gymnasium package: pip install evolax[gymnasium] "
            f"(gymnasium[mujoco] for the MuJoCo environments); importing it failed: {error}"
        ) from error
    return gymnasium


@dataclasses.dataclass(frozen=True)
class GymnasiumSpec:
    """How to make one environment: ``gymnasium.make(env_id, **kwargs)`` (picklable, so the
    workers make their own copies).

    Attributes:
        env_id: a registered id (``HalfCheetah-v5``), or ``module:Id`` to import ``module``
            first (gymnasium's own syntax for environments registered by a package).
        kwargs: keyword arguments of ``gymnasium.make``, as ``(name, value)`` pairs.
    """

    env_id: str
    kwargs: tuple[tuple[str, Any], ...] = ()

    def make(self) -> Any:
        gymnasium = import_gymnasium()
        return gymnasium.make(self.env_id, disable_env_checker=True, **dict(self.kwargs))


def flattener(space: Any) -> Callable[[Any], np.ndarray]:
    """How to flatten one observation of ``space`` to ``float32[gymnasium.spaces.flatdim]``
    (chosen once: it runs at every step of every environment)."""
    spaces = import_gymnasium().spaces
    if isinstance(space, spaces.Box):
        return lambda obs: np.asarray(obs, np.float32).reshape(-1)
    # Dict, Tuple, Discrete (one-hot), ...
    return lambda obs: np.asarray(spaces.flatten(space, obs), np.float32).reshape(-1)


class EnvError(RuntimeError):
    """An environment raised while it was reset or stepped."""


class EnvGroups:
    """A worker's environments, in groups that are reset and stepped as one batch each.

    Each group holds its own environments (made when first needed, then kept), so a worker
    steps one group while the device computes the actions of another. An environment whose
    episode ended is not stepped again until its group is reset: it reports its last
    observation, reward 0 and ``done``.
    """

    def __init__(self, spec: GymnasiumSpec):
        self.spec = spec
        self.envs: dict[int, list[Any]] = {}
        self.obs: dict[int, np.ndarray] = {}
        self.done: dict[int, np.ndarray] = {}
        self.steps: dict[int, int] = {}
        self.flatten: Callable[[Any], np.ndarray] | None = None  # made with the first env

    def _fail(self, what: str, group: int, index: int, error: BaseException) -> EnvError:
        return EnvError(
            f"{self.spec.env_id} raised in {what} (group {group}, environment {index}, after "
            f"{self.steps.get(group, 0)} steps): {type(error).__name__}: {error}"
        )

    def reset(self, group: int, seeds: np.ndarray) -> np.ndarray:
        """Start one episode per seed in ``group``; returns ``f32[len(seeds), obs_dim]``."""
        envs = self.envs.setdefault(group, [])
        while len(envs) < len(seeds):
            envs.append(self.spec.make())
            if self.flatten is None:
                self.flatten = flattener(envs[-1].observation_space)
        flatten = self.flatten
        assert flatten is not None
        obs = []
        for index, (env, seed) in enumerate(zip(envs, seeds, strict=False)):
            try:
                first, _ = env.reset(seed=int(seed))
            except Exception as error:  # the environment's own error, reported to the run
                raise self._fail("reset", group, index, error) from error
            obs.append(flatten(first))
        self.obs[group] = np.stack(obs)
        self.done[group] = np.zeros(len(seeds), bool)
        self.steps[group] = 0
        return self.obs[group]

    def step(self, group: int, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Step ``group``'s running episodes with ``actions`` (one per environment);
        returns ``(obs f32[n, obs_dim], reward f64[n], done bool[n])``."""
        obs, done, flatten = self.obs[group], self.done[group], self.flatten
        assert flatten is not None  # made by reset
        reward = np.zeros(len(done))
        for index in np.flatnonzero(~done):
            env = self.envs[group][index]
            try:
                new, reward[index], terminated, truncated, _ = env.step(actions[index])
            except Exception as error:
                raise self._fail("step", group, int(index), error) from error
            obs[index] = flatten(new)
            done[index] = terminated or truncated
        self.steps[group] += 1
        return obs, reward, done.copy()

    def close(self) -> None:
        for envs in self.envs.values():
            for env in envs:
                env.close()
        self.envs.clear()
