"""Any Jumanji environment as an evolax task (Bonnet et al., 2024,
https://github.com/instadeepai/jumanji): combinatorial problems (TSP, Knapsack, BinPack, ...),
grid worlds (Snake, Maze, Sokoban, PacMan, ...) and puzzles (2048, Sudoku, Rubik's cube)."""

from __future__ import annotations

from typing import Any

from jaxtyping import Array, PyTree

from evolax.extras import require
from evolax.tasks.distributions import Distribution
from evolax.tasks.jax_env import JaxEnvTask, check_env_name
from evolax.types import PRNGKey

DEFAULT_MAX_STEPS = 1000
"""The episode length of an environment without a ``time_limit`` (most end on their own)."""


def registered_envs() -> list[str]:
    """The names of Jumanji's environments (``jumanji.registered_environments()``)."""
    return sorted(require("jumanji", "jumanji", "Jumanji").registered_environments())


class Jumanji(JaxEnvTask):
    """A Jumanji environment (``Snake-v1``, ``TSP-v1``, ``Maze-v0``, ``Game2048-v1``, ...) as
    a task; in a configuration ``task.name=jumanji:Snake-v1``.

    The environment is ``jumanji.make(env_name, **make_kwargs)`` (the keyword arguments set
    its generator, reward and viewer, as Jumanji's own constructors take them). ``reset(key)``
    is its ``reset(key)``; ``step(state, action, key)`` its ``step(env_state, action)``
    (Jumanji's dynamics keep their own key in the state, so ``key`` is unused): the same keys
    and actions give Jumanji's own episode. ``done`` is ``timestep.last()``; episodes are also
    cut at ``max_steps`` (default the environment's ``time_limit``, else
    ``DEFAULT_MAX_STEPS``).

    Observations (Jumanji's named tuples) are flattened in field order to ``f32[obs_dim]``.
    Actions (:class:`~evolax.tasks.spaces.ActionMap`): ``DiscreteArray(n)`` takes ``n``
    scores, ``MultiDiscreteArray(nvec)`` ``sum(nvec)`` (one block per component),
    ``BoundedArray`` values in ``[-1, 1]``; where the observation has an ``action_mask``
    (Snake, TSP, Knapsack, Minesweeper, BinPack, Sudoku, Cleaner, ...) the ``argmax`` is
    taken over the allowed actions only. Jumanji's environments have no parameter struct:
    their options are constructor arguments (``make_kwargs``), so ``env_params`` is ``None``.

    Example: ``Jumanji("Snake-v1")`` has obs ``f32[725]`` (a 12x12x5 grid, the step count and
    a 4-action mask), action ``f32[4]`` and 4000 steps.

    Args:
        env_name: a registered Jumanji environment (see :func:`registered_envs`).
        max_steps: episode length; default the environment's ``time_limit`` or 1000.
        distribution: unused by Jumanji (no parameter struct); must be ``None``.
        **make_kwargs: passed to ``jumanji.make``.
    """

    def __init__(
        self,
        env_name: str,
        max_steps: int | None = None,
        distribution: Distribution | None = None,
        **make_kwargs: Any,
    ):
        jumanji = require("jumanji", "jumanji", "Jumanji")
        check_env_name(env_name, registered_envs(), "Jumanji")
        if distribution is not None:
            raise ValueError(
                "Jumanji environments have no parameter struct to draw from: distribution "
                "must be None (set the generator through make_kwargs instead)"
            )
        env = jumanji.make(env_name, **make_kwargs)
        limit = getattr(env, "time_limit", None)
        default = int(limit) if isinstance(limit, int) and limit > 0 else DEFAULT_MAX_STEPS
        self._setup(env, env_name, None, env.action_spec, max_steps, default, None)

    def _reset_env(self, key: PRNGKey, params: PyTree) -> tuple[PyTree, PyTree]:
        del params
        env_state, timestep = self.env.reset(key)
        return timestep.observation, env_state

    def _step_env(
        self, key: PRNGKey, env_state: PyTree, action: Array, params: PyTree
    ) -> tuple[PyTree, PyTree, Array, Array]:
        del key, params
        env_state, timestep = self.env.step(env_state, action)
        return timestep.observation, env_state, timestep.reward, timestep.last()
