"""MA-ES against evosax 0.3.2's ``MA_ES``.

evosax's ``MA_ES`` takes CMA-ES's parameters without negative weights, which are Beyer &
Sendhoff's (2017, fig. 3): the weights ``ln((lambda + 1) / 2) - ln i`` of the ``mu`` best,
``mu_eff``, ``c_sigma``, ``d_sigma``, ``c1`` and ``c_w`` (its ``c_mu``); the mean (M9), the path
``s`` (M10, its ``p_std``) and the step size (M12) are the paper's. Mappings: evolax's
``init_std`` is evosax's ``std_init``; evolax's ``E|N(0, I)|`` is exact where evosax uses the
approximation ``sqrt(n) (1 - 1 / (4 n) + 1 / (21 n^2))`` (1e-4 apart at n = 8), so evosax is
given the exact value as ``chi_n``; evosax keeps the ``z`` of its last ``ask`` in its state, so
it is given the ``z`` of evolax's population, ``M^{-1} (x - mean) / sigma``.

evosax departs from the paper in (M11): it sums ``<z z^T>_w`` as ``sum_i w_i z_i z_i^T`` with
the weights by rank applied to the samples *in the order they were drawn*
(``params.weights``), not to the ``mu`` best, so its ``M`` learns the paper's update only when
the population happens to arrive sorted best first (the same bug as its ``LM_MA_ES``). So
evosax is told the population sorted best first: for five generations the two states (mean,
``sigma``, ``s``, ``M``) agree; told in the drawn order, evosax's mean, ``sigma`` and ``s``
still agree with evolax's but its ``M`` does not. On BBOB functions this costs evosax: see
:func:`test_bbob_best_fitness_against_evosax`.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.cma.cma_family import expected_norm
from evolax.algorithms.cma.ma_es import MAES
from evolax.problems import bbob_problem
from helpers import best_after

pytestmark = pytest.mark.slow
evosax = pytest.importorskip("evosax.algorithms")

RTOL, ATOL = 2e-5, 2e-6


def quadratic(x, dim):
    """A fixed random rotated ellipsoid, maximised at a random target: no ties."""
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    hessian = jnp.asarray(q @ np.diag(rng.uniform(0.5, 5.0, dim)) @ q.T, jnp.float32)
    y = x - jnp.asarray(rng.normal(size=dim), jnp.float32)[None]
    return -jnp.sum(jnp.dot(y, hessian) * y, axis=1)


def test_ma_es_matches_evosax_told_the_population_sorted():
    dim, pop, init_std = 8, 10, 0.5
    x0 = jnp.linspace(-1.0, 1.0, dim)
    ours = MAES(pop_size=pop, init_std=init_std)
    p = ours.parameters(dim)
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        theirs = evosax.MA_ES(population_size=pop, solution=jnp.zeros(dim))
        params = theirs.default_params
        # the paper's parameters, the same in both
        np.testing.assert_allclose(params.weights, p.weights, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(
            [params.mu_eff, params.c_std, params.d_std, params.c_1, params.c_mu],
            [p.mu_eff, p.c_sigma, p.d_sigma, p.c1, p.c_w],
            rtol=1e-6,
        )
        np.testing.assert_allclose(params.chi_n, expected_norm(dim), rtol=2e-4)
        params = params.replace(std_init=init_std, chi_n=expected_norm(dim))
        sorted_state = theirs.init(jax.random.key(0), x0, params)

    key = jax.random.key(0)
    state = ours.init(key, x0)
    tell = jax.jit(ours.tell)
    for step in range(5):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, step))
        population, _ = ours.ask(ask_key, state)
        fitness = quadratic(population, dim)
        new, _ = tell(tell_key, state, population, fitness)
        # the z of the population, in float64
        steps = (np.asarray(population, np.float64) - np.asarray(state.mean)) / float(state.std)
        z = jnp.asarray(np.linalg.solve(np.asarray(state.matrix, np.float64), steps.T).T)
        order = np.argsort(-np.asarray(fitness))  # best first
        with jax.numpy_rank_promotion("allow"):
            as_drawn, _ = theirs.tell(
                tell_key, population, -fitness, sorted_state.replace(z=z), params
            )
            sorted_state, _ = theirs.tell(
                tell_key,
                population[order],
                -fitness[order],
                sorted_state.replace(z=z[order]),
                params,
            )
        err = f"generation {step}"
        for theirs_state in (sorted_state, as_drawn):
            np.testing.assert_allclose(new.mean, theirs_state.mean, RTOL, ATOL, err_msg=err)
            np.testing.assert_allclose(new.std, theirs_state.std, RTOL, err_msg=err)
            np.testing.assert_allclose(new.p_sigma, theirs_state.p_std, 1e-4, 1e-5, err_msg=err)
        np.testing.assert_allclose(new.matrix, sorted_state.M, 1e-4, 1e-5, err_msg=err)
        # evosax's M in the drawn order: the weights went to the first mu samples drawn
        assert np.abs(np.asarray(new.matrix - as_drawn.M)).max() > 1e-3, err
        state = new
    assert float(jnp.abs(state.std - init_std)) > 1e-2  # sigma moved
    assert np.abs(np.asarray(state.matrix) - np.eye(dim)).max() > 5e-2  # M moved


@pytest.mark.parametrize(
    "function_id, pop",
    [(1, 10), (10, 40), (11, 40)],
    ids=["f1-sphere", "f10-ellipsoid", "f11-discus"],
)
def test_bbob_best_fitness_against_evosax(function_id, pop):
    """d = 10, 300 generations, the same lambda for both, seed 0: both reach f - f* < 1e-8 on
    the sphere (lambda = 10; measured 0 and 0). On the rotated ellipsoid and discus (condition
    1e6) with lambda = 40, where the rank-mu update matters most, evolax reaches 1e-8
    (measured 1.8e-9 on f10, 3.0e-10 on f11; seeds 0-1: below 2e-9 and 4e-10) while evosax,
    whose rank-mu update follows unselected samples, stays above 10 (measured 2,000 on f10,
    38 on f11; seeds 0-1: above 170 and 37)."""
    dim = 10
    problem = bbob_problem(function_id, dim)
    key = jax.random.key(0)
    run = jax.jit(best_after, static_argnums=(0, 2))
    ours = float(run(MAES(pop_size=pop), problem, 300, key))
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        theirs = evosax.MA_ES(population_size=pop, solution=jnp.zeros(dim))
        theirs = float(run(theirs, problem, 300, key, theirs.default_params))
    assert ours < 1e-8, ours
    if function_id == 1:
        assert theirs < 1e-8, theirs
    else:
        assert theirs > 10.0, theirs
