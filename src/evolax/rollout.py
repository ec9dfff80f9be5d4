"""Evaluate a population on a task: every individual for ``n_repeats`` episodes."""

from __future__ import annotations

from typing import Any

import chex
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int, PyTree

from evolax.normalize import ObsStats, shifted_sums
from evolax.policies.base import Policy
from evolax.policies.team import Team, replicate
from evolax.tasks.base import MultiAgentTask, Task
from evolax.types import Fitness, Population, PRNGKey
from evolax.validation import check_positive_int, population_size


@chex.dataclass(frozen=True)
class EvalInfo:
    """What :func:`evaluate` measured besides fitness.

    Attributes:
        returns: total reward of each episode, ``f32[pop, n_repeats]``.
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


def _agents(task: Task) -> tuple[int, ...]:
    """``(n_agents,)`` for a multi-agent task (its obs and actions lead with it), else ``()``."""
    return (task.n_agents,) if isinstance(task, MultiAgentTask) else ()


def _check_shapes(policy: Policy, task: Task, population: Population, key: PRNGKey) -> None:
    """Trace-time checks: the task's obs and the policy's action have the declared shapes."""
    agents = _agents(task)
    state = jax.eval_shape(task.reset, key)
    if tuple(state.obs.shape) != (*agents, *task.obs_shape):
        expected = "(n_agents, *task.obs_shape)" if agents else "task.obs_shape"
        raise ValueError(
            f"task.reset returned obs of shape {state.obs.shape}, expected {expected} "
            f"{(*agents, *task.obs_shape)}"
        )
    params = jax.tree.map(lambda x: x[0], population)
    policy_state = jax.eval_shape(policy.reset, key)
    action, _ = jax.eval_shape(policy.apply, params, state.obs, policy_state, key)
    if tuple(action.shape) != (*agents, *task.action_shape):
        raise ValueError(
            f"policy produced actions of shape {action.shape[len(agents) :]}, expected "
            f"task.action_shape {task.action_shape}"
        )


def _expand(mask: Array, shape: tuple[int, ...]) -> Array:
    """``mask`` (leading axes of ``shape``) broadcast over ``shape``'s trailing axes."""
    return jnp.broadcast_to(mask.reshape(mask.shape + (1,) * (len(shape) - mask.ndim)), shape)


