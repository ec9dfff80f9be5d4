"""Host workers as Ray actors: the same environments and commands as a
:class:`~evolax.host.pool.WorkerPool`, on the nodes of a Ray cluster."""

from __future__ import annotations

from typing import Any

import numpy as np

from evolax.host.envs import EnvGroups, GymnasiumSpec
from evolax.host.pool import HostError, shares


def import_ray() -> Any:
    """The ``ray`` package, or an ``ImportError`` that says how to install it."""
    try:
        import ray
    except ImportError as error:
        raise ImportError(
            f"backend='ray' needs the optional ray package: pip install evolax[ray]; importing "
            f"it failed: {error}"
        ) from error
    return ray


class RayPool:
    """``n_workers`` Ray actors (one CPU each, placed wherever the cluster has one), each
    with its share of every group's environments.

    Args:
        spec: how each actor makes its environments.
        n_workers: actors, positive.
        timeout: seconds to wait for one group's results before calling an actor hung.
        address: the cluster to join (``"auto"``, ``"ray://host:10001"``, a head node's
            ``host:port``); ``None``: the one this process joined already, else a new local
            one. Every node needs evolax and gymnasium installed.
    """

    def __init__(self, spec: GymnasiumSpec, n_workers: int, timeout: float, address: str | None):
        ray = self.ray = import_ray()
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False)
        self.spec, self.n_workers, self.timeout = spec, n_workers, timeout
        actor = ray.remote(num_cpus=1)(EnvGroups)
        self.actors = [actor.remote(spec) for _ in range(n_workers)]
        self.groups: dict[int, list[slice]] = {}
        self.pending: dict[int, list[Any]] = {}

    def _get(self, refs: list[Any]) -> list[Any]:
        exceptions = self.ray.exceptions
        try:
            return self.ray.get(refs, timeout=self.timeout)
        except exceptions.GetTimeoutError:
            message = f"sent nothing for {self.timeout:g} s (the task's timeout)"
        except exceptions.RayActorError as error:
            message = f"died: {str(error).splitlines()[0]}"
        except exceptions.RayTaskError as error:
            cause = getattr(error, "cause", None) or error
            message = str(cause).strip().splitlines()[-1]
        self.close()
        raise HostError(
            f"a Ray actor of {self.spec.env_id} {message}; its episodes are lost and the run "
            "stops here (resume it from its last checkpoint)"
        )

    def reset(self, group: int, seeds: np.ndarray) -> np.ndarray:
        parts = self.groups[group] = shares(len(seeds), self.n_workers)
        refs = [a.reset.remote(group, seeds[p]) for a, p in zip(self.actors, parts, strict=False)]
        return np.concatenate(self._get(refs))

    def submit(self, group: int, actions: np.ndarray) -> None:
        parts = self.groups[group]
        self.pending[group] = [
            a.step.remote(group, actions[p]) for a, p in zip(self.actors, parts, strict=False)
        ]

    def collect(self, group: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        obs, reward, done = zip(*self._get(self.pending.pop(group)), strict=True)
        return np.concatenate(obs), np.concatenate(reward), np.concatenate(done)

    def close(self) -> None:
        """Stop the actors (the cluster keeps running)."""
        if self.ray.is_initialized():  # else: gone with the Ray session
            for actor in self.actors:
                self.ray.kill(actor)
        self.actors = []

    @property
    def closed(self) -> bool:
        return not self.actors
