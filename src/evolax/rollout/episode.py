"""Episodes: their keys, one step of one agent, and the loop that runs a batch of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int

from evolax.layout import EpisodeLoop, loop_for
from evolax.policies.base import Policy
from evolax.population import materialize, pop_axes
from evolax.rollout.fused import run_fused_episodes
from evolax.tasks.base import Task
from evolax.types import Done, Params, Population, PRNGKey, Reward
from evolax.validation import population_size

_MEMBERS, _REPEATS = "evolax_episode_members", "evolax_episode_repeats"
"""The names of the episode loop's batch axes (the while loop's test reduces over them)."""


def episode_keys(key: PRNGKey, n_repeats: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The keys of ``evaluate``'s ``n_repeats`` episodes: task reset, policy reset, steps."""
    keys = jax.vmap(lambda k: jax.random.split(k, 3))(jax.random.split(key, n_repeats))
    return keys[:, 0], keys[:, 1], keys[:, 2]


def step_keys(episode_step_key: PRNGKey, t: Int[ArrayLike, ""]) -> tuple[jax.Array, jax.Array]:
    """The policy key and the task key of step ``t`` of an episode."""
    keys = jax.random.split(jax.random.fold_in(episode_step_key, t))
    return keys[0], keys[1]


def initial_states(policy: Policy, task: Task, key: PRNGKey, n_repeats: int) -> tuple[Any, ...]:
    """The ``n_repeats`` episodes' initial task and policy states and their step keys (each
    with a leading ``repeats`` axis), shared by the whole population."""
    reset_keys, policy_keys, episode_step_keys = episode_keys(key, n_repeats)
    return jax.vmap(task.reset)(reset_keys), jax.vmap(policy.reset)(policy_keys), episode_step_keys


def transition(
    policy: Policy,
    task: Task,
    params: Params,
    episode_step_key: PRNGKey,
    t: Int[ArrayLike, ""],
    task_state: Any,
    policy_state: Any,
) -> tuple[Any, Any, Reward, Done]:
    """Step ``t`` of one episode: the policy acts on ``task_state.obs``, the task steps.

    Returns:
        ``(task_state, policy_state, reward, done)`` after the step.
    """
    policy_key, task_key = step_keys(episode_step_key, t)
    action, policy_state = policy.apply(params, task_state.obs, policy_state, policy_key)
    task_state, reward, done = task.step(task_state, action, task_key)
    return task_state, policy_state, reward, done


def prepare(policy: Policy, population: Population) -> Population:
    """Each member as :meth:`Policy.prepare` makes it, once per episode batch (a policy that
    keeps the default gets its population back as it is)."""
    if type(policy).prepare is Policy.prepare:
        return population
    return jax.vmap(policy.prepare)(population)


