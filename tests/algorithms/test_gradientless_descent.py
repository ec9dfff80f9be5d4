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


@pytest.mark.slow  # a reference check against evosax (nox -s slow)
def test_evosax_samples_gaussians_not_the_papers_balls():
    """evosax 0.3.2's ``GradientlessDescent`` moves as evolax does (the reference table's
    row) but samples otherwise. Golovin et al. (2020), algorithm 1, draws one point uniformly
    in each ball ``x + r_k B^n`` with ``r_k = 2^-k R``, ``k = 0..log2(R / r)``, which evolax
    follows (``pop_size`` radii spaced geometrically from ``R = init_std`` to ``r =
    min_radius``). evosax (its own comment: "TODO: different from the original paper") draws
    ``x + r_k z`` with ``z ~ N(0, I)``, whose norm is about ``r_k sqrt(D)``, not at most
    ``r_k``, at radii ``r_k = r + 2^(-k / radius_decay) (R - r)`` (``radius_decay = 5``),
    which for 8 samples only span ``[0.076, 0.2]`` of its default ``[0.001, 0.2]``. Both are
    shown from evosax's own draws (its ``z`` is ``jax.random.normal(key, (pop, D))``); the
    table's BBOB rows show what the small balls are worth on the sphere."""
    evosax = pytest.importorskip("evosax.algorithms")
    from reference_table import allow

    pop, dim = 8, 50
    x0 = jnp.linspace(-1.0, 1.0, dim)
    with allow():
        theirs = evosax.GradientlessDescent(pop, x0)
        params = theirs.default_params  # R = 0.2, r = 0.001, radius_decay = 5
    radius_max, radius_min = params.radius_max, params.radius_min
    key = jax.random.key(3)
    with allow():
        state = theirs.init(key, x0, params)
        x, _ = theirs.ask(key, state, params)
    z = jax.random.normal(key, (pop, dim))  # evosax's draw
    their_radii = np.asarray((x - x0[None]) / z).mean(axis=1)
    k = np.arange(pop)
    np.testing.assert_allclose(
        their_radii, radius_min + 2.0 ** (-k / 5) * (radius_max - radius_min), rtol=1e-4
    )
    assert their_radii.min() > 0.07  # the smallest radius is far above r = 0.001
    their_norms = np.linalg.norm(np.asarray(x - x0[None]), axis=1)
    assert np.all(their_norms > 5 * their_radii)  # ~ r_k sqrt(50): outside the balls

    ours = GradientlessDescent(pop_size=pop, init_std=radius_max, min_radius=radius_min)
    y, _ = ours.ask(key, ours.init(key, x0))
    radii = radius_max * (radius_min / radius_max) ** (k / (pop - 1))
    np.testing.assert_allclose(ours.radii(ours.init(key, x0)), radii, rtol=1e-5)
    norms = np.linalg.norm(np.asarray(y - x0[None]), axis=1)
    assert np.all(norms <= radii * (1 + 1e-5)) and np.all(norms > 0.8 * radii)  # d = 50
