"""MR15GA: a (mu + mu) GA with the 1/5 success rule, against a numpy transcription."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.ga.mr15_ga import MR15GA
from evolax.algorithms.noise import gaussian
from helpers import shifted_sphere_states

POP, DIM = 10, 6
ALGO = MR15GA(POP, init_std=0.5, std_min=0.1, std_max=1.0)
"""One configuration for the unit tests (one compilation)."""


@functools.cache
def compiled(algo):
    """``ask`` and ``tell`` of ``algo``, jitted once per configuration."""
    return jax.jit(algo.ask), jax.jit(algo.tell)


def told(population, fitness, std):
    """A state whose archive is ``population`` with ``fitness``, and whose std is ``std``."""
    state = ALGO.init(jax.random.key(0), jnp.zeros(DIM))
    return state.replace(
        population=jnp.asarray(population, jnp.float32),
        fitness=jnp.asarray(fitness, jnp.float32),
        mutation_std=jnp.float32(std),
    )


def numpy_tell(population, fitness, std, children, child_fitness, threshold=0.2):
    """The std doubled if more than ``threshold`` of the children beat their own parent, else
    halved (clipped to ``[0.1, 1]``); the archive: the best ``POP`` of children then parents
    (NaN as ``-inf``, stable order)."""
    success = np.mean(np.nan_to_num(child_fitness, nan=-np.inf) > fitness)
    new_std = np.clip(std * 2.0 if success > threshold else std / 2.0, 0.1, 1.0)
    merged = np.nan_to_num(np.concatenate([child_fitness, fitness]), nan=-np.inf)
    keep = np.argsort(-merged, kind="stable")[:POP]
    return new_std, np.concatenate([children, population])[keep], merged[keep]


@pytest.mark.parametrize(("successes", "factor"), [(2, 0.5), (3, 2.0), (0, 0.5), (10, 2.0)])
def test_generation_matches_the_transcription(successes, factor):
    """10 children: the std doubles when more than 2 of them beat their own parent (strictly:
    a tie is no success, nor is NaN) and halves otherwise; the archive keeps the best 10."""
    rng = np.random.default_rng(successes)
    population = rng.normal(size=(POP, DIM)).astype(np.float32)
    fitness = rng.normal(size=POP).astype(np.float32)
    fitness[4] = -np.inf  # a parent without a finite fitness: its child is a success
    state = told(population, fitness, 0.3)
    ask, tell = compiled(ALGO)
    key = jax.random.key(2)
    x, asked = ask(key, state)
    change = np.full(POP, -0.5, np.float32)
    change[1::3] = 0.0  # ties
    change[[9, 8, 7, 6, 5, 3, 2, 1, 0][:successes]] = 0.5
    child_fitness = fitness + change
    child_fitness[4] = 1.0 if successes == 10 else np.nan
    new, metrics = tell(jax.random.key(3), asked, x, child_fitness)

    noise = np.asarray(gaussian(key, (POP, DIM)))
    np.testing.assert_allclose(x, population + 0.3 * noise, rtol=1e-6, atol=1e-6)
    std, archive, archive_fitness = numpy_tell(
        population, fitness, 0.3, np.asarray(x), child_fitness
    )
    np.testing.assert_allclose(new.mutation_std, 0.3 * factor, rtol=1e-6)
    np.testing.assert_allclose(new.mutation_std, std, rtol=1e-6)
    np.testing.assert_allclose(metrics["success_rate"], successes / POP, rtol=1e-6)
    np.testing.assert_array_equal(new.population, archive)
    np.testing.assert_array_equal(new.fitness, archive_fitness)


def test_first_generation_and_clipping():
    ask, tell = compiled(ALGO)
    state = ALGO.init(jax.random.key(0), jnp.ones(DIM))
    x, asked = ask(jax.random.key(1), state)
    # the archive (x0 everywhere) mutated with init_std; no parents to beat: std unchanged
    noise = np.asarray(gaussian(jax.random.key(1), (POP, DIM)))
    np.testing.assert_allclose(x, 1.0 + 0.5 * noise, rtol=1e-6)
    fitness = -jnp.sum(x**2, axis=1)
    state, _ = tell(jax.random.key(2), asked, x, fitness)
    assert float(state.mutation_std) == 0.5
    order = np.argsort(-np.asarray(fitness), kind="stable")
    np.testing.assert_array_equal(state.population, np.asarray(x)[order])  # every child kept
    for std, change, clipped in [(0.8, 1.0, 1.0), (0.15, -1.0, 0.1)]:  # all succeed, all fail
        x, asked = ask(jax.random.key(3), state.replace(mutation_std=jnp.float32(std)))
        new, _ = tell(jax.random.key(4), asked, x, state.fitness + change)
        assert float(new.mutation_std) == pytest.approx(clipped)


def test_solves_a_shifted_sphere():
    """evosax's defaults (sigma_0 = 1, factor 2, threshold 1/5): d = 10, pop 20, 300
    generations, 2 seeds: ||x - x*||^2 < 1e-8 (measured 8e-12, 4e-11), the std adapted down
    by orders of magnitude."""
    dim, gens = 10, 300
    algo = MR15GA(20)
    for state in shifted_sphere_states(algo, dim, gens, jax.random.split(jax.random.key(0), 2)):
        assert -float(state.best_fitness) < 1e-8 and float(state.mutation_std) < 1e-3
        np.testing.assert_array_equal(algo.best(state), state.population[0])  # elitist
