"""GESMRGA against a numpy transcription of Kumar et al.'s (2022) GESMR generation, and on a
sphere."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.ga.gesmr_ga import GESMRGA, group_of_children
from helpers import shifted_sphere_states

POP, DIM, GROUPS = 14, 5, 4  # 13 children: groups of 4, 3, 3 and 3; 2 std parents
ALGO = GESMRGA(
    POP, n_parents=5, n_groups=GROUPS, mutation_std_low=0.01, mutation_std_high=10.0, std_meta=3.0
)
"""One configuration for the unit tests (one compilation)."""


@functools.cache
def compiled(algo):
    """``ask``, ``tell``, ``draws`` and ``std_draws`` of ``algo``, jitted once."""
    return tuple(map(jax.jit, (algo.ask, algo.tell, algo.draws, algo.std_draws)))


def test_groups_are_consecutive_and_balanced():
    np.testing.assert_array_equal(group_of_children(13, 4), [0] * 4 + [1] * 3 + [2] * 3 + [3] * 3)
    np.testing.assert_array_equal(group_of_children(100, 10), np.repeat(np.arange(10), 10))
    assert GESMRGA(101).n_groups == 10 and GESMRGA(8).n_groups == 2  # isqrt(pop - 1)
    assert ALGO.n_std_parents == 2 and GESMRGA(8).n_std_parents == 1


def test_generation_matches_the_transcription():
    ask, tell, draws, std_draws = compiled(ALGO)
    rng = np.random.default_rng(0)
    population = rng.normal(size=(POP, DIM)).astype(np.float32)
    fitness = rng.normal(size=POP).astype(np.float32)
    fitness[[2, 7]] = [np.nan, 4.0]  # NaN ranks last, not first
    state = ALGO.init(jax.random.key(0), jnp.zeros(DIM))
    state, _ = tell(jax.random.key(1), state, population, fitness)
    stds = np.array([0.1, 1.0, 10.0, 100.0], np.float32)
    state = state.replace(mutation_std=jnp.asarray(stds))

    # ask: the elite, then each group's children mutated with its std
    key = jax.random.key(2)
    x, asked = ask(key, state)
    choice, noise = map(np.asarray, draws(key, jnp.zeros(DIM)))
    ranked = np.argsort(-np.where(np.isnan(fitness), -np.inf, fitness), kind="stable")
    parents = ranked[:5][choice]
    child_std = stds[group_of_children(POP - 1, GROUPS)]
    np.testing.assert_array_equal(x[0], population[7])
    np.testing.assert_allclose(
        x[1:], population[parents] + child_std[:, None] * noise[1:], rtol=1e-5
    )
    np.testing.assert_array_equal(asked.parent_fitness[1:], fitness[parents])

    # tell: each std's fitness is its group's best change from parent to child; the elite's
    # change is no group's, and NaN children change by -inf (group 1 would win with +inf)
    change = np.array([10, 0.5, -1, 2, -2, np.inf, np.inf, -2, 0.25, -5, -5, 1, -5, -5])
    child_fitness = np.where(np.isfinite(change), asked.parent_fitness + change, np.nan)
    # group changes 2, -2, 0.25, 1: stds ranked 0.1, 100, 10, 1; the best 2 are parents
    drawn = set()
    for seed in range(4):
        tell_key = jax.random.key(3 + seed)
        new, metrics = tell(tell_key, asked, x, child_fitness)
        std_choice, exponent = map(np.asarray, std_draws(tell_key, jnp.zeros(())))
        assert std_choice.shape == exponent.shape == (GROUPS - 1,)
        expected = [0.1, *(np.array([0.1, 100.0])[std_choice] * 3.0**exponent)]
        np.testing.assert_allclose(new.mutation_std, expected, rtol=1e-6)
        assert float(metrics["elite_std"]) == pytest.approx(0.1)
        drawn.update(std_choice.tolist())
    assert drawn == {0, 1}
    np.testing.assert_array_equal(new.population, x)


def test_the_first_generation_leaves_the_stds():
    ask, tell, draws, _ = compiled(ALGO)
    state = ALGO.init(jax.random.key(0), jnp.ones(DIM))
    np.testing.assert_allclose(state.mutation_std, [0.01, 0.1, 1.0, 10.0], rtol=1e-5)
    x, asked = ask(jax.random.key(1), state)
    _, noise = draws(jax.random.key(1), jnp.ones(DIM))
    np.testing.assert_allclose(x[1:], 1.0 + np.asarray(noise)[1:], rtol=1e-6)  # init_std 1
    np.testing.assert_array_equal(x[0], np.ones(DIM))
    new, _ = tell(jax.random.key(2), asked, x, -jnp.sum(x**2, axis=1))
    np.testing.assert_array_equal(new.mutation_std, state.mutation_std)


def test_solves_a_shifted_sphere():
    """d = 10, pop 21 (4 groups of 5), 300 generations, 2 seeds, from stds log-spaced over
    1e-3 .. 1e3: ||x - x*||^2 < 1e-9 (measured 3.5e-12, 3.6e-12)."""
    dim, gens = 10, 300
    algo = GESMRGA(21)
    for state in shifted_sphere_states(algo, dim, gens, jax.random.split(jax.random.key(0), 2)):
        assert -float(state.best_fitness) < 1e-9
        assert float(state.mutation_std[0]) < 1e-4  # the elite std shrank with the gap
