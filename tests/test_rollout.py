"""`evaluate` on a task with closed-form returns."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax import MLP, CartPoleSwingUp, ObsStats, evaluate
from evolax.rollout import evaluate_on
from helpers import Constant, Countdown, Linear, LinearRegression


def lengths_for(key, n_repeats):
    """The episode lengths `evaluate` draws: the first of each repeat's three subkeys."""
    keys = jax.random.split(key, n_repeats)
    return np.array([int(Countdown.episode_length(jax.random.split(k, 3)[0])) for k in keys])


def test_returns_stop_at_done_and_average_over_repeats(key):
    population = {"c": jnp.array([1.0, 2.0, -0.5])}
    fitness, info = evaluate(Constant(), Countdown(), population, key, n_repeats=5)
    lengths = lengths_for(key, 5)
    assert len(set(lengths)) > 1  # the episodes really differ in length
    np.testing.assert_array_equal(info.lengths, np.tile(lengths, (3, 1)))
    np.testing.assert_allclose(info.returns, np.outer([1.0, 2.0, -0.5], lengths))
    np.testing.assert_allclose(fitness, np.array([1.0, 2.0, -0.5]) * lengths.mean(), rtol=1e-6)


def test_common_random_numbers_and_fresh_seeds(key):
    population = {"c": jnp.ones(4)}
    _, info = evaluate(Constant(), Countdown(), population, key, n_repeats=8)
    lengths = np.asarray(info.lengths)
    assert np.all(lengths == lengths[:1])  # every individual sees the same episodes
    _, other = evaluate(Constant(), Countdown(), population, jax.random.key(99), n_repeats=8)
    assert not np.array_equal(info.lengths[0], other.lengths[0])  # a new key, new episodes


def test_early_exit_when_all_done(key):
    population = {"c": jnp.ones(2)}
    task = Countdown(max_steps=2**30)  # would never finish without the early exit
    fitness, _ = jax.jit(lambda p, k: evaluate(Constant(), task, p, k, n_repeats=3))(
        population, key
    )
    np.testing.assert_allclose(fitness, lengths_for(key, 3).mean())


def test_obs_statistics_match_numpy(key):
    population = {"c": jnp.ones(3)}
    start = ObsStats.zeros((2,))
    _, info = evaluate(Constant(), Countdown(), population, key, n_repeats=4, obs_stats=start)
    # observed before each alive step: t = 0 .. length - 1, obs = [t, t^2], for each individual
    seen = np.array(
        [[t, t * t] for length in lengths_for(key, 4) for t in range(length)] * 3, float
    )
    stats = info.obs_stats
    assert float(stats.count) == len(seen)
    np.testing.assert_allclose(stats.mean, seen.mean(0), rtol=1e-5)
    np.testing.assert_allclose(stats.variance(), seen.var(0), rtol=1e-4)


def test_mlp_batches_as_separate_evaluations(key):
    policy, task = MLP(hidden_sizes=(8,)), CartPoleSwingUp(max_steps=30)
    params = [policy.init(k, (5,), (1,)) for k in jax.random.split(key, 3)]
    population = jax.tree.map(lambda *x: jnp.stack(x), *params)
    fitness, _ = evaluate(policy, task, population, key, n_repeats=2)
    for i, p in enumerate(params):
        single, _ = evaluate(policy, task, jax.tree.map(lambda x: x[None], p), key, n_repeats=2)
        np.testing.assert_allclose(fitness[i], single[0], rtol=1e-5)


def test_wrong_action_shape(key):
    with pytest.raises(
        ValueError, match=r"actions of shape \(2,\), expected task.action_shape \(1,\)"
    ):
        evaluate(Constant(action_size=2), Countdown(), {"c": jnp.ones(2)}, key)


@pytest.mark.parametrize("n_repeats", [0, -1, 1.5])
def test_bad_n_repeats(key, n_repeats):
    with pytest.raises(ValueError, match="n_repeats"):
        evaluate(Constant(), Countdown(), {"c": jnp.ones(2)}, key, n_repeats=n_repeats)


