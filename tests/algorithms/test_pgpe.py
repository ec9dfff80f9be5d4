"""PGPE against a numpy transcription of EvoJAX's/pgpelib's update equations."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms import PGPE
from evolax.algorithms.shaping import centered_rank, raw
from evolax.optim import clipup


def numpy_centered_ranks(fitness):
    ranks = np.empty(fitness.size)
    ranks[fitness.argsort()] = np.arange(fitness.size)
    return ranks / ranks.max() - 0.5


def reference_update(center, std, plus, minus, f_plus, f_minus, lr, std_lr, max_change, shaping):
    """EvoJAX 0.2.17 `PGPE.tell` with `optimizer=None` (plain SGD), interleaved layout;
    ``shaping``: numpy_centered_ranks (EvoJAX's ``center_rank=True``) or the identity."""
    eps = plus - center
    fitness = np.stack([f_plus, f_minus], axis=1).reshape(-1)  # [+1, -1, +2, -2, ...]
    scores = shaping(fitness).reshape(-1, 2)
    baseline = scores.mean()
    grad_mu = (eps * (scores[:, 0] - scores[:, 1])[:, None] * 0.5).mean(0)
    grad_sigma = ((scores.mean(1)[:, None] - baseline) * (eps**2 - std**2) / std).mean(0)
    new_std = np.clip(std + std_lr * grad_sigma, std * (1 - max_change), std * (1 + max_change))
    return center + lr * grad_mu, new_std


@pytest.mark.parametrize(
    ("shaping", "reference_shaping"),
    [(centered_rank, numpy_centered_ranks), (raw, lambda fitness: fitness.astype(np.float64))],
)
def test_tell_matches_reference(key, shaping, reference_shaping):
    dim, pop = 7, 10
    algo = PGPE(
        pop_size=pop, optimizer=optax.sgd(0.3), init_std=0.5, std_lr=0.2, fitness_shaping=shaping
    )
    x0 = {"a": jnp.arange(3.0), "b": -jnp.ones((2, 2))}
    state = algo.init(key, x0)
    population, state = algo.ask(jax.random.key(1), state)
    flat = np.concatenate(
        [np.asarray(population["a"]), np.asarray(population["b"]).reshape(pop, 4)], 1
    )
    fitness = np.random.default_rng(0).normal(size=pop).astype(np.float32)
    new_state, metrics = algo.tell(jax.random.key(2), state, population, jnp.asarray(fitness))

    center = np.concatenate([np.arange(3.0), -np.ones(4)])
    np.testing.assert_allclose(
        flat[: pop // 2] + flat[pop // 2 :], np.tile(2 * center, (pop // 2, 1)), atol=1e-5
    )
    ref_center, ref_std = reference_update(
        center,
        np.full(dim, 0.5),
        flat[: pop // 2],
        flat[pop // 2 :],
        fitness[: pop // 2],
        fitness[pop // 2 :],
        0.3,
        0.2,
        0.2,
        reference_shaping,
    )
    assert new_state.mean.shape == new_state.std.shape == (dim,)
    np.testing.assert_allclose(new_state.mean, ref_center, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(new_state.std, ref_std, rtol=1e-5, atol=1e-6)
    best = algo.best(new_state)  # the mean as x0's pytree
    np.testing.assert_allclose(best["b"], ref_center[3:].reshape(2, 2), rtol=1e-5, atol=1e-6)
    assert float(metrics["std"]) == pytest.approx(np.mean(ref_std), rel=1e-5)


def test_std_change_is_bounded(key):
    algo = PGPE(pop_size=8, init_std=1.0, std_lr=1e3, std_max_change=0.2)
    state = algo.init(key, jnp.zeros(5))
    population, state = algo.ask(key, state)
    new_state, _ = algo.tell(key, state, population, jnp.arange(8.0))
    ratio = np.asarray(new_state.std)
    assert np.all(ratio >= 0.8 - 1e-6) and np.all(ratio <= 1.2 + 1e-6)
    assert np.any(np.abs(ratio - 1) > 0.19)  # the bound is active


@pytest.mark.parametrize(
    "optimizer", [optax.adam(0.1), clipup(optax.cosine_decay_schedule(0.1, 400), max_speed=0.2)]
)
def test_solves_shifted_sphere(key, optimizer):
    algo = PGPE(pop_size=32, optimizer=optimizer, init_std=1.0, std_lr=0.1)
    target = jnp.linspace(-2.0, 3.0, 10)

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        population, state = algo.ask(ask_key, state)
        fitness = -jnp.sum((population - target[None]) ** 2, axis=1)
        return algo.tell(tell_key, state, population, fitness)[0], None

    state, _ = jax.lax.scan(generation, algo.init(key, jnp.zeros(10)), jax.random.split(key, 400))
    np.testing.assert_allclose(algo.best(state), target, atol=0.05)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pop_size": 7}, "even"),
        ({"pop_size": 0}, "pop_size"),
        ({"pop_size": -4}, "pop_size"),
        ({"pop_size": 8.0}, "pop_size"),
        ({"pop_size": 8, "init_std": 0.0}, "init_std"),
        ({"pop_size": 8, "std_max_change": 1.5}, "std_max_change"),
        ({"pop_size": 8, "std_lr": -0.1}, "std_lr"),
    ],
)
def test_bad_configuration(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PGPE(**kwargs)


def test_wrong_fitness_shape(key):
    algo = PGPE(pop_size=8)
    state = algo.init(key, jnp.zeros(3))
    population, state = algo.ask(key, state)
    with pytest.raises(ValueError, match=r"fitness must have shape \(pop_size,\) = \(8,\)"):
        algo.tell(key, state, population, jnp.zeros((8, 1)))
