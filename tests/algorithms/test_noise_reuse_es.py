"""NoiseReuseES: one perturbation per pair for a whole unroll, its equivalence with OpenES on
whole unrolls, a static ellipsoid, and its checks. Its unbiasedness on an unrolled problem is
tested in ``tests/problems/test_unrolled.py``."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from evolax.algorithms import OpenES
from evolax.algorithms.es.noise_reuse_es import NoiseReuseES
from evolax.algorithms.shaping import raw
from evolax.problems import ellipsoid
from helpers import optimize

ask = jax.jit(lambda algo, key, state: algo.ask(key, state))
tell = jax.jit(lambda algo, key, state, x, fitness: algo.tell(key, state, x, fitness))
POP, DIM, STD, LR = 6, 4, 0.3, 0.1
ALGO = NoiseReuseES(POP, truncation_length=10, total_length=25, optimizer=optax.sgd(LR),
                    init_std=STD)  # fmt: skip
"""Unrolls of 3 truncations, the last one of 5 steps."""


def test_an_unroll_reuses_its_perturbations_and_the_next_draws_new_ones(key):
    """The pairs' perturbations, read back from the populations, are the same for the 3
    truncations of an unroll and new for the next one; ``tell`` steps along ``sum (f+ - f-)
    eps / (pop std^2)``."""
    state = ALGO.init(key, jnp.zeros(DIM))
    starts, perturbations = [], []
    for generation in range(7):
        starts.append(int(state.inner_step))
        x, state = ask(ALGO, jax.random.key(generation), state)
        mean = np.asarray(state.mean, np.float64)
        eps = np.asarray(x[: POP // 2], np.float64) - mean
        np.testing.assert_allclose(np.asarray(x[POP // 2 :]) - mean, -eps, atol=1e-6)
        np.testing.assert_allclose(state.eps, eps, atol=1e-6)
        perturbations.append(eps)
        fitness = -jnp.sum((x - 1.0) ** 2, axis=1)
        new, _ = tell(ALGO, key, state, x, fitness)
        step = (fitness[: POP // 2] - fitness[POP // 2 :]) @ eps / (POP * STD**2)
        np.testing.assert_allclose(new.mean, mean + LR * step, rtol=1e-5, atol=1e-6)
        state = new
    assert starts == [0, 10, 20, 0, 10, 20, 0]
    for same in ((0, 1), (1, 2), (3, 4), (4, 5)):
        np.testing.assert_allclose(*(perturbations[i] for i in same), atol=1e-5)
    for new in ((2, 3), (5, 6)):
        assert np.min(np.abs(np.subtract(*(perturbations[i] for i in new)))) > 1e-4
    assert 0.1 < np.std(perturbations[0]) / STD < 2.5


def test_whole_unrolls_make_it_antithetic_openes_on_raw_fitness(key):
    """With ``truncation_length == total_length`` every truncation is an unroll: NRES is
    OpenES (antithetic, raw fitness), generation by generation from the same keys."""
    make = lambda: optax.adam(0.05)  # noqa: E731
    nres = NoiseReuseES(8, truncation_length=7, total_length=7, optimizer=make(), init_std=0.2)
    open_es = OpenES(8, optimizer=make(), init_std=0.2, fitness_shaping=raw)

    def generation(states, key):
        news, populations = [], []
        for algo, state in zip((nres, open_es), states, strict=True):
            x, state = algo.ask(key, state)
            state, _ = algo.tell(key, state, x, -jnp.sum(x**2, axis=1))
            news.append(state)
            populations.append(x)
        return tuple(news), (populations, news[0].mean, news[1].mean, news[0].inner_step)

    states = (nres.init(key, jnp.ones(5)), open_es.init(key, jnp.ones(5)))
    run = jax.jit(lambda s, k: jax.lax.scan(generation, s, jax.random.split(k, 5)))
    _, (populations, ours, theirs, inner_steps) = run(states, key)
    np.testing.assert_allclose(populations[0], populations[1], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    assert not np.any(inner_steps)
    assert float(jnp.max(jnp.abs(ours[-1] - 1.0))) > 0.1  # it moved


def test_a_skipped_truncation_still_counts(key):
    """No finite fitness: the mean stays, but the members' inner problems did advance, so the
    truncation counts and its perturbations stay for the rest of the unroll."""
    state = ALGO.init(key, jnp.zeros(DIM))
    x, asked = ask(ALGO, key, state)
    new, metrics = tell(ALGO, key, asked, x, jnp.full(POP, jnp.nan))
    assert float(metrics["skipped"]) == 1.0
    assert int(new.inner_step) == 10
    np.testing.assert_array_equal(new.eps, asked.eps)
    np.testing.assert_array_equal(new.mean, state.mean)


def test_maximises_a_static_ellipsoid(key):
    """d = 5, condition 10, optimum at 1, within 400 truncations (each perturbation serves 3
    consecutive steps)."""
    schedule = optax.exponential_decay(0.05, transition_steps=100, decay_rate=0.5)
    algo = NoiseReuseES(16, truncation_length=2, total_length=6, optimizer=optax.adam(schedule))
    target = jnp.ones(5)
    _, gaps = optimize(
        algo,
        lambda x: -ellipsoid(x - target[None], condition=10.0),
        lambda best: jnp.max(jnp.abs(best - target)),
        400,
        key,
        jnp.zeros(5),
    )
    assert float(gaps[0]) > 0.9 and float(gaps[-1]) < 0.05