def run_episodes(
    policy: Policy,
    task: Task,
    population: Population,
    initial: tuple[Any, ...],
    fixed_length: bool = False,
    loop: EpisodeLoop | None = None,
) -> tuple[Float[Array, "pop repeats *agents_objectives"], Int[Array, "pop repeats"], Any]:
    """Every individual of ``population`` plays every episode of ``initial`` (see
    :func:`initial_states`) to its first ``done`` or ``task.max_steps``.

    Rewards after an episode's ``done`` are ignored. The steps run in ``loop``
    (:class:`~evolax.layout.EpisodeLoop`; default: a ``lax.while_loop`` that stops once every
    episode is done); with ``fixed_length``, in a ``lax.scan`` over all ``task.max_steps``
    steps, which reverse-mode differentiation can go through. Every loop gives the same
    results. The policy is batched over repeats with shared parameters, then over the
    population, so a dense layer runs as a batched matmul ``[pop, repeats, in] @ [pop, in,
    out]``.

    Returns:
        ``(returns, lengths, final)``: each episode's total reward (per agent of a
        multi-agent task, per objective of a task with a ``reward_shape``), its steps until
        ``done``, and the task states it ended in (for
        the records of wrapped tasks), all with leading axes ``[pop, repeats]``.
    """
    loop = loop_for(loop, fixed_length)
    if loop.form == "fused" and task.max_steps > 1:
        return run_fused_episodes(
            policy,
            task,
            population,
            initial,
            steps_per_launch=cast(int, loop.block),
            interpret=loop.interpret,
        )
    pop_size = population_size(population)
    population = materialize(population)  # seed-held members: drawn once per episode batch
    population = prepare(policy, population)
    members = pop_axes(population)
    task_state, policy_state, episode_step_keys = initial
    n_repeats = episode_step_keys.shape[0]

    if task.max_steps == 1:
        # One step, reading the initial states shared by the population (in_axes None), so a
        # batch of data in the observation is never copied per individual. Inner vmap: the
        # repeats sharing one individual's params; outer vmap: the population.
        one = jax.vmap(transition, in_axes=(None, None, None, 0, None, 0, 0))
        task_state, _, reward, _ = jax.vmap(
            one, in_axes=(None, None, members, None, None, None, None)
        )(policy, task, population, episode_step_keys, 0, task_state, policy_state)
        lengths = jnp.ones((pop_size, n_repeats), jnp.int32)
        return reward.astype(jnp.float32), lengths, task_state

    # Several steps: one episode of one individual is written as a loop, batched over the
    # repeats (sharing the individual's params) and then over the population, with the
    # initial states shared by the population (in_axes None). Batching the loop, rather than
    # looping over a batched step, leaves unbatched what the steps never make differ between
    # individuals (an environment's own key, its rules or parameters): JAX's loop batching
    # finds them, which a state broadcast over the population up front would hide. The
    # population and repeat axes are named, so the test of the while loop (is any episode
    # still running?) is one value for the whole batch, as a loop over the batch would test.
    agents = task_state.obs.shape[1 : task_state.obs.ndim - len(task.obs_shape)]
    agents = (*agents, *task.reward_shape)
    # one episode: its initial state, shared by all, stays unbatched until a step changes it
    shared = n_repeats == 1
    if shared:
        task_state, policy_state, episode_step_keys = jax.tree.map(
            lambda x: x[0], (task_state, policy_state, episode_step_keys)
        )

    def episode(params, episode_step_key, task_state, policy_state):
        def body(carry):
            t, task_state, policy_state, ret, length, alive = carry
            task_state, policy_state, reward, done = transition(
                policy, task, params, episode_step_key, t, task_state, policy_state
            )
            ret = ret + jnp.where(alive, reward, 0.0)
            return t + 1, task_state, policy_state, ret, length + alive, alive & ~done

        def cond(carry):
            t, *_, alive = carry
            return (t < task.max_steps) & jax.lax.pmax(alive, (_MEMBERS, _REPEATS))

        def scan(advance, carry, length):
            carry, _ = jax.lax.scan(
                lambda c, _: (advance(c), None), carry, length=length, unroll=loop.unroll
            )
            return carry

        carry = (
            jnp.zeros([], jnp.int32),
            task_state,
            policy_state,
            jnp.zeros(agents, jnp.float32),
            jnp.zeros([], jnp.int32),
            jnp.ones([], bool),
        )
        if loop.form == "scan":  # every step; those after the episode's end masked (`alive`)
            carry = scan(body, carry, task.max_steps)
        elif loop.form == "chunked":
            block = min(cast(int, loop.block), task.max_steps)
            # where the last block runs past max_steps, those steps leave the carry as it was
            advance = body if task.max_steps % block == 0 else _within(body, task.max_steps)
            carry = jax.lax.while_loop(cond, lambda c: scan(advance, c, block), carry)
        else:
            carry = jax.lax.while_loop(cond, body, carry)
        _, task_state, _, ret, length, _ = carry
        return ret, length, task_state

    repeats = None if shared else 0
    each = jax.vmap(
        episode, in_axes=(None, repeats, repeats, repeats), axis_size=n_repeats, axis_name=_REPEATS
    )
    return jax.vmap(each, in_axes=(members, None, None, None), axis_name=_MEMBERS)(
        population, episode_step_keys, task_state, policy_state
    )


def _within(body: Callable[[Any], Any], max_steps: int) -> Callable[[Any], Any]:
    """``body`` (of a carry whose first entry is the step count ``t``) where ``t <
    max_steps``; the carry unchanged from there on."""

    def step(carry):
        new = body(carry)
        return jax.tree.map(lambda n, o: jax.lax.select(carry[0] < max_steps, n, o), new, carry)

    return step
