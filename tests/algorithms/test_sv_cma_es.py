"""SVCMAES: its particles are CMA-ES (exactly, without the kernel), its kernel step is SVGD's
repulsion, it optimises, its particles repel, and bad hyper-parameters raise."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.cma.cma_es import CMAES
from evolax.algorithms.cma.cma_family import cma_parameters
from evolax.algorithms.cma.sv_cma_es import SVCMAES
from evolax.algorithms.stein import repulsion

N, LAM, DIM = 2, 8, 4


def rbf(x, y, h):
    return jnp.exp(-0.5 * jnp.sum((x - y) ** 2) / h**2)


def svgd_repulsion(means, h):
    """``(1/n) sum_j grad_{m_j} k(m_j, m_i)`` by automatic differentiation."""
    grad = jax.grad(rbf)
    return jax.vmap(lambda mi: jnp.mean(jax.vmap(lambda mj: grad(mj, mi, h))(means), 0))(means)


def test_repulsion_is_the_kernel_gradient():
    means = jax.random.normal(jax.random.key(0), (3, DIM)) * 2.0 + 50.0  # far from 0
    np.testing.assert_allclose(
        repulsion(means, 1.7), svgd_repulsion(means, 1.7), rtol=1e-4, atol=1e-6
    )


def sphere(x):
    return -jnp.sum((x - 1.0) ** 2, axis=-1)


ALPHA, KERNEL_STD = 0.01, 0.1  # repulsion ~ alpha / (n h^2): strong enough to stay apart


@functools.cache
def runs():
    """Two particles on the sphere from x0 = 0, without and with the kernel (one compile): the
    states after each of 150 generations (the initial one first) and the samples."""

    def run(alpha):
        algo = SVCMAES(N * LAM, n_particles=N, init_std=0.5, init_spread=0.1,
                       kernel_std=KERNEL_STD, alpha=alpha)  # fmt: skip

        def generation(state, key):
            x, state = algo.ask(key, state)
            state, _ = algo.tell(key, state, x, sphere(x))
            return state, (state, x)

        key = jax.random.key(3)
        start = algo.init(key, jnp.zeros(DIM))
        final, (states, samples) = jax.lax.scan(generation, start, jax.random.split(key, 150))
        states = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), start, states)
        return states, samples, algo.best(final)

    return jax.jit(jax.vmap(run))(jnp.array([0.0, ALPHA]))


def generation_of(states, run, g):
    return jax.tree.map(lambda leaf: leaf[run, g], states)


@jax.jit
def cma_es_particles(means, samples):
    """CMA-ES from each mean, told that particle's rows of ``samples`` (``[G, pop, D]``)."""
    cma = CMAES(LAM, init_std=0.5)

    def particle(mean, rows):
        def generation(state, x):
            return cma.tell(jax.random.key(1), state, x, sphere(x))[0], None

        return jax.lax.scan(generation, cma.init(jax.random.key(1), mean), rows)[0]

    by_particle = samples.reshape(samples.shape[0], N, LAM, DIM).transpose(1, 0, 2, 3)
    return jax.vmap(particle)(means, by_particle)


def test_without_the_kernel_each_particle_is_cma_es():
    states, samples, _ = runs()
    reference = cma_es_particles(states.mean[0, 0], samples[0, :3])
    ours = generation_of(states, 0, 3)
    for name in ("mean", "std", "p_sigma", "p_c", "cov"):
        np.testing.assert_allclose(
            getattr(ours, name), getattr(reference, name), rtol=1e-5, atol=1e-6
        )


def test_the_kernel_step_moves_the_means():
    """Mean ``i`` moves by ``std_i <y>_w`` (CMA-ES's recombination) plus ``alpha`` times the
    repulsion."""
    states, samples, _ = runs()
    weights = np.maximum(cma_parameters(DIM, LAM).weights, 0.0)
    pushes = []
    for g in range(10):
        means, told = states.mean[1, g], states.mean[1, g + 1]
        push = ALPHA * svgd_repulsion(means, KERNEL_STD)
        for i in range(N):
            rows = np.asarray(samples[1, g, i * LAM : (i + 1) * LAM])
            ranked = rows[np.argsort(-np.asarray(sphere(rows)))]
            step = weights @ (ranked - np.asarray(means[i]))  # std <y>_w
            np.testing.assert_allclose(told[i], means[i] + step + push[i], rtol=1e-5, atol=1e-6)
        pushes.append(float(jnp.max(jnp.linalg.norm(push, axis=1))))
    assert max(pushes) > 1e-2


def test_particles_converge_and_repel():
    states, _, best = runs()
    means = states.mean[:, -1]
    gap = jnp.linalg.norm(means[:, 0] - means[:, 1], axis=1)
    assert float(sphere(best[0])) > -1e-8 and float(gap[0]) < 1e-3  # CMA-ES meet at the optimum
    # repelled: about a kernel width apart, the best within a kernel width of the optimum
    assert float(gap[1]) > KERNEL_STD and float(sphere(best[1])) > -((2 * KERNEL_STD) ** 2)


def test_best_is_the_particle_with_the_best_median():
    states, _, _ = runs()
    state = generation_of(states, 1, 0)
    algo = SVCMAES(N * LAM, n_particles=N)
    np.testing.assert_array_equal(algo.best(state), jnp.zeros(DIM))  # particle 0 = x0
    assert float(jnp.min(jnp.abs(state.mean[1]))) > 0  # the others spread about it
    state = state.replace(particle_fitness=jnp.array([-3.0, -1.0]))
    np.testing.assert_array_equal(algo.best(state), state.mean[1])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(pop_size=10, n_particles=3), "pop_size must be a multiple of n_particles = 3"),
        (dict(pop_size=3, n_particles=3), r"pop_size / n_particles must be at least 2"),
        (dict(pop_size=8, n_particles=0), "n_particles must be a positive integer"),
        (dict(pop_size=8, kernel_std=0.0), "kernel_std must be a finite positive number"),
        (dict(pop_size=8, alpha=-1.0), "alpha must be a finite number >= 0"),
        (dict(pop_size=8, init_spread=-0.1), "init_spread must be a finite number >= 0"),
        (dict(pop_size=8, init_std=0.0), "init_std must be a finite positive number"),
    ],
)
def test_bad_hyper_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SVCMAES(**kwargs)
