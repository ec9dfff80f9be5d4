"""Any XLand-MiniGrid environment as an evolax task (Nikulin et al., 2024,
https://github.com/dunnolab/xland-minigrid): MiniGrid's navigation tasks and XLand's
meta-RL task space, whose rulesets (a goal, rules and initial objects) form a task
distribution."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, PyTree

from evolax.extras import require
from evolax.tasks.distributions import Distribution, ParamSet, TaskDistribution
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


OBJECT_SHAPES = ("ball", "square", "pyramid", "key", "star", "hex")
"""The object shapes :func:`near_object_rulesets` draws from (XLand-MiniGrid's ``Tiles``)."""

OBJECT_COLOURS = ("red", "green", "blue", "purple", "yellow", "grey")
"""The colours :func:`near_object_rulesets` draws from (XLand-MiniGrid's ``Colors``)."""


def near_object_rulesets(
    n_shapes: int = 4, n_colours: int = 6, n_distractors: int = 2, seed: int = 0
) -> ParamSet:
    """A set of XLand rulesets built in place (no download): one per object of the first
    ``n_shapes`` of :data:`OBJECT_SHAPES` in the first ``n_colours`` of
    :data:`OBJECT_COLOURS`, whose goal is to stand next to that object
    (``AgentNearGoal``) in a room that also holds ``n_distractors`` other objects, drawn
    with ``seed``; no rules. The goal is not in the observation: a policy that solves one
    ruleset need not solve another (multi-task MAP-Elites keeps one per ruleset).

    Returns:
        a :class:`~evolax.tasks.ParamSet` of ``n_shapes * n_colours`` rulesets in an order
        shuffled with ``seed`` (``split(n)`` gives a training and a held-out set), with
        ``replace="ruleset"``: the ``distribution`` of an ``XLand-MiniGrid-R*`` task.
    """
    require("xminigrid", "xminigrid", "XLandMiniGrid")
    from xminigrid.core.constants import Colors, Tiles
    from xminigrid.core.goals import AgentNearGoal
    from xminigrid.core.rules import EmptyRule
    from xminigrid.types import RuleSet

    if not 1 <= n_shapes <= len(OBJECT_SHAPES):
        raise ValueError(f"n_shapes must be in [1, {len(OBJECT_SHAPES)}], got {n_shapes}")
    if not 1 <= n_colours <= len(OBJECT_COLOURS):
        raise ValueError(f"n_colours must be in [1, {len(OBJECT_COLOURS)}], got {n_colours}")
    objects = [
        (getattr(Tiles, shape.upper()), getattr(Colors, colour.upper()))
        for shape in OBJECT_SHAPES[:n_shapes]
        for colour in OBJECT_COLOURS[:n_colours]
    ]
    if not 0 <= n_distractors < len(objects):
        raise ValueError(f"n_distractors must be in [0, {len(objects) - 1}], got {n_distractors}")
    rng = np.random.default_rng(seed)
    rulesets = []
    for i in rng.permutation(len(objects)):
        others = [j for j in range(len(objects)) if j != i]
        chosen = [i, *rng.choice(others, n_distractors, replace=False)]
        tiles = jnp.array([objects[j] for j in chosen], jnp.uint8)
        rulesets.append(
            RuleSet(
                goal=AgentNearGoal(tile=tiles[0]).encode(),
                rules=EmptyRule().encode()[None],
                init_tiles=tiles,
            )
        )
    members = RuleSet(
        goal=jnp.stack([r.goal for r in rulesets]),
        rules=jnp.stack([r.rules for r in rulesets]),
        init_tiles=jnp.stack([r.init_tiles for r in rulesets]),
    )
    return ParamSet(members, replace="ruleset")


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
