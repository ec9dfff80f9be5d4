"""OpenES against a numpy transcription of Salimans et al. (2017), and on a sphere."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms import OpenES
from evolax.algorithms.shaping import centered_rank, chain, weight_decay


def numpy_ranks(fitness):
    ranks = np.empty(len(fitness))
    ranks[np.argsort(fitness, kind="stable")] = np.arange(len(fitness))
    return ranks / (len(fitness) - 1) - 0.5


@pytest.mark.parametrize(("decay", "antithetic"), [(0.0, True), (0.05, True), (0.05, False)])
def test_tell_matches_the_papers_update_with_sgd(key, decay, antithetic):
    """Algorithm 2 of the paper: theta += lr / (n sigma) * sum_i u_i eps_i, with the L2
    penalty ``chain(weight_decay(c), centered_rank)`` before the ranks."""
    lr, std, dim, pop = 0.3, 0.2, 6, 10
    algo = OpenES(
        pop_size=pop,
        optimizer=optax.sgd(lr),
        init_std=std,
        antithetic=antithetic,
        fitness_shaping=chain(weight_decay(decay), centered_rank),
    )
    x0 = {"a": jnp.arange(4.0), "b": jnp.ones(2)}
    state = algo.init(key, x0)
    population, _ = algo.ask(jax.random.key(1), state)
    fitness = jax.random.normal(jax.random.key(2), (pop,))
    new_state, metrics = jax.jit(algo.tell)(jax.random.key(3), state, population, fitness)

    flat = np.concatenate([np.asarray(population["a"]), np.asarray(population["b"])], axis=1)
    mean = np.concatenate([np.arange(4.0), np.ones(2)])
    eps = (flat - mean) / std
    if antithetic:
        np.testing.assert_allclose(eps[: pop // 2], -eps[pop // 2 :], atol=1e-5)
    shaped = np.asarray(fitness, np.float64) - decay * np.mean(flat**2, axis=1)
    grad = numpy_ranks(shaped) @ eps / (pop * std)
    expected = mean + lr * grad
    assert new_state.mean.shape == (dim,)
    np.testing.assert_allclose(new_state.mean, expected, rtol=1e-5, atol=1e-5)
    best = algo.best(new_state)  # the mean as x0's pytree
    best = np.concatenate([best["a"], best["b"]])
    np.testing.assert_allclose(best, expected, rtol=1e-5, atol=1e-5)
    assert float(metrics["grad_norm"]) == pytest.approx(np.linalg.norm(grad), rel=1e-5)
    assert float(metrics["std"]) == pytest.approx(std)


def test_ask_samples_isotropic_noise_around_the_mean(key):
    algo = OpenES(pop_size=4000, init_std=0.5, antithetic=False)
    state = algo.init(key, jnp.full(3, 2.0))
    population, _ = algo.ask(jax.random.key(3), state)
    assert population.shape == (4000, 3)
    np.testing.assert_allclose(population.mean(axis=0), 2.0, atol=0.05)
    np.testing.assert_allclose(population.std(axis=0), 0.5, atol=0.03)


def test_std_decays_to_its_floor(key):
    algo = OpenES(pop_size=4, init_std=1.0, std_decay=0.5, std_min=0.2)
    state = algo.init(key, jnp.zeros(2))
    stds, metric = [], []
    for _ in range(4):
        population, state = algo.ask(key, state)
        state, metrics = algo.tell(key, state, population, jnp.arange(4.0))
        stds.append(float(state.std))
        metric.append(float(metrics["std"]))
    assert stds == pytest.approx([0.5, 0.25, 0.2, 0.2])
    assert metric == pytest.approx(stds)


def test_maximises_a_shifted_sphere_in_one_scan(key):
    """From 0 to the optimum at 1 (d = 10) within 400 generations of pop 32."""
    schedule = optax.exponential_decay(0.05, transition_steps=100, decay_rate=0.5)
    algo = OpenES(pop_size=32, optimizer=optax.adam(schedule), init_std=0.1, std_decay=0.99,
                  std_min=0.005)  # fmt: skip
    target = jnp.ones(10)

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        population, state = algo.ask(ask_key, state)
        fitness = -jnp.sum((population - target[None]) ** 2, axis=1)
        state, _ = algo.tell(tell_key, state, population, fitness)
        return state, None

    state, _ = jax.jit(lambda s, k: jax.lax.scan(generation, s, jax.random.split(k, 400)))(
        algo.init(key, jnp.zeros(10)), key
    )
    assert float(jnp.max(jnp.abs(algo.best(state) - target))) < 0.02


def test_rejects_bad_configuration():
    assert OpenES(pop_size=5, antithetic=False).pop_size == 5
    algo = OpenES(pop_size=4)
    state = algo.init(jax.random.key(0), jnp.zeros(2))
    population, _ = algo.ask(jax.random.key(0), state)
    with pytest.raises(ValueError, match="fitness"):
        algo.tell(jax.random.key(0), state, population, jnp.zeros(3))


def test_the_cli_registry_builds_it():
    from evolax.config import build_trainer, resolve

    settings = ["algorithm.name=open_es", "algorithm.pop_size=8", "algorithm.init_std=0.3"]
    settings += ["algorithm.optimizer={name: adam, learning_rate: 0.02}"]
    settings += ["policy.hidden_sizes=[4]", "task.max_steps=5"]
    trainer = build_trainer(resolve("cartpole_easy", settings))
    assert isinstance(trainer.algorithm, OpenES) and trainer.algorithm.init_std == 0.3
    _, metrics = jax.jit(trainer.run, static_argnums=1)(trainer.init(jax.random.key(0)), 2)
    np.testing.assert_allclose(metrics["std"], 0.3)
