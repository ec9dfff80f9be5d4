"""OpenES against a numpy transcription of Salimans et al. (2017), and on a sphere."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms import OpenES


def numpy_ranks(fitness):
    ranks = np.empty(len(fitness))
    ranks[np.argsort(fitness, kind="stable")] = np.arange(len(fitness))
    return ranks / (len(fitness) - 1) - 0.5


@pytest.mark.parametrize("decay", [0.0, 0.05])
def test_tell_matches_the_papers_update_with_sgd(key, decay):
    """Algorithm 2 of the paper: theta += lr / (n sigma) * sum_i u_i eps_i."""
    lr, sigma, dim, pop = 0.3, 0.2, 6, 10
    algo = OpenES(pop_size=pop, optimizer=optax.sgd(lr), sigma=sigma, weight_decay=decay)
    x0 = {"a": jnp.arange(4.0), "b": jnp.ones(2)}
    state = algo.init(key, x0)
    population, _ = algo.ask(jax.random.key(1), state)
    fitness = jax.random.normal(jax.random.key(2), (pop,))
    new_state, metrics = jax.jit(algo.tell)(state, population, fitness)

    flat = np.concatenate([np.asarray(population["a"]), np.asarray(population["b"])], axis=1)
    center = np.concatenate([np.arange(4.0), np.ones(2)])
    eps = (flat - center) / sigma
    np.testing.assert_allclose(eps[: pop // 2], -eps[pop // 2 :], atol=1e-5)  # antithetic
    shaped = np.asarray(fitness, np.float64) - decay * np.mean(flat**2, axis=1)
    grad = numpy_ranks(shaped) @ eps / (pop * sigma)
    expected = center + lr * grad
    got = np.concatenate([np.asarray(new_state.center["a"]), np.asarray(new_state.center["b"])])
    assert got.shape == (dim,)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert float(metrics["grad_norm"]) == pytest.approx(np.linalg.norm(grad), rel=1e-5)


def test_ask_samples_isotropic_noise_around_the_center(key):
    algo = OpenES(pop_size=4000, sigma=0.5, antithetic=False)
    state = algo.init(key, jnp.full(3, 2.0))
    population, _ = algo.ask(jax.random.key(3), state)
    assert population.shape == (4000, 3)
    np.testing.assert_allclose(population.mean(axis=0), 2.0, atol=0.05)
    np.testing.assert_allclose(population.std(axis=0), 0.5, atol=0.03)


def test_sigma_decays_to_its_floor(key):
    algo = OpenES(pop_size=4, sigma=1.0, sigma_decay=0.5, sigma_min=0.2)
    state = algo.init(key, jnp.zeros(2))
    sigmas = []
    for _ in range(4):
        population, state = algo.ask(key, state)
        state, _ = algo.tell(state, population, jnp.arange(4.0))
        sigmas.append(float(state.sigma))
    assert sigmas == pytest.approx([0.5, 0.25, 0.2, 0.2])


def test_maximises_a_shifted_sphere_in_one_scan(key):
    """From 0 to the optimum at 1 (d = 10) within 400 generations of pop 32."""
    schedule = optax.exponential_decay(0.05, transition_steps=100, decay_rate=0.5)
    algo = OpenES(pop_size=32, optimizer=optax.adam(schedule), sigma=0.1, sigma_decay=0.99,
                  sigma_min=0.005)  # fmt: skip
    target = jnp.ones(10)

    def generation(state, key):
        population, state = algo.ask(key, state)
        fitness = -jnp.sum((population - target[None]) ** 2, axis=1)
        state, _ = algo.tell(state, population, fitness)
        return state, None

    state, _ = jax.jit(lambda s, k: jax.lax.scan(generation, s, jax.random.split(k, 400)))(
        algo.init(key, jnp.zeros(10)), key
    )
    assert float(jnp.max(jnp.abs(algo.best(state) - target))) < 0.02


def test_rejects_bad_configuration():
    for kwargs, match in [
        ({"pop_size": 0}, "pop_size"),
        ({"pop_size": 5}, "even"),
        ({"pop_size": 4, "sigma": 0.0}, "sigma"),
        ({"pop_size": 4, "sigma_decay": 1.5}, "sigma_decay"),
        ({"pop_size": 4, "sigma_min": -1.0}, "sigma_min"),
        ({"pop_size": 4, "weight_decay": -0.1}, "weight_decay"),
    ]:
        with pytest.raises(ValueError, match=match):
            OpenES(**kwargs)
    assert OpenES(pop_size=5, antithetic=False).pop_size == 5
    algo = OpenES(pop_size=4)
    state = algo.init(jax.random.key(0), jnp.zeros(2))
    population, _ = algo.ask(jax.random.key(0), state)
    with pytest.raises(ValueError, match="fitness"):
        algo.tell(state, population, jnp.zeros(3))


def test_the_cli_registry_builds_it():
    from evolax.config import ALGORITHMS, build_trainer, resolve

    assert "open_es" in ALGORITHMS
    overrides = {"algo": "open_es", "pop_size": 8, "init_std": 0.3, "center_lr": 0.02}
    trainer = build_trainer(resolve(None, {**overrides, "hidden_sizes": [4], "max_steps": 5}))
    assert isinstance(trainer.algorithm, OpenES) and trainer.algorithm.sigma == 0.3
    _, metrics = jax.jit(trainer.run, static_argnums=1)(trainer.init(jax.random.key(0)), 2)
    np.testing.assert_allclose(metrics["sigma"], 0.3)
