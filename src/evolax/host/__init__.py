"""The host engine: environments that are not JAX (gymnasium, MuJoCo), stepped in worker
processes or Ray actors while the device computes the policy's actions.

- :mod:`~evolax.host.envs`: one worker's environments, in groups (NumPy only, no JAX).
- :mod:`~evolax.host.pool`: the worker processes, their failures, the pools kept per task.
"""

from evolax.host.envs import EnvError, EnvGroups, GymnasiumSpec
from evolax.host.pool import HostError, WorkerPool, close_pools

__all__ = ["EnvError", "EnvGroups", "GymnasiumSpec", "HostError", "WorkerPool", "close_pools"]
