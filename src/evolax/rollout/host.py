"""Evaluate a population on a host task: environments stepped in worker processes, actions
computed by the policy on the device, the two overlapped.

The population's ``pop * n_repeats`` episodes form one group, or, with the task's
``overlap``, two halves (of the population; of the repeats when there is one individual):
while the workers step one half's environments, the device computes the other half's
actions. Keys, seeds and the batching of the policy are those of
:func:`~evolax.rollout.evaluate` on a JAX task.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from evolax.normalize import ObsStats, shifted_sums
from evolax.policies.base import Policy
from evolax.policies.team import replicate
from evolax.population import materialize, pop_axes
from evolax.rollout.episode import episode_keys, prepare, step_keys
from evolax.rollout.info import EvalInfo
from evolax.tasks.base import Task
from evolax.types import Fitness, Population, PRNGKey
from evolax.validation import check_positive_int, population_size


def _act(policy, task, params, obs, policy_state, keys, t, stats, alive, pivot, sums):
    """Every environment's action at step ``t``: ``params`` ``[m, ...]``, ``obs`` ``[m, r,
    obs_dim]``, ``policy_state`` ``[m, r, ...]``, ``keys`` ``[r]`` (episode step keys); with
    ``stats``, ``sums`` plus the shifted sums of the observations of the episodes still
    ``alive`` (``bool[m, r]``), as :class:`~evolax.rollout.wrappers.NormalizeObs` adds them."""

    def one(params, obs, policy_state, key):
        if stats is not None:
            obs = stats.normalize(obs)
        action, policy_state = policy.apply(params, obs, policy_state, step_keys(key, t)[0])
        return task.env_action(action), policy_state

    each = jax.vmap(one, in_axes=(None, 0, 0, 0))
    batched = jax.vmap(each, in_axes=(pop_axes(params), 0, 0, None))
    actions, policy_state = batched(params, obs, policy_state, keys)
    if stats is not None:
        sums = jax.tree.map(jnp.add, sums, shifted_sums(obs, alive, pivot))
    return actions, policy_state, sums


@functools.lru_cache(maxsize=8)
def _hashed_actor(policy: Policy, task: Task) -> Callable:
    return jax.jit(functools.partial(_act, policy, task))


def _actor(policy: Policy, task: Task) -> Callable:
    """:func:`_act` compiled for ``policy`` and ``task``: a ``jax.jit`` over the arrays alone
    where they hash (called at every step, it costs a fraction of ``filter_jit``'s call)."""
    try:
        return _hashed_actor(policy, task)
    except TypeError:  # a policy or task holding arrays
        return functools.partial(eqx.filter_jit(_act), policy, task)


@eqx.filter_jit
def _start(policy, population, key, n_repeats):
    """The evaluation's members as the policy uses them, reset seeds and policy states."""
    population = prepare(policy, materialize(population))
    reset_keys, policy_keys, step_keys_ = episode_keys(key, n_repeats)
    seeds = jax.vmap(lambda k: jax.random.randint(k, (), 0, jnp.iinfo(jnp.int32).max))(reset_keys)
    return population, seeds, jax.vmap(policy.reset)(policy_keys), step_keys_


class _Group:
    """One group's episodes: members ``members`` on repeats ``repeats``, and their record."""

    def __init__(self, index, members, repeats, params, policy_state, keys, seeds, pool):
        self.index, self.members, self.repeats = index, members, repeats
        self.params, self.policy_state, self.keys = params, policy_state, keys
        shape = (members.stop - members.start, repeats.stop - repeats.start)
        self.shape = shape
        self.obs = pool.reset(index, np.tile(seeds[repeats], shape[0])).reshape(*shape, -1)
        self.returns = np.zeros(shape)
        self.lengths = np.zeros(shape, np.int32)
        self.alive = np.ones(shape, bool)
        self.t = 0
        self.sums: Any = None  # with statistics: shifted sums of the observations acted on


def _take(tree: Any, part: slice) -> Any:
    return jax.tree.map(lambda x: x[part], tree)


def _groups(pop_size: int, n_repeats: int, overlap: bool) -> list[tuple[slice, slice]]:
    """The members and repeats of each group: one, or two halves of the larger split."""
    everything = (slice(0, pop_size), slice(0, n_repeats))
    if not overlap or pop_size * n_repeats < 2:
        return [everything]
    if pop_size >= 2:
        half = (pop_size + 1) // 2
        return [(slice(0, half), everything[1]), (slice(half, pop_size), everything[1])]
    half = (n_repeats + 1) // 2
    return [(everything[0], slice(0, half)), (everything[0], slice(half, n_repeats))]


def _check_concrete(task: Task, *values: Any) -> None:
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(values)):
        raise TypeError(
            f"{type(task).__name__}({getattr(task, 'env_id', '')!r}) steps on the host: it "
            "cannot be evaluated inside jit, vmap or scan; call evaluate, Trainer.step or "
            "Trainer.run directly (evolax.train does)"
        )


