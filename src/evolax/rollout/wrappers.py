"""Task wrappers: a task around a task, whose state wraps the inner task's state (brax's
wrapper stack). The rollout applies them once, around the task it evaluates."""

from __future__ import annotations

from typing import Any

import chex
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from evolax.normalize import ObsStats, shifted_sums
from evolax.tasks.wrapper import TaskWrapper
from evolax.types import Done, PRNGKey, Reward


@chex.dataclass(frozen=True)
class NormalizedState:
    """``obs``: the inner state's observation normalised; ``sums``: the shifted sums (count,
    sum, sum of squares, see :func:`~evolax.normalize.shifted_sums`) of the raw observations
    acted on until the episode's first ``done`` (``alive`` until then)."""

    inner: Any
    obs: Float[Array, "..."]
    alive: Bool[Array, ""]
    sums: tuple[Array, Array, Array]


class NormalizeObs(TaskWrapper):
    """Observations normalised with fixed statistics, and the raw ones summed for an update.

    Args:
        task: the task.
        stats: the statistics the observations are normalised with.
        pivot: the value the sums are taken about (``stats.pivot(first_obs)``), ``obs_shape``.
    """

    stats: ObsStats
    pivot: Float[Array, "..."]

    def _wrap(self, inner, alive, sums) -> NormalizedState:
        obs = self.stats.normalize(inner.obs)
        return NormalizedState(inner=inner, obs=obs, alive=alive, sums=sums)

    def reset(self, key: PRNGKey) -> NormalizedState:
        inner = self.task.reset(key)
        dtype = inner.obs.dtype
        zeros = jnp.zeros(self.obs_shape, dtype)
        return self._wrap(inner, jnp.ones([], bool), (jnp.zeros([], dtype), zeros, zeros))

    def step(self, state, action, key: PRNGKey) -> tuple[NormalizedState, Reward, Done]:
        obs = state.inner.obs  # the observation acted on: counted while the episode runs
        mask = jnp.broadcast_to(state.alive, obs.shape[: obs.ndim - len(self.obs_shape)])
        sums = jax.tree.map(jnp.add, state.sums, shifted_sums(obs, mask, self.pivot))
        inner, reward, done = self.task.step(state.inner, action, key)
        return self._wrap(inner, state.alive & ~done, sums), reward, done


@chex.dataclass(frozen=True)
class DescribedState:
    """``descriptor``: the inner task's descriptor of the state the episode ended in (so far)."""

    inner: Any
    obs: Float[Array, "..."]
    alive: Bool[Array, ""]
    descriptor: Float[Array, " desc"]


class RecordDescriptor(TaskWrapper):
    """Records ``task.descriptor`` of the state where the episode first reports ``done``."""

    def reset(self, key: PRNGKey) -> DescribedState:
        inner = self.task.reset(key)
        descriptor = self.task.descriptor(inner)
        return DescribedState(
            inner=inner, obs=inner.obs, alive=jnp.ones([], bool), descriptor=descriptor
        )

    def step(self, state, action, key: PRNGKey) -> tuple[DescribedState, Reward, Done]:
        inner: Any
        inner, reward, done = self.task.step(state.inner, action, key)
        descriptor = jnp.where(state.alive, self.task.descriptor(inner), state.descriptor)
        new = DescribedState(
            inner=inner, obs=inner.obs, alive=state.alive & ~done, descriptor=descriptor
        )
        return new, reward, done
