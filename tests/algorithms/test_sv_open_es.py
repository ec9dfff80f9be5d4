"""SVOpenES: its direction is SVGD's with OpenES's gradients, its particles are OpenES when the
kernel vanishes, it optimises, its particles repel, a failed particle waits, and bad
hyper-parameters raise."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms.es.open_es import OpenES
from evolax.algorithms.es.sv_open_es import SVOpenES
from evolax.algorithms.stein import kernel_average, repulsion

N, LAM, DIM = 2, 8, 4
CONFIGS = jnp.array([[0.0, 0.3], [1.0, 0.3], [1.0, 1e-3]])  # (alpha, kernel_std)


def rbf(x, y, h):
    return jnp.exp(-0.5 * jnp.sum((x - y) ** 2) / h**2)


def test_direction_is_svgds():
    """``phi_i = (1/n) sum_j [k(m_j, m_i) g_j + alpha grad_{m_j} k(m_j, m_i)]`` (Liu & Wang,
    2016, eq. 8), by automatic differentiation."""
    key_m, key_g = jax.random.split(jax.random.key(0))
    means = jax.random.normal(key_m, (3, DIM)) + 20.0
    grads = jax.random.normal(key_g, (3, DIM))
    h, alpha = 1.3, 0.7

    def phi(mi):
        terms = jax.vmap(lambda mj, gj: rbf(mj, mi, h) * gj + alpha * jax.grad(rbf)(mj, mi, h))
        return jnp.mean(terms(means, grads), axis=0)

    ours = kernel_average(means, grads, h) + alpha * repulsion(means, h)
    np.testing.assert_allclose(ours, jax.vmap(phi)(means), rtol=1e-5, atol=1e-6)


def sphere(x):
    return -jnp.sum((x - 1.0) ** 2, axis=-1)


def make(alpha=1.0, kernel_std=1.0, **kwargs):
    return SVOpenES(N * LAM, n_particles=N, optimizer=optax.adam(0.05), init_std=0.1,
                    init_spread=0.1, kernel_std=kernel_std, alpha=alpha, **kwargs)  # fmt: skip


@functools.cache
def runs():
    """200 generations on the sphere from x0 = 0 for each of :data:`CONFIGS` (one compile):
    the means after each (the initial ones first), the samples and the best means."""

    def run(config):
        algo = make(*config)

        def generation(state, key):
            x, state = algo.ask(key, state)
            state, _ = algo.tell(key, state, x, sphere(x))
            return state, (state.mean, x)

        key = jax.random.key(3)
        start = algo.init(key, jnp.zeros(DIM))
        final, (means, samples) = jax.lax.scan(generation, start, jax.random.split(key, 200))
        return jnp.concatenate([start.mean[None], means]), samples, algo.best(final)

    return jax.jit(jax.vmap(run))(CONFIGS)


@jax.jit
def open_es_particles(means, samples):
    """OpenES from each mean, told that particle's rows of ``samples`` (``[G, pop, D]``)."""
    es = OpenES(LAM, optimizer=optax.adam(0.05), init_std=0.1)

    def particle(mean, rows):
        def generation(state, x):
            state = es.tell(jax.random.key(1), state, x, sphere(x))[0]
            return state, state.mean

        return jax.lax.scan(generation, es.init(jax.random.key(1), mean), rows)[1]

    by_particle = samples.reshape(samples.shape[0], N, LAM, DIM).transpose(1, 0, 2, 3)
    return jax.vmap(particle)(means, by_particle)


def test_without_the_kernel_each_particle_is_open_es():
    """A kernel far narrower than the particles' distance: ``phi_i = g_i / n``, and Adam takes
    the steps it takes for ``g_i``."""
    means, samples, _ = runs()
    reference = open_es_particles(means[2, 0], samples[2, :5])  # [particle, generation, D]
    np.testing.assert_allclose(means[2, 1:6], reference.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)


def test_particles_converge_and_repel():
    means, _, best = runs()
    gap = jnp.linalg.norm(means[:, -1, 0] - means[:, -1, 1], axis=1)
    assert float(sphere(best[0])) > -0.01 and float(gap[0]) < 0.1  # near the optimum, together
    assert float(sphere(best[1])) > -(0.3**2) and float(gap[1]) > 0.3  # a kernel width apart