def evaluate_host(
    policy: Policy,
    task: Task,
    population: Population,
    key: PRNGKey,
    n_repeats: int = 1,
    obs_stats: ObsStats | None = None,
) -> tuple[Fitness, EvalInfo]:
    """:func:`~evolax.rollout.evaluate` for a task with ``on_host`` (e.g.
    :class:`~evolax.tasks.Gymnasium`); same arguments and results, called eagerly.

    Raises:
        HostError: a worker died, hung past the task's ``timeout``, or an environment raised.
    """
    check_positive_int("n_repeats", n_repeats)
    _check_concrete(task, population, key, obs_stats)
    pool = task.pool()  # type: ignore[attr-defined]
    pop_size = population_size(population)
    members, seeds, policy_states, keys = _start(policy, population, key, n_repeats)
    seeds = np.asarray(seeds)
    groups = []
    for index, (who, which) in enumerate(_groups(pop_size, n_repeats, task.overlap)):  # type: ignore[attr-defined]
        params = _take(members, who) if who.stop - who.start < pop_size else members
        states = replicate(_take(policy_states, which), who.stop - who.start)
        groups.append(_Group(index, who, which, params, states, keys[which], seeds, pool))
    pivot = None
    if obs_stats is not None:  # sums about the first episode's first observation, as evaluate's
        pivot = obs_stats.pivot(jnp.asarray(groups[0].obs[0, 0]))
        zeros = jnp.zeros_like(pivot)
        for group in groups:
            group.sums = (jnp.zeros([], pivot.dtype), zeros, zeros)

    act = _actor(policy, task)

    def step(group: _Group) -> None:
        """Compute and send ``group``'s actions (the device works while the workers step)."""
        t = np.int32(group.t)  # an array: each step's t is not a new program
        alive = None if pivot is None else group.alive
        actions, group.policy_state, group.sums = act(
            group.params,
            group.obs,
            group.policy_state,
            group.keys,
            t,
            obs_stats,
            alive,
            pivot,
            group.sums,
        )
        pool.submit(group.index, np.asarray(actions).reshape(-1, *np.shape(actions)[2:]))

    def collect(group: _Group) -> None:
        obs, reward, done = pool.collect(group.index)
        group.obs = obs.reshape(*group.shape, -1)
        group.returns += np.where(group.alive, reward.reshape(group.shape), 0.0)
        group.lengths += group.alive
        group.alive &= ~done.reshape(group.shape)
        group.t += 1

    running = list(groups)
    for group in running:
        step(group)
    while running:
        for group in list(running):
            collect(group)
            if group.t < task.max_steps and group.alive.any():
                step(group)
            else:
                running.remove(group)

    returns = np.zeros((pop_size, n_repeats), np.float32)
    lengths = np.zeros((pop_size, n_repeats), np.int32)
    for group in groups:
        returns[group.members, group.repeats] = group.returns
        lengths[group.members, group.repeats] = group.lengths
    new_stats = None
    if obs_stats is not None and pivot is not None:  # the one implies the other
        count, total, total_sq = jax.tree.map(lambda *parts: sum(parts), *(g.sums for g in groups))
        new_stats = obs_stats.merge(count, total, total_sq, pivot)
    info = EvalInfo(returns=jnp.asarray(returns), lengths=jnp.asarray(lengths), obs_stats=new_stats)
    return jnp.mean(info.returns, axis=1), info
