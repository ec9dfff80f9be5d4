"""Evaluate a population on a task: every individual for ``n_repeats`` episodes.

``evaluate`` composes the rollout's pieces, each applied once: multi-agent assignment
(:mod:`~evolax.rollout.teams`), the task wrappers that normalise observations and record
descriptors (:mod:`~evolax.rollout.wrappers`), the episodes of devices' share of the repeats,
and the population in chunks (:func:`in_chunks`) around the episode loop
(:func:`~evolax.rollout.episode.run_episodes`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, PyTree

from evolax.compiled import compiled
from evolax.layout import EpisodeLoop
from evolax.normalize import ObsStats
from evolax.policies.base import Policy
from evolax.population import Members, map_batched, materialize, per_part
from evolax.rollout.episode import episode_keys, initial_states, run_episodes
from evolax.rollout.info import EvalInfo
from evolax.rollout.teams import agents_per_unit, as_teams, from_teams
from evolax.rollout.wrappers import DescribedState, NormalizedState, NormalizeObs, RecordDescriptor
from evolax.tasks.base import Task
from evolax.tasks.wrapper import unwrap
from evolax.types import Fitness, Population, PRNGKey
from evolax.validation import check_positive_int, population_size


def in_chunks(fn: Callable[[Population], PyTree], population: Population, chunk: int) -> PyTree:
    """``fn(population)`` computed on groups of ``chunk`` individuals one after another
    (``lax.map``); ``fn``'s outputs lead with the population axis, and are joined along it.
    The groups are consecutive members, or those a :class:`~evolax.population.Members` node
    chooses (:meth:`~evolax.population.Members.groups`)."""
    size = population_size(population)
    if chunk == size:
        return fn(population)
    own = population.groups(chunk) if isinstance(population, Members) else None
    if own is None:
        groups = map_batched(lambda x: x.reshape(size // chunk, chunk, *x.shape[1:]), population)
        restore: Callable[[Array], Array] = lambda x: x.reshape(size, *x.shape[2:])  # noqa: E731
    else:  # the node's own groups (whole antithetic pairs: evolax.seeded.Seeded.groups)
        groups, restore = own
    shared, batched = eqx.partition(groups, per_part(groups, True, False))
    out = jax.lax.map(lambda group: fn(eqx.combine(shared, group)), batched)
    return jax.tree.map(restore, out)


def _check_shapes(policy: Policy, task: Task, population: Population, key: PRNGKey) -> None:
    """Trace-time checks: the task's obs, the policy's action and the task's reward have the
    declared shapes."""
    n_agents = agents_per_unit(task)
    agents = (n_agents,) if n_agents > 1 else ()
    state = jax.eval_shape(task.reset, key)
    if tuple(state.obs.shape) != (*agents, *task.obs_shape):
        expected = "(n_agents, *task.obs_shape)" if agents else "task.obs_shape"
        raise ValueError(
            f"task.reset returned obs of shape {state.obs.shape}, expected {expected} "
            f"{(*agents, *task.obs_shape)}"
        )
    params = map_batched(lambda x: x[0], materialize(map_batched(lambda x: x[:1], population)))
    policy_state = jax.eval_shape(policy.reset, key)
    action, _ = jax.eval_shape(
        lambda p, *rest: policy.apply(policy.prepare(p), *rest),
        params,
        state.obs,
        policy_state,
        key,
    )
    if tuple(action.shape) != (*agents, *task.action_shape):
        raise ValueError(
            f"policy produced actions of shape {action.shape[len(agents) :]}, expected "
            f"task.action_shape {task.action_shape}"
        )
    if agents and task.reward_shape:
        raise ValueError("a multi-agent task's reward is one per agent: reward_shape must be ()")
    _, reward, _ = jax.eval_shape(task.step, state, action, key)
    if tuple(reward.shape) != (*agents, *task.reward_shape):
        expected = "(n_agents,)" if agents else "task.reward_shape"
        raise ValueError(
            f"task.step returned a reward of shape {tuple(reward.shape)}, expected {expected} "
            f"{(*agents, *task.reward_shape)}"
        )


def _local_repeats(initial: Any, n_repeats: int, axis_name: str | None) -> Any:
    """With ``split_repeats``: this device's consecutive share of the episodes."""
    if axis_name is None:
        raise ValueError("split_repeats needs the axis_name the devices split the episodes on")
    n_devices = jax.lax.axis_size(axis_name)
    if n_repeats % n_devices:
        raise ValueError(
            f"n_repeats={n_repeats} must divide evenly over the {n_devices} devices of "
            f"axis {axis_name!r} to split the episodes"
        )
    n_local = n_repeats // n_devices
    start = jax.lax.axis_index(axis_name) * n_local
    return jax.tree.map(lambda x: jax.lax.dynamic_slice_in_dim(x, start, n_local), initial)


