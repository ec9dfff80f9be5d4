"""Each individual on its own task: the evaluation of an algorithm that chooses, for every
member of its population, the task of a fixed set it is evaluated on (multi-task MAP-Elites,
:class:`~evolax.algorithms.MTMAPElites`)."""

from __future__ import annotations

import jax
from jaxtyping import Array, Int

from evolax.layout import EpisodeLoop
from evolax.policies.base import Policy
from evolax.rollout.evaluate import evaluate_shard
from evolax.rollout.info import EvalInfo
from evolax.tasks.base import Task
from evolax.tasks.distributions import ParamSet, on_member
from evolax.types import Fitness, Population, PRNGKey


def check_task_set(task: Task, n_tasks: int, who: str) -> None:
    """Raise unless ``task`` draws its parameters from a :class:`~evolax.tasks.ParamSet` of
    ``n_tasks`` members (``who``: the algorithm that indexes it)."""
    distribution = getattr(task, "distribution", None)
    if not isinstance(distribution, ParamSet):
        raise ValueError(
            f"{who} evaluates each individual on one task of a set: task "
            f"{type(task).__name__} must draw its parameters from a ParamSet "
            f"(task.distribution), got {type(distribution).__name__}"
        )
    if distribution.size != n_tasks:
        raise ValueError(
            f"{who} has {n_tasks} tasks, but task.distribution holds {distribution.size}: "
            f"build it with task_params=task.distribution.vectors()"
        )


def evaluate_per_task(
    policy: Policy,
    task: Task,
    population: Population,
    tasks: Int[Array, " pop"],
    key: PRNGKey,
    n_repeats: int = 1,
    descriptors: bool = False,
    loop: EpisodeLoop | None = None,
) -> tuple[Fitness, EvalInfo]:
    """Member ``i`` of ``population`` evaluated on member ``tasks[i]`` of ``task``'s parameter
    set (:func:`~evolax.tasks.distributions.on_member`), for ``n_repeats`` episodes with the
    same keys for every member (common random numbers, as :func:`~evolax.rollout.evaluate`),
    in the episode loop ``loop`` (``None``: the while loop; a fused loop, a Pallas kernel,
    runs as the while loop here).

    The members are ``vmap``ped, each a population of one on its own task; observations are
    not normalised, and the evaluation is not split over devices.

    Returns:
        ``fitness`` (``f32[pop]``, or ``[pop, m]``) and an :class:`EvalInfo` (``returns`` and
        ``lengths`` ``[pop, n_repeats]``, ``descriptors`` ``[pop, n_desc]`` when asked).
    """

    if loop is not None and loop.form == "fused":  # a kernel per member: not under vmap
        loop = None

    def one(member, index):
        fitness, info = evaluate_shard(
            policy,
            on_member(task, index),
            jax.tree.map(lambda leaf: leaf[None], member),
            key,
            n_repeats,
            None,
            descriptors,
            loop=loop,
        )
        return fitness[0], jax.tree.map(lambda leaf: leaf[0], info)

    return jax.vmap(one)(population, tasks)
