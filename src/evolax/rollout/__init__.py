"""The rollout: a population's episodes on a task, in small composable pieces.

- :mod:`~evolax.rollout.episode`: the episodes' keys, one step of one agent
  (:func:`transition`, which :mod:`evolax.render` scans too) and the loop over a batch.
- :mod:`~evolax.rollout.teams`: multi-agent assignment of individuals to environments.
- :mod:`~evolax.rollout.wrappers`: task wrappers (observation normalisation, descriptors).
- :mod:`~evolax.rollout.host`: the episodes of a host task (gymnasium), stepped in worker
  processes while the device computes actions.
- :mod:`~evolax.rollout.evaluate`: :func:`evaluate`, which composes them, and
  :func:`in_chunks` (the population evaluated in groups).

Sharding is the trainer's: ``evaluate`` runs on whatever part of the population it is given.
"""

from evolax.rollout.episode import episode_keys, initial_states, run_episodes, step_keys, transition
from evolax.rollout.evaluate import EvalInfo, evaluate, in_chunks
from evolax.rollout.teams import as_teams, from_teams
from evolax.rollout.wrappers import NormalizeObs, RecordDescriptor, TaskWrapper, unwrap

__all__ = [
    "EvalInfo",
    "NormalizeObs",
    "RecordDescriptor",
    "TaskWrapper",
    "as_teams",
    "episode_keys",
    "evaluate",
    "from_teams",
    "in_chunks",
    "initial_states",
    "run_episodes",
    "step_keys",
    "transition",
    "unwrap",
]
