"""The rollout: a population's episodes on a task, in small composable pieces.

- :mod:`~evolax.rollout.episode`: the episodes' keys, one step of one agent
  (:func:`transition`, which :mod:`evolax.render` scans too) and the loop over a batch.
- :mod:`~evolax.rollout.teams`: multi-agent assignment of individuals to environments.
- :mod:`~evolax.rollout.wrappers`: the rollout's task wrappers (observation normalisation,
  descriptors), on :class:`~evolax.tasks.wrapper.TaskWrapper`.
- :mod:`~evolax.rollout.host`: the episodes of a host task (gymnasium), stepped in worker
  processes while the device computes actions.
- :mod:`~evolax.rollout.evaluate`: :func:`evaluate`, which composes them, and
  :func:`in_chunks` (the population evaluated in groups).
- :mod:`~evolax.rollout.sharded`: :func:`evaluate_on`, ``evaluate`` on an explicit layout
  (over a mesh's devices, in groups); which layout is :mod:`evolax.placement`'s choice.
- :mod:`~evolax.rollout.fused`: :func:`run_fused_episodes`, the episode loop of an MLP on an
  elementwise task fused into a Pallas kernel, for the pairs :func:`fused_supported` accepts.
"""

from evolax.rollout.episode import episode_keys, initial_states, run_episodes, step_keys, transition
from evolax.rollout.evaluate import EvalInfo, evaluate, in_chunks
from evolax.rollout.fused import fused_supported, run_fused_episodes
from evolax.rollout.host import evaluate_host
from evolax.rollout.sharded import evaluate_on
from evolax.rollout.teams import as_teams, from_teams
from evolax.rollout.wrappers import NormalizeObs, RecordDescriptor
from evolax.tasks.wrapper import TaskWrapper, unwrap

__all__ = [
    "EvalInfo",
    "NormalizeObs",
    "RecordDescriptor",
    "TaskWrapper",
    "as_teams",
    "episode_keys",
    "evaluate",
    "evaluate_host",
    "evaluate_on",
    "from_teams",
    "fused_supported",
    "in_chunks",
    "initial_states",
    "run_episodes",
    "run_fused_episodes",
    "step_keys",
    "transition",
    "unwrap",
]
