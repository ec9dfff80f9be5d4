"""What an evaluation measured besides fitness."""

from __future__ import annotations

import chex
from jaxtyping import Array, Float, Int

from evolax.normalize import ObsStats


@chex.dataclass(frozen=True)
class EvalInfo:
    """What :func:`evaluate` measured besides fitness.

    Attributes:
        returns: total reward of each episode, ``f32[pop, n_repeats]`` (``f32[pop, n_repeats,
            *task.reward_shape]`` for a vector reward).
        lengths: steps of each episode until ``done``, ``i32[pop, n_repeats]``.
        obs_stats: the observation statistics updated with this rollout's observations
            (``None`` when no statistics were passed in).
        descriptors: each individual's behaviour descriptor (``Task.descriptor`` of the
            state where each episode ended, averaged over repeats), ``f32[pop, n_desc]``;
            ``None`` unless asked for.
    """

    returns: Float[Array, "pop repeats"]
    lengths: Int[Array, "pop repeats"]
    obs_stats: ObsStats | None = None
    descriptors: Float[Array, "pop desc"] | None = None
