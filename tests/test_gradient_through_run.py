"""Reverse-mode ``jax.grad`` through ``Trainer.run`` (meta-learning through an unrolled inner
loop): with ``fixed_length=True`` the episodes run as a ``lax.scan``, and the gradient of a
run's fitness with respect to the start point matches central finite differences."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

import evolax
from evolax.algorithms import raw


def trainer(fixed_length, **algorithm):
    algo = evolax.OpenES(pop_size=8, init_std=0.1, **algorithm)
    task = evolax.CartPoleSwingUp(max_steps=20)  # continuous dynamics and reward
    policy = evolax.MLP(hidden_sizes=(4,))
    return evolax.Trainer(algo, policy, task, mesh=None, fixed_length=fixed_length)


def test_the_fixed_length_loop_scores_as_the_early_stopping_one():
    histories = []
    for fixed_length in (False, True):
        t = trainer(fixed_length)
        histories.append(t.run(t.init(jax.random.key(0)), 2)[1])
    for name in ("fitness_mean", "fitness_max", "env_steps"):
        np.testing.assert_allclose(histories[0][name], histories[1][name], rtol=1e-6)


def test_the_gradient_through_run_matches_finite_differences():
    # raw fitness and plain SGD: the run is a smooth function of the start point
    t = trainer(True, optimizer=optax.sgd(0.1), fitness_shaping=raw)
    start = t.init(jax.random.key(0))

    def final_fitness(mean):
        state = start.replace(algo_state=start.algo_state.replace(mean=mean))
        return t.run(state, 2)[1]["fitness_mean"][-1]

    mean = start.algo_state.mean
    gradient = jax.grad(final_fitness)(mean)
    direction = jax.random.normal(jax.random.key(3), mean.shape)
    h = 3e-3
    central = (final_fitness(mean + h * direction) - final_fitness(mean - h * direction)) / (2 * h)
    assert float(jnp.abs(gradient @ direction)) > 1e-3  # not trivially zero
    np.testing.assert_allclose(float(gradient @ direction), float(central), rtol=2e-2)
