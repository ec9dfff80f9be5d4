"""Gymnasium environments that fail on purpose at step ``FAIL_AT``: one exits its process,
one raises, one hangs. Imported by the host workers (``faulty_envs:Crash-v0``), so the tests
put this folder on the workers' ``PYTHONPATH``."""

from __future__ import annotations

import os
import time

import gymnasium
import numpy as np

FAIL_AT = 3


class Faulty(gymnasium.Env):
    """One observation, one action; fails at step ``FAIL_AT`` of every episode."""

    observation_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t == FAIL_AT:
            self.fail()
        return np.zeros(1, np.float32), 1.0, False, False, {}

    def fail(self) -> None:
        raise NotImplementedError


class Crash(Faulty):
    def fail(self) -> None:
        os._exit(3)


class Raise(Faulty):
    def fail(self) -> None:
        raise ValueError("the simulator diverged")


class Hang(Faulty):
    def fail(self) -> None:
        time.sleep(3600)


for _cls in (Crash, Raise, Hang):
    gymnasium.register(f"{_cls.__name__}-v0", entry_point=_cls, max_episode_steps=10)
