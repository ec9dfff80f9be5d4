"""NSGA-II: survivors are the best fronts, then the least crowded; non-finite children never
survive; one compiled generation converges on ZDT1; arguments are checked. The comparison
with pymoo 0.6.2's NSGA-II is in test_nsga2_pymoo.py (slow)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.multiobjective.nsga2 import NSGA2
from evolax.pareto import hypervolume
from evolax.problems.multiobjective import zdt1

DIM = 30
ZDT_REFERENCE = jnp.array([-1.1, -1.1])  # minimised (1.1, 1.1), negated
ZDT1_OPTIMUM = 1.21 - 1 / 3  # the box 1.1^2 minus the area under 1 - sqrt(f1)


@jax.jit
def ask(algo, key, state):
    return algo.ask(key, state)


@jax.jit
def tell(algo, key, state, x, fitness):
    return algo.tell(key, state, x, fitness)


def run(algo, generations, seed=0, objective=zdt1):
    @jax.jit
    @chex.assert_max_traces(n=1)
    def generations_of(state, key):
        def one(state, key):
            ask_key, tell_key = jax.random.split(key)
            x, state = algo.ask(ask_key, state)
            state, metrics = algo.tell(tell_key, state, x, -objective(x))
            return state, metrics

        return jax.lax.scan(one, state, jax.random.split(key, generations))

    state = algo.init(jax.random.key(seed), jnp.zeros(DIM))
    return generations_of(state, jax.random.key(seed + 1))


def test_converges_on_zdt1_and_reports_the_hypervolume():
    algo = NSGA2(pop_size=40, n_objectives=2, lower=0.0, upper=1.0, reference_point=(-1.1, -1.1))
    state, metrics = run(algo, 150)
    hv = metrics["hypervolume"]
    assert float(hv[-1]) > 0.88 * ZDT1_OPTIMUM  # 40 points; seeds 0-5: 0.91-0.95 of it
    assert float(hv[-1]) > float(hv[9]) + 0.2
    np.testing.assert_allclose(float(hv[-1]), float(hypervolume(state.fitness, ZDT_REFERENCE)))
    assert int(metrics["front_size"][-1]) == 40
    assert jnp.all((state.population >= 0) & (state.population <= 1))
    assert int(state.generation) == 150


def test_survivors_are_the_best_fronts_then_the_least_crowded():
    algo = NSGA2(pop_size=6, n_objectives=2)
    state = algo.init(jax.random.key(0), jnp.zeros(2))
    # parents: two fronts of three; children: four points above the parents' fronts and two
    # below all
    parents = jnp.array([[0, 4], [2, 2], [4, 0], [0, 3], [1, 1], [3, 0]], jnp.float32)
    state = state.replace(fitness=parents)
    children = jnp.array([[0, 5], [1, 4.5], [3, 3], [5, 0], [-1, -1], [-2, -2]], jnp.float32)
    x = jnp.arange(12, dtype=jnp.float32).reshape(6, 2)
    new, _ = tell(algo, jax.random.key(1), state, x, children)
    kept = {tuple(map(float, row)) for row in new.fitness}
    # front 0: the four children; front 1: (0, 4), (2, 2), (4, 0), each dominated by one
    # child; the rest below. Two places are left for front 1: its two ends (infinite
    # crowding distance) take them.
    assert kept == {(0, 5), (1, 4.5), (3, 3), (5, 0), (0, 4), (4, 0)}
    np.testing.assert_array_equal(np.sort(np.asarray(new.rank)), [0, 0, 0, 0, 1, 1])


def test_children_with_a_non_finite_objective_never_survive():
    algo = NSGA2(pop_size=8, n_objectives=2, lower=0.0, upper=1.0)
    state = algo.init(jax.random.key(0), jnp.zeros(DIM))
    x, state = ask(algo, jax.random.key(1), state)
    state, metrics = tell(algo, jax.random.key(2), state, x, -zdt1(x))
    x, state = ask(algo, jax.random.key(3), state)
    bad = jnp.arange(8) % 2 == 0
    fitness = jnp.where(bad[:, None], jnp.array([[jnp.nan, 10.0]]), -zdt1(x))
    new, metrics = tell(algo, jax.random.key(4), state, x, fitness)
    assert float(metrics["nonfinite"]) == 4
    assert jnp.all(jnp.isfinite(new.fitness))
    kept = np.asarray(new.population)
    assert not any(np.any(np.all(kept == np.asarray(x[i])[None], axis=1)) for i in range(0, 8, 2))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(n_objectives=1), r"n_objectives must be an integer >= 2, got 1"),
        (dict(lower=1.0, upper=0.0), r"lower must be below upper, got \(1.0,\) and \(0.0,\)"),
        (dict(crossover_prob=1.5), r"crossover_prob must be"),
        (dict(mutation_rate=-0.1), r"mutation_rate must be"),
        (dict(reference_point=(0.0,)), r"reference_point must have n_objectives = 2 values"),
        (dict(block_size=0), r"block_size must be a positive integer"),
    ],
)
def test_bad_arguments_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as e:
        NSGA2(**{"pop_size": 8, "n_objectives": 2, **kwargs})
    assert "\n" not in str(e.value)


def test_fitness_must_hold_one_vector_per_member():
    algo = NSGA2(pop_size=8, n_objectives=3)
    state = algo.init(jax.random.key(0), jnp.zeros(4))
    x = jnp.zeros((8, 4))
    with pytest.raises(
        ValueError,
        match=r"^fitness must have shape \(pop_size, n_objectives\) = \(8, 3\), got \(8,\)$",
    ):
        algo.tell(jax.random.key(2), state, x, jnp.zeros(8))
    with pytest.raises(
        ValueError, match=r"lower must have one value or one per variable \(4\), got 3"
    ):
        NSGA2(pop_size=8, n_objectives=3, lower=(0, 0, 0), upper=1.0).init(
            jax.random.key(0), jnp.zeros(4)
        )
