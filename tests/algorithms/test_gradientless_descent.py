"""GradientlessDescent: the paper's radii, uniform ball samples, the elitist move, a sphere."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.baselines.gradientless_descent import GradientlessDescent, ball, search_radii


def test_radii_are_the_papers_halvings():
    """Golovin et al. (2020), algorithm 1: ``r_k = 2^-k R`` for ``k = 0..log2(R / r)``."""
    np.testing.assert_allclose(search_radii(8, 1.28, 0.01), 1.28 * 0.5 ** np.arange(8), rtol=1e-6)
    np.testing.assert_allclose(search_radii(3, 0.9, 0.1), [0.9, 0.3, 0.1], rtol=1e-6)
    np.testing.assert_allclose(search_radii(1, 0.9, 0.1), [0.9])


def test_ball_samples_are_uniform_in_their_balls(key):
    """If ``v`` is uniform in the ``d``-ball of radius ``r``, ``(|v| / r)^d ~ U(0, 1)`` and
    ``v / |v|`` is uniform on the sphere (2,000 samples per radius, d = 3)."""
    dim, radii = 3, np.array([2.0, 1.0, 0.5, 0.25])
    steps = np.asarray(
        jax.jit(ball, static_argnums=2)(key, jnp.tile(jnp.float32(radii), 2000), dim)
    )
    u = (np.linalg.norm(steps, axis=-1).reshape(2000, 4) / radii) ** dim
    assert u.max() <= 1.0 + 1e-5
    np.testing.assert_allclose(u.mean(0), 0.5, atol=0.025)  # standard error 0.0065
    np.testing.assert_allclose(u.var(0), 1 / 12, rtol=0.1)
    directions = steps / np.linalg.norm(steps, axis=-1, keepdims=True)
    np.testing.assert_allclose(directions.mean(0), 0.0, atol=0.03)


def test_tell_is_elitist(key):
    algo = GradientlessDescent(pop_size=3, init_std=1.0, min_radius=0.25)
    state = algo.init(key, jnp.zeros(2))
    population, _ = jax.jit(algo.ask)(jax.random.key(1), state)
    norms = np.linalg.norm(np.asarray(population), axis=1)
    assert np.all(norms <= np.array([1.0, 0.5, 0.25]) + 1e-6)  # x0 + a step in each ball
    tell = jax.jit(algo.tell)
    state, metrics = tell(key, state, population, jnp.array([-4.0, -2.0, -3.0]))
    np.testing.assert_array_equal(state.mean, population[1])  # x0 is not evaluated
    assert float(metrics["moved"]) == 1.0
    again, metrics = tell(key, state, population + 1.0, jnp.array([-4.0, -2.0, -3.0]))
    np.testing.assert_array_equal(again.mean, population[1])  # not strictly fitter: stays
    assert float(metrics["moved"]) == 0.0 and float(again.std) == 1.0


def test_descends_a_shifted_sphere(key):
    """d = 10, R = 1, r = 1/256 (9 radii): f < 1e-4 in 300 generations (measured 6.3e-6)."""
    dim, algo = 10, GradientlessDescent(pop_size=9, init_std=1.0, min_radius=1 / 256)
    optimum = jnp.linspace(-1.0, 1.0, dim)

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        x, state = algo.ask(ask_key, state)
        state, _ = algo.tell(tell_key, state, x, -jnp.sum((x - optimum[None]) ** 2, 1))
        return state, None

    run = jax.jit(lambda s, k: jax.lax.scan(generation, s, jax.random.split(k, 300))[0])
    state = run(algo.init(key, jnp.zeros(dim)), key)
    assert float(jnp.sum((algo.best(state) - optimum) ** 2)) < 1e-4


def test_rejects_bad_configuration():
    for kwargs, match in [
        ({"pop_size": 0}, "pop_size"),
        ({"pop_size": 4, "init_std": 0.0}, "init_std"),
        ({"pop_size": 4, "min_radius": -1.0}, "min_radius"),
        ({"pop_size": 4, "init_std": 0.1, "min_radius": 0.2}, "min_radius must be at most"),
    ]:
        with pytest.raises(ValueError, match=match):
            GradientlessDescent(**kwargs)