@compiled
def evaluate(
    policy: Policy,
    task: Task,
    population: Population,
    key: PRNGKey,
    n_repeats: int = 1,
    obs_stats: ObsStats | None = None,
    descriptors: bool = False,
    fixed_length: bool = False,
    loop: EpisodeLoop | None = None,
) -> tuple[Fitness, EvalInfo]:
    """Run every individual for ``n_repeats`` episodes; fitness is the mean episode return.

    All individuals see the same ``n_repeats`` environment seeds (common random numbers), so
    fitness differences come from the parameters, not the luck of the draw. For a
    :class:`~evolax.tasks.MultiAgentTask`, consecutive groups of ``task.n_agents`` individuals
    share each environment (the population must be a multiple of ``n_agents``), and each
    individual's fitness is its own mean return. Rewards after an episode's ``done`` are
    ignored, and the loop stops once every episode is done (see
    :func:`~evolax.rollout.episode.run_episodes`).

    This is what an episode is; where it runs (over devices, in groups of individuals) is
    :func:`~evolax.rollout.sharded.evaluate_on`'s. A task with ``on_host``
    (:class:`~evolax.tasks.Gymnasium`) is evaluated by
    :func:`~evolax.rollout.host.evaluate_host` instead (eagerly, in worker processes, with
    the same keys, seeds and results).

    Args:
        policy: the policy network.
        task: the task.
        population: genome pytree with a leading ``pop`` axis.
        key: PRNG key for this evaluation (environment seeds and any policy noise).
        n_repeats: episodes per individual, positive.
        obs_stats: if given, observations are normalised with these statistics before the
            policy sees them, and ``info.obs_stats`` returns them updated with this rollout.
        descriptors: also return each individual's behaviour descriptor in
            ``info.descriptors`` (the task must define ``Task.descriptor``).
        fixed_length: run every episode for ``task.max_steps`` steps (``lax.scan``, the steps
            after ``done`` masked out) rather than stopping once all are done: the same
            results, and reverse-mode ``jax.grad`` goes through it. It overrides ``loop``.
        loop: the loop the episodes step in (:class:`~evolax.layout.EpisodeLoop`; ``None``:
            the while loop); every form gives the same results.

    Called eagerly, it compiles once per configuration (:mod:`evolax.compiled`).

    Returns:
        ``fitness`` (``f32[pop]``, or ``f32[pop, *task.reward_shape]``: the mean return of
        each objective) and an :class:`EvalInfo`.
    """
    return evaluate_shard(
        policy,
        task,
        population,
        key,
        n_repeats,
        obs_stats,
        descriptors,
        fixed_length=fixed_length,
        loop=loop,
    )


def evaluate_shard(
    policy: Policy,
    task: Task,
    population: Population,
    key: PRNGKey,
    n_repeats: int = 1,
    obs_stats: ObsStats | None = None,
    descriptors: bool = False,
    axis_name: str | None = None,
    pop_chunk: int | None = None,
    split_repeats: bool = False,
    fixed_length: bool = False,
    loop: EpisodeLoop | None = None,
) -> tuple[Fitness, EvalInfo]:
    """:func:`evaluate` of one device's share, in groups (the mechanism behind
    :func:`~evolax.rollout.sharded.evaluate_on`).

    Args:
        policy, task, population, key, n_repeats, obs_stats, descriptors, fixed_length, loop:
            as :func:`evaluate`'s.
        axis_name: when called per device inside ``shard_map``, the mesh axis the devices
            share the work along; the observation statistics are summed over it, so every
            device ends with the statistics of the whole evaluation.
        pop_chunk: evaluate the population in groups of this many individuals, one group
            after another (``lax.map``), instead of all at once; must divide the population.
            Convolutional policies on CPU run several times faster one individual at a time.
        split_repeats: with ``axis_name``, every device holds the whole population and runs
            its own share of the ``n_repeats`` episodes (which must divide evenly over the
            axis); the results are gathered, so each device returns those of all episodes,
            equal to an evaluation on one device. Without it, each device holds a slice of the
            population (its results are those of its slice).
    """
    check_positive_int("n_repeats", n_repeats)
    pop_size = population_size(population)
    chunk = pop_size if pop_chunk is None else pop_chunk
    check_positive_int("pop_chunk", chunk)
    if pop_size % chunk:
        raise ValueError(
            f"pop_chunk={pop_chunk} must divide the population evaluated here ({pop_size})"
        )
    n_agents = agents_per_unit(task)
    if pop_chunk is not None and chunk % n_agents:
        raise ValueError(
            f"pop_chunk={pop_chunk} must be a multiple of task.n_agents={n_agents}: each "
            "environment holds n_agents individuals"
        )
    if descriptors and n_agents > 1:
        raise ValueError("behaviour descriptors are not defined for multi-agent tasks")
    policy, units = as_teams(policy, task, population)
    _check_shapes(policy, task, units, key)

    if obs_stats is not None:  # sums about a pivot from the first episode of all
        first = task.reset(episode_keys(key, n_repeats)[0][0]).obs
        pivot = obs_stats.pivot(first.reshape(-1, *task.obs_shape)[0])
        task = NormalizeObs(task, obs_stats, pivot)
    if descriptors:
        task = RecordDescriptor(task)
    initial = initial_states(policy, task, key, n_repeats)
    if split_repeats:
        initial = _local_repeats(initial, n_repeats, axis_name)

    def play(group: Population) -> tuple[Array, Array, PyTree, PyTree]:
        returns, lengths, final = run_episodes(policy, task, group, initial, fixed_length, loop)
        sums = () if obs_stats is None else unwrap(final, NormalizedState).sums
        desc = unwrap(final, DescribedState).descriptor if descriptors else ()
        return returns, lengths, sums, desc

    returns, lengths, sums, desc = in_chunks(play, units, chunk // n_agents)
    returns, lengths = from_teams(returns, lengths, n_agents)
    if split_repeats:  # every device: the results of all episodes, in order
        returns, lengths, desc = jax.tree.map(
            lambda x: jax.lax.all_gather(x, axis_name, axis=1, tiled=True),
            (returns, lengths, desc),
        )
    new_stats = None
    if obs_stats is not None:
        sums = jax.tree.map(lambda x: jnp.sum(x, axis=(0, 1)), sums)
        if axis_name is not None:
            sums = jax.lax.psum(sums, axis_name)
        new_stats = obs_stats.merge(*sums, pivot)  # type: ignore[call-arg]
    info = EvalInfo(
        returns=returns,
        lengths=lengths,
        obs_stats=new_stats,
        descriptors=jnp.mean(desc, axis=1) if descriptors else None,
    )
    return jnp.mean(returns, axis=1), info
