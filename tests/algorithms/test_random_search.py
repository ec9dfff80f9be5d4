"""RandomSearch: its two sampling distributions and the incumbent."""

import jax
import jax.numpy as jnp
import numpy as np

from evolax.algorithms.baselines.random_search import RandomSearch

X0 = {"w": jnp.array([1.0, -2.0, 0.5])}


def test_uniform_samples_fill_the_box_around_x0(key):
    algo = RandomSearch(pop_size=2000, init_std=0.5)  # "uniform" is the default
    state = algo.init(key, X0)
    population, _ = jax.jit(algo.ask)(jax.random.key(1), state)
    u = (np.asarray(population["w"]) - np.asarray(X0["w"])) / 0.5
    assert np.all(np.abs(u) <= 1.0)
    np.testing.assert_allclose(u.min(0), -1.0, atol=0.01)
    np.testing.assert_allclose(u.max(0), 1.0, atol=0.01)
    np.testing.assert_allclose(u.var(0), 1 / 3, rtol=0.1)  # U(-1, 1)
    again, _ = jax.jit(algo.ask)(
        jax.random.key(1), state.replace(population=state.population + 9.0)
    )
    np.testing.assert_array_equal(again["w"], population["w"])  # the incumbent never matters


def test_normal_samples_around_x0(key):
    algo = RandomSearch(pop_size=4000, distribution="normal", init_std=0.5)
    population, _ = jax.jit(algo.ask)(jax.random.key(1), algo.init(key, X0))
    z = (np.asarray(population["w"]) - np.asarray(X0["w"])) / 0.5
    np.testing.assert_allclose(z.mean(0), 0.0, atol=0.06)
    np.testing.assert_allclose(z.std(0), 1.0, rtol=0.05)
    assert np.abs(z).max() > 3.0  # not a box


def test_keeps_the_fittest_sample(key):
    algo = RandomSearch(pop_size=4)
    state = algo.init(key, X0)
    tell = jax.jit(algo.tell)
    population, _ = jax.jit(algo.ask)(jax.random.key(1), state)
    x = np.asarray(population["w"])
    moved = {"w": population["w"] + 1.0}
    state, metrics = tell(key, state, population, np.array([-3.0, -1.0, -2.0, -1.0]))
    np.testing.assert_array_equal(state.population[0], x[1])  # the first of the tied best
    np.testing.assert_array_equal(algo.best(state)["w"], x[1])
    assert float(state.fitness[0]) == -1.0 and float(metrics["improved"]) == 1.0
    state, metrics = tell(key, state, moved, np.array([-3.0, -1.0, -2.0, -1.5]))
    np.testing.assert_array_equal(state.population[0], x[1])  # a tie is no improvement
    assert float(metrics["improved"]) == 0.0
    state, metrics = tell(key, state, moved, np.array([-3.0, -1.0, -0.5, -1.5]))
    np.testing.assert_array_equal(state.population[0], x[2] + 1.0)
    np.testing.assert_array_equal(algo.best(state)["w"], x[2] + 1.0)
    assert float(state.best_fitness) == -0.5
