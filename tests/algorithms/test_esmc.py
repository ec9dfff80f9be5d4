"""ESMC against a numpy transcription of Merchant et al.'s (2021) clipped antithetic estimator,
at a local maximum, and on a shifted sphere."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms.es.esmc import ESMC
from helpers import optimize

SGD = optax.sgd(0.1)  # one optimizer object: the jitted functions compile once per pop_size
tell = jax.jit(
    lambda algo, state, population, fitness: algo.tell(
        jax.random.key(7), state, population, fitness
    )
)
ask = jax.jit(lambda algo, key, state: algo.ask(key, state))


@pytest.mark.parametrize("pop", [8, 9])
def test_tell_matches_the_clipped_estimator(key, pop):
    """The population is [mean x b, mean + std eps_1..n, mean - std eps_1..n] (b = 2 for an
    even pop_size, 1 for an odd one), and the mean steps along
    sum_i [max(f_i+, f_0) - max(f_i-, f_0)] eps_i / (2 n std), f_0 the mean's average fitness
    (the paper's losses clipped at the unperturbed loss, for a maximised fitness)."""
    std, lr = 0.3, 0.1
    algo = ESMC(pop_size=pop, optimizer=SGD, init_std=std)
    b, n = 2 - pop % 2, (pop - 1) // 2
    assert (algo.n_baseline, algo.n_pairs) == (b, n)
    x0 = {"a": jnp.arange(4.0), "b": jnp.ones(2)}
    state = algo.init(key, x0)
    population, _ = ask(algo, jax.random.key(1), state)
    flat = np.concatenate([population["a"], population["b"]], axis=1).astype(np.float64)
    mean = np.concatenate([np.arange(4.0), np.ones(2)])
    np.testing.assert_allclose(flat[:b], np.broadcast_to(mean, (b, 6)), atol=1e-6)
    eps = (flat[b : b + n] - mean) / std
    np.testing.assert_allclose(flat[b + n :] - mean, -std * eps, atol=1e-5)

    fitness = np.random.default_rng(pop).standard_normal(pop).astype(np.float32)
    fitness[:b] = np.median(fitness)  # some perturbations fall below the mean's, some above
    new_state, metrics = tell(algo, state, population, jnp.asarray(fitness))
    f = fitness.astype(np.float64)
    f0 = f[:b].mean()
    plus, minus = np.maximum(f[b : b + n], f0), np.maximum(f[b + n :], f0)
    assert np.any(f[b:] < f0) and np.any(f[b:] > f0)
    expected = mean + lr * (plus - minus) @ eps / (2 * n * std)
    assert not np.allclose(expected, mean)
    np.testing.assert_allclose(new_state.mean, expected, rtol=1e-5, atol=1e-5)
    assert float(metrics["baseline"]) == pytest.approx(f0)


def test_a_local_maximum_holds_the_mean_where_plain_antithetic_es_drifts(key):
    """At the local maximum 0 of f(x) = -sum(x^2 + x^3) every perturbation within reach is
    worse than the mean, so the clipped differences are all 0 and the mean stays; the
    unclipped antithetic differences -2 sum(eps^3) are not 0."""
    algo = ESMC(pop_size=8, optimizer=SGD, init_std=0.1)
    state = algo.init(key, jnp.zeros(5))
    population, _ = ask(algo, key, state)
    fitness = -jnp.sum(population**2 + population**3, axis=1)
    new_state, metrics = tell(algo, state, population, fitness)
    np.testing.assert_array_equal(new_state.mean, state.mean)
    assert float(metrics["grad_norm"]) == 0.0
    assert not np.allclose(fitness[2:5], fitness[5:])  # plain antithetic ES would move


def test_solves_a_shifted_sphere(key):
    """d = 10, pop 16 (7 pairs), adam(0.05) and std decaying 0.1 -> 0.005: within 0.02 of
    the optimum after 400 generations (measured: 0.0096-0.011 over seeds 0-4)."""
    optimum = jnp.linspace(-1.0, 2.0, 10)
    algo = ESMC(pop_size=16, optimizer=optax.adam(0.05), init_std=0.1, std_decay=0.99,
                std_min=0.005)  # fmt: skip
    _, distance = optimize(
        algo,
        lambda population: -jnp.sum((population - optimum[None]) ** 2, 1),
        lambda best: jnp.linalg.norm(best - optimum),
        400,
        key,
        jnp.zeros(10),
    )
    assert float(distance[0]) > 2.0
    assert float(distance[-1]) < 0.02, float(distance[-1])


def test_three_members_make_one_pair():
    assert ESMC(pop_size=3).n_pairs == 1
