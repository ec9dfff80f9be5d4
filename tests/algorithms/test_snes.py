"""SNES against a numpy transcription of Wierstra et al. (2014), algorithm 6, and on a sphere."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms import SNES
from evolax.algorithms.cma.cma_es import default_pop_size
from evolax.algorithms.es.snes import default_std_lr


def numpy_nes_utilities(fitness):
    n = len(fitness)
    raw = np.maximum(0.0, np.log(n / 2 + 1) - np.log(np.arange(1, n + 1)))
    by_rank = raw / raw.sum() - 1.0 / n
    utilities = np.empty(n)
    utilities[np.argsort(-fitness, kind="stable")] = by_rank
    return utilities


@pytest.mark.parametrize("lr", [None, 0.3])
def test_tell_matches_the_papers_update(key, lr):
    """Algorithm 6 with eta_mu = 1 (the default ``optax.sgd(1.0)``) or ``optax.sgd(lr)``."""
    pop, dim = 8, 5
    kwargs = {} if lr is None else {"optimizer": optax.sgd(lr)}
    algo = SNES(pop_size=pop, init_std=0.7, **kwargs)
    state = algo.init(key, {"w": jnp.arange(5.0)})
    population, _ = algo.ask(jax.random.key(1), state)
    fitness = np.asarray(jax.random.normal(jax.random.key(2), (pop,)))
    new_state, metrics = jax.jit(algo.tell)(jax.random.key(3), state, population, fitness)

    mu, sigma = np.arange(5.0), np.full(dim, 0.7)
    s = (np.asarray(population["w"], np.float64) - mu) / sigma
    u = numpy_nes_utilities(fitness)
    assert abs(u.sum()) < 1e-12
    expected_mu = mu + (1.0 if lr is None else lr) * sigma * (u @ s)
    expected_sigma = sigma * np.exp(0.5 * default_std_lr(dim) * (u @ (s**2 - 1)))
    np.testing.assert_allclose(new_state.mean, expected_mu, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(algo.best(new_state)["w"], expected_mu, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(new_state.std, expected_sigma, rtol=1e-5)
    assert float(metrics["std"]) == pytest.approx(expected_sigma.mean(), rel=1e-5)


def test_papers_defaults():
    assert default_pop_size(10) == 10  # 4 + floor(3 ln 10)
    assert default_std_lr(10) == pytest.approx((3 + np.log(10)) / (5 * np.sqrt(10)))


def test_reaches_1e_8_on_a_shifted_sphere(key):
    """d = 10, the paper's population and learning rates: f - f* < 1e-8 within 1500 gens."""
    dim = 10
    algo = SNES(pop_size=default_pop_size(dim))
    optimum = jnp.linspace(-2.0, 3.0, dim)

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        population, state = algo.ask(ask_key, state)
        fitness = -jnp.sum((population - optimum[None]) ** 2, 1)
        state, _ = algo.tell(tell_key, state, population, fitness)
        return state, jnp.sum((algo.best(state) - optimum) ** 2)

    _, gaps = jax.jit(lambda s, k: jax.lax.scan(generation, s, jax.random.split(k, 1500)))(
        algo.init(key, jnp.zeros(dim)), key
    )
    assert float(gaps[-1]) < 1e-8, float(gaps[-1])


def test_the_cli_registry_builds_it():
    from evolax.config import build_trainer, resolve

    settings = ["algorithm.name=snes", "algorithm.pop_size=6", "algorithm.init_std=0.2"]
    config = resolve("cartpole_easy", [*settings, "task.max_steps=5"])
    trainer = build_trainer(config)
    assert isinstance(trainer.algorithm, SNES) and trainer.algorithm.init_std == 0.2
    _, metrics = jax.jit(trainer.run, static_argnums=1)(trainer.init(jax.random.key(0)), 2)
    assert metrics["std"].shape == (2,)