def test_ragged_population(key):
    with pytest.raises(ValueError, match="leading pop axis"):
        evaluate(Constant(), Countdown(), {"c": jnp.ones(2), "d": jnp.ones(3)}, key)


def test_one_step_task_shares_its_batch_across_the_population(key):
    """The first observation (a 1 MiB batch) is read in place, never copied per individual."""
    task, pop = LinearRegression(), 64
    population = {"w": jnp.stack([jnp.full(64, c) for c in jnp.linspace(0.0, 2.0, pop)])}
    run = jax.jit(lambda p, k: evaluate(Linear(), task, p, k, n_repeats=1))
    fitness, info = run(population, key)
    # w = 1 predicts the target exactly; the error grows as (c - 1)^2 * features
    best = int(jnp.argmax(fitness))
    assert abs(float(population["w"][best, 0]) - 1.0) < 0.02
    np.testing.assert_array_equal(info.lengths, 1)
    batch_bytes = 4096 * 64 * 4
    temp = run.lower(population, key).compile().memory_analysis().temp_size_in_bytes
    assert temp < 8 * batch_bytes, temp  # a per-individual copy would need 64 batches


@pytest.mark.parametrize("pop_chunk", [1, 2])
def test_evaluating_in_groups_equals_all_at_once(key, pop_chunk):
    policy, task = MLP(hidden_sizes=(8,)), CartPoleSwingUp(max_steps=40)
    params = [policy.init(k, (5,), (1,)) for k in jax.random.split(key, 4)]
    population = jax.tree.map(lambda *x: jnp.stack(x), *params)
    stats = ObsStats.zeros((5,))
    whole, info = evaluate(policy, task, population, key, n_repeats=3, obs_stats=stats)
    grouped, info_g = evaluate_on(
        policy, task, population, key, n_repeats=3, obs_stats=stats, pop_chunk=pop_chunk
    )
    np.testing.assert_allclose(grouped, whole, rtol=1e-5)
    np.testing.assert_array_equal(info_g.lengths, info.lengths)
    assert float(info_g.obs_stats.count) == float(info.obs_stats.count)
    np.testing.assert_allclose(info_g.obs_stats.mean, info.obs_stats.mean, rtol=1e-5)
    with pytest.raises(ValueError, match="pop_chunk=3 must divide the population"):
        evaluate_on(policy, task, population, key, pop_chunk=3)


def test_wrappers_stack_in_either_order(key):
    """Observation normalisation and descriptor records are task wrappers: stacked either way
    around, each sees the episode as it would alone."""
    from evolax.rollout import NormalizeObs, RecordDescriptor, initial_states, run_episodes
    from evolax.rollout.wrappers import DescribedState, NormalizedState
    from evolax.tasks.wrapper import unwrap

    policy, task = MLP(hidden_sizes=(8,)), CartPoleSwingUp(max_steps=40)
    params = [policy.init(k, (5,), (1,)) for k in jax.random.split(key, 3)]
    population = jax.tree.map(lambda *x: jnp.stack(x), *params)
    stats = ObsStats(count=jnp.array(4.0), mean=jnp.full(5, 0.1), m2=jnp.full(5, 8.0))
    normalized = NormalizeObs(task, stats, jnp.zeros(5))
    stacks = [
        RecordDescriptor(normalized),
        NormalizeObs(RecordDescriptor(task), stats, jnp.zeros(5)),
    ]
    results = []
    for stack in stacks:
        assert (stack.obs_shape, stack.action_shape, stack.max_steps) == ((5,), (1,), 40)
        returns, lengths, final = run_episodes(
            policy, stack, population, initial_states(policy, stack, key, 2)
        )
        results.append(
            (
                returns,
                lengths,
                unwrap(final, NormalizedState).sums,
                unwrap(final, DescribedState).descriptor,
            )
        )
    alone, _, _ = run_episodes(
        policy, normalized, population, initial_states(policy, normalized, key, 2)
    )
    for got in results:
        jax.tree.map(np.testing.assert_array_equal, got, results[0])
    returns, lengths, sums, _ = results[0]
    np.testing.assert_array_equal(returns, alone)  # the descriptor records change nothing
    assert float(jnp.sum(sums[0])) == float(jnp.sum(lengths))  # one observation per step
