"""SimpleGA against a numpy transcription of Such et al. (2017), algorithm 1, and on a sphere."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.ga.common import next_generation
from evolax.algorithms.ga.simple_ga import SimpleGA

X0 = {"a": jnp.arange(6.0).reshape(2, 3), "b": jnp.array([-1.0, 0.5])}  # D = 8


def flat(population):
    """A population of X0-shaped genomes as a float64 ``[pop, 8]`` matrix (ravel order)."""
    return np.concatenate(
        [np.asarray(population["a"], np.float64).reshape(-1, 6), np.asarray(population["b"])],
        axis=1,
    )


def numpy_next_generation(population, fitness, choice, noise, n_parents, n_elites, sigma):
    """Truncation selection + Gaussian mutation + elitism; NaN ranks last, ties by position."""
    fitness = np.where(np.isnan(fitness), -np.inf, fitness)
    ranked = population[np.argsort(-fitness, kind="stable")]
    parents = ranked[:n_parents]
    children = [parents[c] + sigma * n for c, n in zip(choice, noise, strict=True)]
    return np.concatenate([ranked[:n_elites], np.array(children)])


def genomes(matrix):
    """A ``[pop, 8]`` matrix as a population of X0-shaped genomes."""
    return {"a": jnp.asarray(matrix[:, :6].reshape(-1, 2, 3)), "b": jnp.asarray(matrix[:, 6:])}


def told_state(algo, population, fitness):
    """A state whose last evaluated generation is ``population`` with ``fitness``."""
    state = algo.init(jax.random.key(0), X0)
    state, _ = algo.tell(jax.random.key(1), state, genomes(population), jnp.asarray(fitness))
    return state


@pytest.mark.parametrize("n_elites", [0, 1, 3])
def test_ask_matches_truncation_selection_and_elitism(n_elites):
    pop, n_parents, sigma = 8, 4, 0.3
    algo = SimpleGA(pop_size=pop, n_parents=n_parents, n_elites=n_elites, mutation_std=sigma)
    rng = np.random.default_rng(1)
    population = rng.normal(size=(pop, 8)).astype(np.float32)
    # a NaN that would rank first if NaN were compared naively, and a tie (ranked by position)
    fitness = np.array([3, np.nan, 7, 1, 7, -2, 0, 5], np.float32)
    state = told_state(algo, population, fitness)

    key = jax.random.key(7)
    children, _ = algo.ask(key, state)
    choice, noise = algo.draws(key, jnp.zeros(8))
    expected = numpy_next_generation(
        population.astype(np.float64),
        fitness,
        np.asarray(choice),
        np.asarray(noise, np.float64)[n_elites:],
        n_parents,
        n_elites,
        sigma,
    )
    np.testing.assert_allclose(flat(children), expected, rtol=1e-6, atol=1e-6)
    # the pure operator ranks a raw NaN last too (tell stores NaN as -inf before ask sees it)
    direct = next_generation(
        jnp.asarray(population),
        jnp.asarray(fitness),
        choice,
        noise[n_elites:],
        n_parents,
        n_elites,
        sigma,
    )
    np.testing.assert_allclose(direct, expected, rtol=1e-6, atol=1e-6)
    # the elites are copied bit for bit: members 2, 4, 7 (fitness 7, 7, 5) in that order
    np.testing.assert_array_equal(flat(children)[:n_elites], population[[2, 4, 7][:n_elites]])


def test_parent_choice_is_uniform_over_the_top_n_parents():
    algo = SimpleGA(pop_size=20_001, n_parents=5, n_elites=1)
    choice, noise = algo.draws(jax.random.key(3), jnp.zeros(2))
    choice = np.asarray(choice)
    assert choice.shape == (20_000,) and noise.shape == (20_001, 2)
    counts = np.bincount(choice, minlength=5)
    assert counts.shape == (5,)  # every value in [0, n_parents)
    np.testing.assert_allclose(counts / 20_000, 0.2, atol=0.015)
    assert abs(float(jnp.mean(noise))) < 0.02 and abs(float(jnp.std(noise)) - 1) < 0.02


@pytest.mark.parametrize("n_elites", [0, 1])
def test_first_ask_is_x0_plus_mutations_keeping_x0_as_the_elite(n_elites):
    algo = SimpleGA(pop_size=8, n_parents=2, n_elites=n_elites, mutation_std=0.1, init_std=0.5)
    state = algo.init(jax.random.key(0), X0)
    key = jax.random.key(4)
    population, _ = algo.ask(key, state)
    _, noise = algo.draws(key, jnp.zeros(8))
    x0 = flat(jax.tree.map(lambda x: x[None], X0))[0]
    expected = x0[None] + 0.5 * np.asarray(noise, np.float64)
    if n_elites:
        expected[0] = x0
    np.testing.assert_allclose(flat(population), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(algo.best(state)["a"], X0["a"])  # best is x0 before any tell


def test_elites_are_judged_by_their_fresh_fitness():
    """A member that was lucky once loses its elite place when re-evaluated lower."""
    algo = SimpleGA(pop_size=8, n_parents=2, n_elites=1, mutation_std=0.1)
    key = jax.random.key(3)
    population = np.arange(64, dtype=np.float32).reshape(8, 8)
    state = told_state(algo, population, np.array([0, 9, 1, 2, 0, 0, 0, 0], np.float32))
    children, state = algo.ask(jax.random.key(1), state)
    np.testing.assert_array_equal(flat(children)[0], population[1])  # the lucky elite
    # re-evaluated: the elite (row 0) now scores 0.5 and child 3 scores 3
    state, metrics = algo.tell(key, state, children, jnp.array([0.5, -1, 0, 3, 0, 0, 0, 0]))
    following, _ = algo.ask(jax.random.key(2), state)
    np.testing.assert_array_equal(flat(following)[0], flat(children)[3])
    # the best-ever record keeps the genome that scored 9
    assert float(metrics["best_fitness"]) == 9.0
    np.testing.assert_array_equal(
        flat(jax.tree.map(lambda x: x[None], algo.best(state)))[0], population[1]
    )


def test_nan_fitness_is_never_selected():
    algo = SimpleGA(pop_size=8, n_parents=2, n_elites=1, mutation_std=0.1)
    population = np.random.default_rng(0).normal(size=(8, 8)).astype(np.float32)
    fitness = np.full(8, np.nan, np.float32)
    fitness[[1, 3]] = [-3.0, -4.0]
    state = told_state(algo, population, fitness)
    assert float(state.best_fitness) == -3.0
    np.testing.assert_array_equal(state.fitness, np.where(np.isnan(fitness), -np.inf, fitness))
    children, _ = algo.ask(jax.random.key(5), state)
    np.testing.assert_array_equal(flat(children)[0], population[1])
    # every child descends from members 1 or 3, never from a NaN member
    choice, noise = algo.draws(jax.random.key(5), jnp.zeros(8))
    parents = population[[1, 3]][np.asarray(choice)]
    np.testing.assert_allclose(flat(children)[1:], parents + 0.1 * np.asarray(noise)[1:], atol=1e-6)


def test_a_first_generation_without_finite_fitness_is_drawn_again_around_x0():
    """The template skips a generation with no finite fitness; the GA then still has nothing
    to select from, so the next ask is a first generation again (x0 as the elite)."""
    algo = SimpleGA(pop_size=8, n_parents=2, n_elites=1, mutation_std=0.1, init_std=0.5)
    state = algo.init(jax.random.key(0), X0)
    population, state = algo.ask(jax.random.key(1), state)
    state, metrics = algo.tell(jax.random.key(2), state, population, jnp.full(8, jnp.nan))
    assert float(metrics["skipped"]) == 1.0 and int(state.generation) == 1
    key = jax.random.key(3)
    again, _ = algo.ask(key, state)
    _, noise = algo.draws(key, jnp.zeros(8))
    x0 = flat(jax.tree.map(lambda x: x[None], X0))[0]
    expected = x0[None] + 0.5 * np.asarray(noise, np.float64)
    expected[0] = x0
    np.testing.assert_allclose(flat(again), expected, rtol=1e-6, atol=1e-6)


def test_fixed_sigma_plateaus_on_a_shifted_sphere():
    """d = 10, pop 100, T = 20, 1 elite, sigma = 0.03, 300 generations (30,000 evaluations),
    3 seeds: ||x - x*||^2 < 5e-3 (measured 0.7e-3 .. 1.1e-3, already ~2e-3 at generation 100),
    but not below 1e-6: with a fixed mutation power the GA stalls at a gap of order
    d sigma^2 = 9e-3 (it cannot reach 1e-8)."""
    dim, gens = 10, 300
    algo = SimpleGA(pop_size=100, n_parents=20, n_elites=1, mutation_std=0.03, init_std=1.0)
    optimum = jnp.linspace(-2.0, 3.0, dim)

    def sphere(population):
        return -jnp.sum((population - optimum[None]) ** 2, 1)

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        population, state = algo.ask(ask_key, state)
        state, metrics = algo.tell(tell_key, state, population, sphere(population))
        return state, metrics["best_fitness"]

    def one_seed(key):
        return jax.lax.scan(generation, algo.init(key, jnp.zeros(dim)), jax.random.split(key, gens))

    # one compiled run, called per seed (vmapping threefry over seeds compiles slowly on CPU)
    run = jax.jit(one_seed)
    runs = [run(key) for key in jax.random.split(jax.random.key(0), 3)]
    states = jax.tree.map(lambda *leaves: jnp.stack(leaves), *[state for state, _ in runs])
    best_fitness = np.stack([best for _, best in runs])
    assert np.all(np.diff(best_fitness, axis=1) >= 0)  # best-ever never decreases
    gaps = -best_fitness[:, -1]
    assert np.all(gaps < 5e-3) and np.all(gaps > 1e-6), gaps
    # best() is the genome that earned best_fitness
    np.testing.assert_allclose(sphere(jax.vmap(algo.best)(states)), best_fitness[:, -1], rtol=1e-5)


def test_the_default_truncation():
    assert SimpleGA(pop_size=50).n_parents == 10  # the default T = pop_size // 5
