"""A population-based algorithm starts from the researcher's own evaluated population:
``init_population(key, population, fitness)`` holds those members and fitness as if they were
the first generation, and the best of them is the best-ever."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import evolax

KEY = jax.random.key(0)
POPULATION = {"w": jax.random.normal(jax.random.key(1), (8, 2, 2)), "b": jnp.arange(8.0)[:, None]}
FITNESS = jnp.array([0.5, 3.0, np.nan, -1.0, 2.0, np.inf, 0.0, 1.0])  # best finite: member 1


def flat(population):
    return np.concatenate([population["b"], population["w"].reshape(8, -1)], axis=1)


@pytest.mark.parametrize(
    "algo",
    [
        evolax.SimpleGA(pop_size=8),
        evolax.DifferentialEvolution(pop_size=8),
        evolax.PSO(pop_size=8),
    ],
    ids=lambda algo: type(algo).__name__,
)
def test_the_state_holds_the_given_members_and_their_best(algo):
    state = algo.init_population(KEY, POPULATION, FITNESS)
    np.testing.assert_array_equal(state.population, flat(POPULATION))
    finite = np.where(np.isfinite(FITNESS), FITNESS, -np.inf)  # the fitness rule
    np.testing.assert_array_equal(state.fitness, finite)
    assert float(state.best_fitness) == 3.0 and int(state.generation) == 1
    best = algo.best(state)
    assert jax.tree.structure(best) == jax.tree.structure(jax.tree.map(lambda x: x[0], POPULATION))
    np.testing.assert_array_equal(best["w"], POPULATION["w"][1])
    population, _ = algo.ask(KEY, state)  # the search goes on from them
    assert np.all(np.isfinite(flat(population)))


def test_several_objectives_and_the_elite_of_a_ga():
    nsga = evolax.NSGA2(pop_size=8, n_objectives=2)
    objectives = jnp.stack([FITNESS, -jnp.arange(8.0)], axis=1)
    state = nsga.init_population(KEY, POPULATION, objectives)
    assert float(state.best_fitness) == 2.0  # member 1: 3.0 - 1.0, the largest finite sum
    kept = {tuple(row) for row in np.asarray(state.population)}
    evaluated = flat(POPULATION)[np.isfinite(FITNESS)]
    assert {tuple(row) for row in evaluated} <= kept  # every member with a finite fitness
    # a GA keeping one elite hands the best given member to the next generation unchanged
    ga = evolax.SimpleGA(pop_size=8, n_elites=1)
    children, _ = ga.ask(KEY, ga.init_population(KEY, POPULATION, FITNESS))
    assert any(np.array_equal(row, flat(POPULATION)[1]) for row in flat(children))