def episode_keys(key: PRNGKey, n_repeats: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The keys of ``evaluate``'s ``n_repeats`` episodes: task reset, policy reset, steps."""
    keys = jax.vmap(lambda k: jax.random.split(k, 3))(jax.random.split(key, n_repeats))
    return keys[:, 0], keys[:, 1], keys[:, 2]


def step_keys(episode_step_key: PRNGKey, t: Int[ArrayLike, ""]) -> tuple[jax.Array, jax.Array]:
    """The policy key and the task key of step ``t`` of an episode."""
    keys = jax.random.split(jax.random.fold_in(episode_step_key, t))
    return keys[0], keys[1]


def _initial_states(policy, task, key, n_repeats):
    """The ``n_repeats`` episodes' initial task and policy states and their step keys, shared
    by the whole population (computed once, even when the population is evaluated in groups)."""
    reset_keys, policy_keys, episode_step_keys = episode_keys(key, n_repeats)
    return jax.vmap(task.reset)(reset_keys), jax.vmap(policy.reset)(policy_keys), episode_step_keys


def _rollout(policy, task, population, initial, n_repeats, obs_stats, pivot, descriptors=False):
    """``evaluate``'s episodes: returns, lengths, obs sums (shifted by ``pivot``) and, if
    asked, the descriptors of the states where episodes ended (``()`` if not), of a population."""
    pop_size = population_size(population)
    task_state, policy_state, episode_step_keys = initial
    obs_rank = len(task.obs_shape)  # the axes before an observation: [repeats] (+ [agents])
    # Any: None without descriptors, and then never called
    describe: Any = jax.vmap(jax.vmap(task.descriptor)) if descriptors else None

    if task.max_steps == 1:
        # One step, reading the initial states shared by the population (in_axes None), so a
        # batch of data in the observation is never copied per individual. Inner vmap: the
        # repeats sharing one individual's params; outer vmap: the population.
        act = jax.vmap(
            jax.vmap(policy.apply, in_axes=(None, 0, 0, 0)), in_axes=(0, None, None, None)
        )
        step = jax.vmap(jax.vmap(task.step), in_axes=(None, 0, None))
        obs = task_state.obs
        sums: tuple[Array, ...] = ()
        if obs_stats is not None:
            count, total, squares = shifted_sums(obs, jnp.ones(obs.shape[:-obs_rank], bool), pivot)
            sums = (count * pop_size, total * pop_size, squares * pop_size)
            obs = obs_stats.normalize(obs)
        policy_keys, task_keys = jax.vmap(step_keys, in_axes=(0, None))(episode_step_keys, 0)
        action, _ = act(population, obs, policy_state, policy_keys)
        task_state, reward, _ = step(task_state, action, task_keys)
        lengths = jnp.ones((pop_size, n_repeats), jnp.int32)
        desc = describe(task_state) if descriptors else ()
        return reward.astype(jnp.float32), lengths, sums, desc

    # Several steps: the initial states are broadcast over the population and every step runs
    # in the loop, so the policy and the task are traced and compiled once.
    act = jax.vmap(jax.vmap(policy.apply, in_axes=(None, 0, 0, 0)), in_axes=(0, 0, 0, None))
    step = jax.vmap(jax.vmap(task.step), in_axes=(0, 0, None))

    task_state, policy_state = replicate(task_state, pop_size), replicate(policy_state, pop_size)
    agents = (task.n_agents,) if isinstance(task, MultiAgentTask) else ()  # rewards per agent
    sums = ()
    if obs_stats is not None:  # count, sum and sum of squares of the observations seen
        dtype = task_state.obs.dtype
        sums = (
            jnp.zeros([], dtype),
            jnp.zeros(task.obs_shape, dtype),
            jnp.zeros(task.obs_shape, dtype),
        )

    def body(carry):
        t, task_state, policy_state, returns, lengths, alive, sums, desc = carry
        obs = task_state.obs
        if obs_stats is not None:
            mask = _expand(alive, obs.shape[:-obs_rank])
            sums = jax.tree.map(jnp.add, sums, shifted_sums(obs, mask, pivot))
            obs = obs_stats.normalize(obs)
        policy_keys, task_keys = jax.vmap(step_keys, in_axes=(0, None))(episode_step_keys, t)
        action, policy_state = act(population, obs, policy_state, policy_keys)
        task_state, reward, done = step(task_state, action, task_keys)
        returns = returns + jnp.where(_expand(alive, reward.shape), reward, 0.0)
        lengths = lengths + alive
        if descriptors:  # the descriptor of the state each episode ended in
            desc = jnp.where(alive[..., None], describe(task_state), desc)
        alive = alive & ~done
        return t + 1, task_state, policy_state, returns, lengths, alive, sums, desc

    def cond(carry):
        t, *_, alive, _, _ = carry
        return (t < task.max_steps) & jnp.any(alive)

    carry = (
        jnp.zeros([], jnp.int32),
        task_state,
        policy_state,
        jnp.zeros((pop_size, n_repeats, *agents), jnp.float32),
        jnp.zeros((pop_size, n_repeats), jnp.int32),
        jnp.ones((pop_size, n_repeats), bool),
        sums,
        describe(task_state) if descriptors else (),
    )
    _, _, _, returns, lengths, _, sums, desc = jax.lax.while_loop(cond, body, carry)
    return returns, lengths, sums, desc


def evaluate(
    policy: Policy,
    task: Task,
    population: Population,
    key: PRNGKey,
    n_repeats: int = 1,
    obs_stats: ObsStats | None = None,
    axis_name: str | None = None,
    pop_chunk: int | None = None,
    descriptors: bool = False,
    split_repeats: bool = False,
) -> tuple[Fitness, EvalInfo]:
    """Run every individual for ``n_repeats`` episodes; fitness is the mean episode return.

    All individuals see the same ``n_repeats`` environment seeds (common random numbers), so
    fitness differences come from the parameters, not the luck of the draw. For a
    :class:`~evolax.tasks.MultiAgentTask`, consecutive groups of ``task.n_agents`` individuals
    share each environment (the population must be a multiple of ``n_agents``), and each
    individual's fitness is its own mean return. Rewards after an
    episode's ``done`` are ignored, and the loop stops once every episode is done.

    The policy is batched over repeats with shared parameters, then over the population, so a
    dense layer runs as a batched matmul ``[pop, repeats, in] @ [pop, in, out]``.

    Args:
        policy: the policy network.
        task: the task.
        population: genome pytree with a leading ``pop`` axis.
        key: PRNG key for this evaluation (environment seeds and any policy noise).
        n_repeats: episodes per individual, positive.
        obs_stats: if given, observations are normalised with these statistics before the
            policy sees them, and ``info.obs_stats`` returns them updated with this rollout.
        axis_name: when called per device inside ``shard_map``, the mesh axis the devices
            share the work along; the observation statistics are summed over it, so every
            device ends with the statistics of the whole evaluation.
        pop_chunk: evaluate the population in groups of this many individuals, one group
            after another (``lax.map``), instead of all at once; must divide the population.
            Convolutional policies on CPU run several times faster one individual at a time.
        descriptors: also return each individual's behaviour descriptor in
            ``info.descriptors`` (the task must define ``Task.descriptor``).
        split_repeats: with ``axis_name``, every device holds the whole population and runs
            its own share of the ``n_repeats`` episodes (which must divide evenly over the
            axis); the results are gathered, so each device returns those of all episodes,
            equal to an evaluation on one device. Without it, each device holds a slice of the
            population (its results are those of its slice).

    Returns:
        ``fitness`` (``f32[pop]``) and an :class:`EvalInfo`.
    """
    check_positive_int("n_repeats", n_repeats)
    pop_size = population_size(population)
    chunk = pop_size if pop_chunk is None else pop_chunk
    check_positive_int("pop_chunk", chunk)
    if pop_size % chunk:
        raise ValueError(
            f"pop_chunk={pop_chunk} must divide the population evaluated here ({pop_size})"
        )
    n_agents = 1
    if isinstance(task, MultiAgentTask):  # units of the rollout: environments of n_agents
        n_agents = task.n_agents
        if chunk % n_agents:
            what = "population evaluated here" if pop_chunk is None else "pop_chunk"
            raise ValueError(
                f"the {what} ({chunk}) must be a multiple of task.n_agents={n_agents}: each "
                "environment holds n_agents individuals"
            )
        if descriptors:
            raise ValueError("behaviour descriptors are not defined for multi-agent tasks")
        policy = Team(policy, n_agents)
        population = jax.tree.map(
            lambda x: x.reshape(pop_size // n_agents, n_agents, *x.shape[1:]), population
        )
    _check_shapes(policy, task, population, key)
    n_units, chunk = pop_size // n_agents, chunk // n_agents

    initial = _initial_states(policy, task, key, n_repeats)
    pivot: PyTree = ()  # from the first episode of all, the same on every device
    if obs_stats is not None:
        pivot = obs_stats.pivot(initial[0].obs.reshape(-1, *task.obs_shape)[0])
    n_local = n_repeats
    if split_repeats:
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
        initial = jax.tree.map(lambda x: jax.lax.dynamic_slice_in_dim(x, start, n_local), initial)
    if chunk == n_units:
        returns, lengths, sums, desc = _rollout(
            policy, task, population, initial, n_local, obs_stats, pivot, descriptors
        )
    else:  # groups of `chunk` units one after another
        groups = jax.tree.map(
            lambda x: x.reshape(n_units // chunk, chunk, *x.shape[1:]), population
        )
        returns, lengths, sums, desc = jax.lax.map(
            lambda group: _rollout(
                policy, task, group, initial, n_local, obs_stats, pivot, descriptors
            ),
            groups,
        )
        returns, lengths = (x.reshape(n_units, *x.shape[2:]) for x in (returns, lengths))
        desc = jax.tree.map(lambda x: x.reshape(pop_size, n_local, *x.shape[3:]), desc)
        sums = jax.tree.map(lambda x: jnp.sum(x, axis=0), sums)
    if isinstance(task, MultiAgentTask):  # [envs, repeats, agents] -> [pop, repeats]
        returns = jnp.moveaxis(returns, -1, 1).reshape(pop_size, n_local)
        lengths = jnp.repeat(lengths, n_agents, axis=0)
    if split_repeats:  # every device: the results of all episodes, in order
        returns, lengths, desc = jax.tree.map(
            lambda x: jax.lax.all_gather(x, axis_name, axis=1, tiled=True),
            (returns, lengths, desc),
        )
    if axis_name is not None:
        sums = jax.lax.psum(sums, axis_name)
    new_stats = None if obs_stats is None else obs_stats.merge(*sums, pivot)  # type: ignore[call-arg]
    info = EvalInfo(
        returns=returns,
        lengths=lengths,
        obs_stats=new_stats,
        descriptors=jnp.mean(desc, axis=1) if descriptors else None,
    )
    return jnp.mean(returns, axis=1), info