def test_a_particle_without_finite_fitness_waits():
    algo = make()
    state = algo.init(jax.random.key(0), jnp.zeros(DIM))
    ask, tell = jax.jit(algo.ask), jax.jit(algo.tell)
    x, state = ask(jax.random.key(1), state)
    state, _ = tell(jax.random.key(2), state, x, sphere(x))
    x, asked = ask(jax.random.key(3), state)
    fitness = sphere(x).at[:LAM].set(jnp.nan)  # particle 0's samples all fail
    new, metrics = tell(jax.random.key(4), asked, x, fitness)
    assert float(metrics["skipped"]) == 0.0
    for leaf_new, leaf_old in zip(jax.tree.leaves(new), jax.tree.leaves(asked), strict=True):
        if jnp.ndim(leaf_new) and leaf_new.shape[0] == N:  # a per-particle field
            np.testing.assert_array_equal(leaf_new[0], leaf_old[0])
    assert float(jnp.linalg.norm(new.mean[1] - asked.mean[1])) > 1e-3
    assert float(new.particle_fitness[1]) == float(jnp.median(fitness[LAM:]))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(pop_size=9, n_particles=2), "pop_size must be a multiple of n_particles = 2"),
        (dict(pop_size=6, n_particles=2), "pop_size / n_particles must be even for antithetic"),
        (dict(pop_size=8, n_particles=True), "n_particles must be a positive integer"),
        (dict(pop_size=8, kernel_std=-1.0), "kernel_std must be a finite positive number"),
        (dict(pop_size=8, alpha=float("nan")), "alpha must be a finite number >= 0"),
        (dict(pop_size=8, std_decay=1.5), r"std_decay must be in \(0, 1\]"),
        (dict(pop_size=8, init_std=-0.1), "init_std must be a finite positive number"),
    ],
)
def test_bad_hyper_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SVOpenES(**kwargs)


def test_odd_particle_samples_run_without_antithetic():
    SVOpenES(pop_size=6, n_particles=2, antithetic=False)


@pytest.mark.slow  # a reference check against evosax (nox -s slow)
def test_evosax_ignores_its_std_schedule():
    """evosax 0.3.2's ``SV_Open_ES._tell`` never applies ``std_schedule`` (``Open_ES._tell``
    sets ``std = std_schedule(t)`` after tell ``t``, and so did its pre-0.3 ``SV_OpenES``):
    its particles keep ``std_schedule(0)``. evolax's particles decay ``std`` as its OpenES
    does (``std_decay``). (With a constant std the updates agree: the reference table's
    ``SVOpenES`` rows.)"""
    evosax = pytest.importorskip("evosax.algorithms")
    from reference_table import X0 as REFERENCE_X0
    from reference_table import allow, flat, quadratic

    x0 = flat(jax.tree.map(lambda leaf: leaf[None], REFERENCE_X0))[0]
    n_particles, per_particle = 3, 6
    ours = SVOpenES(pop_size=n_particles * per_particle, n_particles=n_particles,
                    init_std=0.3, std_decay=0.5)  # fmt: skip
    with allow():
        theirs = evosax.SV_Open_ES(per_particle, n_particles, x0,
                                   std_schedule=lambda t: 0.3 * 0.5 ** (t + 1))  # fmt: skip
        params = theirs.default_params
    key = jax.random.key(0)
    state = ours.init(key, x0)
    with allow():
        their_state = theirs.init(key, state.mean, params)
    for generation in range(2):
        population, state = ours.ask(jax.random.fold_in(key, generation), state)
        state, _ = ours.tell(key, state, population, quadratic(population))
        with allow():
            their_state, _ = theirs.tell(key, population, -quadratic(population), their_state,
                                         params)  # fmt: skip
    np.testing.assert_allclose(state.std, 0.3 * 0.5**2)  # the schedule's std_schedule(1)
    np.testing.assert_allclose(their_state.std, 0.3 * 0.5)  # still std_schedule(0)
