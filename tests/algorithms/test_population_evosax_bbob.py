"""SimpleGA and PSO against evosax 0.3.2 on BBOB functions, where the published variants differ.

Where the update rules agree, ``test_simple_ga.py`` and ``test_pso.py`` compare them to evosax
generation by generation from the same random numbers. The algorithms as configured by default
differ from evosax's (named in each test), so here the final best ``f - f_opt`` of both, on a
few BBOB functions over a few seeds, must be of the same order: the medians within a factor 10
of each other (gaps below 1e-5 count as solved). Each library starts at 0 with an initial
spread of 2 (evolax draws its first generation itself; evosax gets ``2 * N(0, I)``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms import PSO, SimpleGA
from evolax.problems import bbob_problem

evosax = pytest.importorskip("evosax.algorithms")

DIM, POP, GENERATIONS, INIT_STD, N_SEEDS = 5, 32, 150, 2.0, 11


def final_gaps(problem, evolax_algo, evosax_es):
    """Final best ``f - f_opt`` of ``N_SEEDS`` evolax and evosax runs (one compiled scan
    each, called per seed)."""

    def evolax_run(key):
        init_key, key = jax.random.split(key)
        state = evolax_algo.init(init_key, jnp.zeros(DIM))

        def generation(state, key):
            ask_key, tell_key = jax.random.split(key)
            x, state = evolax_algo.ask(ask_key, state)
            return evolax_algo.tell(tell_key, state, x, -problem.delta_f(x))[0], None

        state, _ = jax.lax.scan(generation, state, jax.random.split(key, GENERATIONS))
        return -state.best_fitness

    def evosax_run(key):
        init_key, key = jax.random.split(key)
        params = evosax_es.default_params
        x = INIT_STD * jax.random.normal(init_key, (POP, DIM))
        state = evosax_es.init(init_key, x, problem.delta_f(x), params)

        def generation(state, key):
            ask_key, tell_key = jax.random.split(key)
            x, state = evosax_es.ask(ask_key, state, params)
            return evosax_es.tell(tell_key, x, problem.delta_f(x), state, params)[0], None

        state, _ = jax.lax.scan(generation, state, jax.random.split(key, GENERATIONS))
        return state.best_fitness

    keys = jax.random.split(jax.random.key(0), N_SEEDS)
    return [np.array([jax.jit(run)(key) for key in keys]) for run in (evolax_run, evosax_run)]


def assert_same_order(ours, theirs, solved=1e-5):
    ratio = (np.median(ours) + solved) / (np.median(theirs) + solved)
    assert 0.1 < ratio < 10, (ours, theirs)


@pytest.mark.slow  # reference runs over BBOB functions (nox -s slow)
@pytest.mark.parametrize("function_id", [1, 8, 15])
def test_simple_ga_is_on_par_with_evosax(function_id):
    """Such et al.'s GA (1 unmutated elite, T = pop / 5) against evosax's SimpleGA (no
    elitism, T = pop / 2, no crossover by default), both with mutation std 0.1: d = 5, pop 32,
    150 generations, 11 seeds (measured medians, evolax vs evosax: sphere 0.0017 vs 0.0035,
    Rosenbrock 0.96 vs 2.2, Rastrigin 26 vs 12: the stronger truncation is greedier)."""
    algo = SimpleGA(pop_size=POP, mutation_std=0.1, init_std=INIT_STD)
    es = evosax.SimpleGA(POP, jnp.zeros(DIM), std_schedule=optax.constant_schedule(0.1))
    assert_same_order(*final_gaps(bbob_problem(function_id, DIM), algo, es))


@pytest.mark.slow  # reference runs over BBOB functions (nox -s slow)
@pytest.mark.parametrize("function_id", [1, 8, 15])
def test_pso_is_on_par_with_evosax(function_id):
    """PSO with evosax's inertia-weight parameters (w = 0.75, c1 = 1.5, c2 = 2, global best)
    against evosax's PSO, which draws r1, r2 once per particle instead of per coordinate:
    d = 5, pop 32, 150 generations, 11 seeds (measured medians, evolax vs evosax: sphere 9e-7
    vs 6e-9, Rosenbrock 1.6 vs 0.54, Rastrigin 8.0 vs 20). Per-particle draws make evosax's
    move rotation-invariant, per-coordinate draws favour separable functions: on the rotated
    ellipsoid f10 evosax does far better (5 seeds: 645 vs 3.4), on the separable ellipsoid f2
    evolax does (0.024 vs 3.0), so neither is compared."""
    algo = PSO(POP, "inertia", cognitive=1.5, social=2.0, inertia=0.75, init_std=INIT_STD)
    es = evosax.PSO(POP, jnp.zeros(DIM))
    assert_same_order(*final_gaps(bbob_problem(function_id, DIM), algo, es))
