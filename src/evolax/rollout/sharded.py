"""A population's evaluation on an explicit layout: over a mesh's devices (each its slice of
the population, or each the whole population on its share of the episodes) and in groups of
``pop_chunk`` individuals per device.

This is the mechanism only: which layout to use is decided by :mod:`evolax.placement`, and
a :class:`~evolax.trainer.Trainer` is given it. Nothing here measures, caches or asks which
devices exist.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from evolax.layout import EpisodeLoop
from evolax.normalize import ObsStats
from evolax.policies.base import Policy
from evolax.population import per_part
from evolax.rollout.evaluate import evaluate_shard
from evolax.rollout.info import EvalInfo
from evolax.rollout.teams import agents_per_unit
from evolax.sharding import POP_AXIS, split_axis
from evolax.tasks.base import Task
from evolax.types import Fitness, Population, PRNGKey
from evolax.validation import population_size


def mesh_split(mesh: Mesh | None, pop_size: int, n_repeats: int, task: Task) -> str | None:
    """What ``mesh``'s devices split for a population of ``pop_size`` on ``task``: ``"pop"``,
    ``"repeats"`` (:func:`evolax.sharding.split_axis`), or ``None`` without a mesh."""
    if mesh is None:
        return None
    return split_axis(pop_size, n_repeats, mesh.shape[POP_AXIS], agents_per_unit(task))


def local_share(mesh: Mesh | None, pop_size: int, n_repeats: int, task: Task) -> int:
    """Individuals each of ``mesh``'s devices evaluates: its slice of the population where the
    devices split it (:func:`mesh_split`), else the whole population."""
    split = mesh_split(mesh, pop_size, n_repeats, task)
    return pop_size // mesh.shape[POP_AXIS] if mesh is not None and split == "pop" else pop_size


def evaluate_on(
    policy: Policy,
    task: Task,
    population: Population,
    key: PRNGKey,
    n_repeats: int = 1,
    obs_stats: ObsStats | None = None,
    descriptors: bool = False,
    *,
    mesh: Mesh | None = None,
    pop_chunk: int | None = None,
    split: str | None = "auto",
    fixed_length: bool = False,
    loop: EpisodeLoop | None = None,
) -> tuple[Fitness, EvalInfo]:
    """:func:`~evolax.rollout.evaluate` on an explicit layout: over ``mesh``'s devices
    (``None``: one device), each evaluating its share in groups of ``pop_chunk`` individuals
    (``None``: all at once). The devices split ``split``: ``"pop"`` or ``"repeats"``
    (``"auto"``: :func:`mesh_split`'s choice); the results equal one device's.
    ``fixed_length`` and ``loop`` (the episode loop): as :func:`~evolax.rollout.evaluate`'s."""
    if split == "auto":
        split = mesh_split(mesh, population_size(population), n_repeats, task)
    if mesh is None:
        split = None

    def run(population, key, obs_stats, axis_name=None):
        return evaluate_shard(
            policy,
            task,
            population,
            key,
            n_repeats,
            obs_stats,
            descriptors,
            axis_name,
            pop_chunk,
            split_repeats=split == "repeats",
            fixed_length=fixed_length,
            loop=loop,
        )

    if split is None:
        return run(population, key, obs_stats)
    # PartitionSpecs stand in for the arrays of an EvalInfo of specs
    pop: Any
    replicated: Any
    replicated = P()
    pop = P(POP_AXIS) if split == "pop" else replicated
    info_specs = EvalInfo(
        returns=pop,
        lengths=pop,
        obs_stats=None if obs_stats is None else replicated,
        descriptors=pop if descriptors else None,
    )
    sharded = jax.shard_map(
        functools.partial(run, axis_name=POP_AXIS),
        mesh=mesh,
        in_specs=(per_part(population, replicated, pop), replicated, replicated),
        out_specs=(pop, info_specs),
        check_vma=False,
    )
    return sharded(population, key, obs_stats)
