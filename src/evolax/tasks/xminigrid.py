"""Any XLand-MiniGrid environment as an evolax task (Nikulin et al., 2024,
https://github.com/dunnolab/xland-minigrid): MiniGrid's navigation tasks and XLand's
meta-RL task space, whose rulesets (a goal, rules and initial objects) form a task
distribution."""

from __future__ import annotations

from typing import Any

from jaxtyping import Array, PyTree

from evolax.extras import require
from evolax.tasks.distributions import Distribution, TaskDistribution
from evolax.tasks.jax_env import JaxEnvTask, check_env_name
from evolax.tasks.spaces import ActionMap
from evolax.types import PRNGKey


def registered_envs() -> list[str]:
    """The names of XLand-MiniGrid's environments (``xminigrid.registered_environments()``)."""
    module = require("xminigrid", "xminigrid", "XLandMiniGrid")
    return sorted(module.registered_environments())


class XLandRulesets(TaskDistribution):
    """XLand rulesets drawn uniformly per episode from a benchmark (``Benchmark``, e.g.
    ``xminigrid.load_benchmark("trivial-1m")``, or its ``split`` into training and held-out
    rulesets), with the benchmark's own ``sample_ruleset(key)``: the task distribution
    of XLand-MiniGrid's meta-RL.

    Args:
        benchmark: an ``xminigrid.benchmarks.Benchmark`` (a pytree: its arrays are fields).
    """

    benchmark: Any

    def __check_init__(self):
        if not hasattr(self.benchmark, "sample_ruleset"):
            raise TypeError(
                f"benchmark must be an xminigrid Benchmark (with sample_ruleset), got "
                f"{type(self.benchmark).__name__}"
            )

    def sample(self, key: PRNGKey, params: PyTree) -> PyTree:
        """``params`` with a ruleset drawn from the benchmark."""
        return params.replace(ruleset=self.benchmark.sample_ruleset(key))

    def split(self, fraction: float) -> tuple[XLandRulesets, XLandRulesets]:
        """The first ``fraction`` of the rulesets and the rest (training and held-out)."""
        first, rest = self.benchmark.split(fraction)
        return XLandRulesets(first), XLandRulesets(rest)


class XLandMiniGrid(JaxEnvTask):
    """An XLand-MiniGrid environment (``MiniGrid-Empty-5x5``, ``MiniGrid-DoorKey-8x8``,
    ``XLand-MiniGrid-R1-9x9``, ...) as a task; in a configuration
    ``task.name=xminigrid:MiniGrid-Empty-5x5``.

    The environment and its parameters are ``xminigrid.make(env_name, **make_kwargs)``.
    ``reset(key)`` is its ``reset(env_params, key)`` and ``step(state, action, key)`` its
    ``step(env_params, timestep, action)`` (the dynamics take no key): the same keys and
    actions give XLand-MiniGrid's own episode. ``done`` is ``timestep.last()`` (goal reached,
    or truncated at ``env_params.max_steps``: XLand's reward ``1 - 0.9 t / max_steps``
    depends on it, so ``max_steps`` replaces it in ``env_params``).

    ``env_params`` (XLand's ``EnvParams``: ``ruleset`` is its array field) is an ordinary
    field; with ``distribution=XLandRulesets(benchmark)`` every episode draws its ruleset
    from the benchmark, with a key split off the episode's key. Observations (the agent's
    ``uint8[view, view, 2]`` field of view) are flattened to ``f32[obs_dim]``; actions are
    6 scores, the ``argmax`` taken.

    Example: ``XLandMiniGrid("MiniGrid-Empty-5x5")`` has obs ``f32[98]``, action ``f32[6]``
    and 100 steps.

    Args:
        env_name: a registered XLand-MiniGrid environment (see :func:`registered_envs`).
        max_steps: episode length; default the environment's ``max_steps``.
        distribution: a task distribution over ``env_params`` (``XLandRulesets``), or
            ``None``.
        **make_kwargs: passed to ``xminigrid.make`` (e.g. ``view_size``).
    """

    def __init__(
        self,
        env_name: str,
        max_steps: int | None = None,
        distribution: Distribution | None = None,
        **make_kwargs: Any,
    ):
        xminigrid = require("xminigrid", "xminigrid", "XLandMiniGrid")
        check_env_name(env_name, registered_envs(), "XLand-MiniGrid")
        env, params = xminigrid.make(env_name, **make_kwargs)
        if max_steps is not None:  # XLand itself truncates, and scales its reward by it
            params = params.replace(max_steps=max_steps)
        actions = ActionMap(True, (int(env.num_actions(params)),), (), "int32")
        steps = int(params.max_steps)
        self._setup(env, env_name, params, actions, steps, steps, distribution, None)

    def _reset_env(self, key: PRNGKey, params: PyTree) -> tuple[PyTree, PyTree]:
        timestep = self.env.reset(params, key)
        return timestep.observation, timestep

    def _step_env(
        self, key: PRNGKey, env_state: PyTree, action: Array, params: PyTree
    ) -> tuple[PyTree, PyTree, Array, Array]:
        del key
        timestep = self.env.step(params, env_state, action)
        return timestep.observation, timestep, timestep.reward, timestep.last()
