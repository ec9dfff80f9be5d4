"""The fused rollout (a Pallas kernel, in interpret mode on the CPU) against the XLA episode
loop, `run_episodes`, and against each episode's own trajectory.

Returns agree to float32 round-off, not bit for bit: the kernel sums the MLP's products in
another order than XLA's matmuls, and an action that differs in its last bit moves the cart a
little differently. The physics is the task's own code in both (its step on components), and
the lengths are equal.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax import MLP, PGPE, CartPoleSwingUp, EpisodeLoop, ObsStats, Trainer
from evolax.policies import Direct
from evolax.rollout import NormalizeObs, RecordDescriptor
from evolax.rollout.episode import initial_states, run_episodes, transition
from evolax.rollout.fused import fused_supported, run_fused_episodes
from evolax.tasks import ActionCost, Arm, DoublePole
from helpers import Constant, Countdown

RTOL = 1e-5  # relative, of a return: float32 round-off grown over at most 100 steps


def population(policy, task, size, seed=1):
    keys = jax.random.split(jax.random.key(seed), size)
    return jax.vmap(lambda k: policy.init(k, task.obs_shape, task.action_shape))(keys)


def both(policy, task, pop, n_repeats, **fused):
    """``run_episodes``' and ``run_fused_episodes``' results on the same episodes."""
    initial = initial_states(policy, task, jax.random.key(2), n_repeats)
    xla = jax.jit(lambda p, i: run_episodes(policy, task, p, i))(pop, initial)
    kernel = jax.jit(lambda p, i: run_fused_episodes(policy, task, p, i, interpret=True, **fused))(
        pop, initial
    )
    return xla, kernel, initial


@pytest.mark.parametrize(
    "hard, hidden, output",
    [
        (True, (8, 4), "linear"),  # the other cases: nox -s slow
        pytest.param(False, (8,), "tanh", marks=pytest.mark.slow),
        pytest.param(False, (), "sigmoid", marks=pytest.mark.slow),
    ],
)
def test_cartpole_returns_and_lengths_equal_the_xla_loop(hard, hidden, output):
    task = CartPoleSwingUp(hard=hard, max_steps=100)
    policy = MLP(hidden_sizes=hidden, output_activation=output)
    pop = population(policy, task, 4)
    (returns, lengths, _), (f_returns, f_lengths, _), _ = both(
        policy, task, pop, 3, steps_per_launch=16
    )
    lengths = np.asarray(lengths)
    assert (lengths < task.max_steps).any() and (lengths == task.max_steps).any()
    np.testing.assert_array_equal(f_lengths, lengths)
    np.testing.assert_allclose(f_returns, returns, rtol=RTOL, atol=RTOL)


@pytest.mark.slow  # the default run compares with run_episodes
def test_each_episode_ends_in_the_state_of_its_own_trajectory():
    """Against every step of every episode, run alone (`transition` scanned): the return is
    the sum of rewards to the first `done`, and the final state is the one after it."""
    task, policy = CartPoleSwingUp(hard=True, max_steps=60), MLP(hidden_sizes=(8,))
    pop = population(policy, task, 3, seed=4)
    initial = initial_states(policy, task, jax.random.key(2), 4)
    returns, lengths, final = run_fused_episodes(
        policy, task, pop, initial, steps_per_launch=7, interpret=True
    )

    def trajectory(params, task_state, policy_state, step_key):
        def step(carry, t):
            task_state, policy_state = carry
            task_state, policy_state, reward, done = transition(
                policy, task, params, step_key, t, task_state, policy_state
            )
            return (task_state, policy_state), (task_state.physics, reward, done)

        return jax.lax.scan(step, (task_state, policy_state), jnp.arange(task.max_steps))[1]

    per_repeat = jax.vmap(trajectory, in_axes=(None, 0, 0, 0))
    physics, rewards, dones = jax.jit(jax.vmap(per_repeat, in_axes=(0, None, None, None)))(
        pop, *initial
    )
    dones = np.asarray(dones).copy()
    dones[..., -1] = True  # the step limit
    expected_lengths = dones.argmax(-1) + 1
    assert len(set(expected_lengths.ravel())) > 2
    np.testing.assert_array_equal(lengths, expected_lengths)
    alive = np.arange(task.max_steps) < expected_lengths[..., None]
    np.testing.assert_allclose(returns, (np.asarray(rewards) * alive).sum(-1), rtol=RTOL)
    last = np.take_along_axis(np.asarray(physics), expected_lengths[..., None, None] - 1, 2)
    np.testing.assert_allclose(final.physics, last[:, :, 0], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(final.steps, expected_lengths)
    np.testing.assert_allclose(final.obs[..., 2], np.cos(final.physics[..., 2]), atol=1e-6)


def test_double_pole_returns_and_lengths_equal_the_xla_loop():
    task = DoublePole(max_steps=30)
    policy = MLP(hidden_sizes=(8,))
    pop = population(policy, task, 6, seed=3)
    (returns, lengths, _), (f_returns, f_lengths, final), _ = both(policy, task, pop, 2)
    lengths = np.asarray(lengths)
    assert (lengths < task.max_steps).any() and (lengths == task.max_steps).any()
    np.testing.assert_array_equal(f_lengths, lengths)
    np.testing.assert_allclose(f_returns, returns, rtol=RTOL)
    assert final.physics.shape == (6, 2, 6) and np.isnan(final.jiggle).all()  # not kept


def test_fixed_length_and_launch_sizes_give_the_same_results():
    task, policy = CartPoleSwingUp(max_steps=40), MLP(hidden_sizes=(4,))
    pop = population(policy, task, 2)
    initial = initial_states(policy, task, jax.random.key(5), 2)
    runs = [
        run_fused_episodes(policy, task, pop, initial, interpret=True, **options)[:2]
        for options in (
            {"steps_per_launch": 40},
            {"steps_per_launch": 1000},
            {"steps_per_launch": 9, "fixed_length": True},
        )
    ]
    for returns, lengths in runs[1:]:
        np.testing.assert_array_equal(lengths, runs[0][1])
        np.testing.assert_allclose(returns, runs[0][0], rtol=1e-6)


def test_unsupported_policies_and_tasks():
    cartpole, mlp = CartPoleSwingUp(max_steps=10), MLP(hidden_sizes=(4,))
    assert fused_supported(mlp, cartpole)
    assert fused_supported(mlp, DoublePole())
    assert not fused_supported(MLP(output_activation="softmax"), cartpole)  # mixes outputs
    assert not fused_supported(Constant(), Countdown())  # neither has a fused form
    assert not fused_supported(mlp, Countdown())
    assert not fused_supported(Direct(), Arm())
    assert not fused_supported(mlp, DoublePole(velocities=False))  # the return needs a ring
    assert not fused_supported(mlp, CartPoleSwingUp(pole_length=jnp.asarray(0.7)))  # an array
    stats = ObsStats.zeros((5,))
    assert not fused_supported(mlp, NormalizeObs(cartpole, stats, jnp.zeros(5)))
    assert not fused_supported(mlp, RecordDescriptor(cartpole))
    assert not fused_supported(mlp, ActionCost(cartpole))  # two objectives
    pop = population(mlp, cartpole, 2)
    initial = initial_states(mlp, cartpole, jax.random.key(0), 1)
    with pytest.raises(ValueError, match="steps_per_launch must be a positive integer"):
        run_fused_episodes(mlp, cartpole, pop, initial, steps_per_launch=0)
    with pytest.raises(ValueError, match="on a task with a fused step: got MLP on Countdown"):
        run_fused_episodes(mlp, Countdown(), pop, initial)


def test_the_kernel_lowers_for_a_gpu_with_triton():
    """No GPU here: the kernel is lowered (not compiled) for CUDA with Triton, which fails on
    an operation Triton's lowering lacks (stacks, gathers, batched matmuls)."""
    for task, hidden in ((CartPoleSwingUp(), (64, 64)), (DoublePole(), ())):
        policy = MLP(hidden_sizes=hidden)
        pop = population(policy, task, 3)
        initial = initial_states(policy, task, jax.random.key(0), 5)
        export = jax.export.export(
            jax.jit(lambda p, i: run_fused_episodes(policy, task, p, i)),  # noqa: B023
            platforms=["cuda"],
            disabled_checks=[jax.export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")],
        )(pop, initial)
        assert "xla.gpu.triton" in export.mlir_module()


def test_the_fused_loop_form_runs_the_kernel_in_a_trainer():
    """`EpisodeLoop("fused")` is the kernel inside the trainer's evaluation: the same fitness
    as the while loop's to round-off, generation after generation."""
    common = dict(
        algorithm=PGPE(pop_size=4),
        policy=MLP(hidden_sizes=(4,)),
        task=CartPoleSwingUp(max_steps=30),
        n_repeats=2,
        mesh=None,
        pop_chunk=None,
    )
    fused = EpisodeLoop("fused", block=16, interpret=True)
    runs = [
        jax.jit(lambda s, t=t: t.run(s, 2))(t.init(jax.random.key(0)))[1]["fitness_mean"]
        for t in (Trainer(**common), Trainer(**common, loop=fused))
    ]
    np.testing.assert_allclose(runs[1], runs[0], rtol=RTOL)
