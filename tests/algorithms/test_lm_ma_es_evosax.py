"""LM-MA-ES against evosax 0.3.2's ``LM_MA_ES``.

The two agree on the sampling ``d_i = T_min(t,m) ... T_1 z_i`` (the same ``c_d,j``, ``m = 4 +
floor(3 ln d)`` vectors), the recombination weights (for even ``lambda``), the update of the
mean and the rates ``c_c,j`` of the vectors. evosax departs from Loshchilov, Glasmachers &
Beyer (2019), algorithm 1, in three places:

- ``c_sigma``: evosax takes CMA-ES's ``(mu_eff + 2) / (d + mu_eff + 5)`` where the paper has
  ``2 lambda / d``;
- the step size: evosax uses CMA-ES's ``sigma *= exp(c_sigma / d_sigma (|p_sigma| / chi_n -
  1))`` where the paper has ``sigma *= exp(c_sigma / 2 (|p_sigma|^2 / d - 1))``;
- the vectors: evosax adds ``sum_i w_i z_i`` over the samples *in the order they were drawn*
  (``jnp.dot(params.weights, z)``), not over the ``mu`` best, so its vectors learn the paper's
  ``z_w`` only when the population happens to arrive sorted best first.

(Its weights are also ``ln((lambda + 1) / 2) - ln i``, which is the paper's ``ln(mu + 1/2) -
ln i`` only for even ``lambda``.) So one generation is compared with evosax given the paper's
``c_sigma`` and a population sorted best first (the mean, ``p_sigma`` and the vectors agree;
``sigma`` follows the two rules above), and whole runs on BBOB functions by their best fitness.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms import LMMAES
from evolax.problems import bbob_problem
from helpers import best_after

evosax = pytest.importorskip("evosax.algorithms")


@pytest.mark.slow  # a reference comparison (13 s)
def test_one_generation_matches_evosax_where_the_rules_agree():
    dim, lam, t = 40, 14, 3  # t = 3: three of the m = 15 vectors are in use
    rng = np.random.default_rng(0)
    y0 = jnp.asarray(rng.standard_normal(dim), jnp.float32)
    p0 = jnp.asarray(rng.standard_normal(dim), jnp.float32)
    v0 = jnp.asarray(2 * rng.standard_normal((15, dim)), jnp.float32)
    fitness = jnp.asarray(rng.standard_normal(lam), jnp.float32)
    order = np.argsort(-np.asarray(fitness))  # best first

    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        theirs = evosax.LM_MA_ES(population_size=lam, solution=jnp.zeros(dim))
        params = theirs.default_params
        their_state = theirs.init(jax.random.key(0), y0, params).replace(
            std=jnp.asarray(0.6), p_std=p0, M=v0, generation_counter=t
        )
        population, their_state = theirs.ask(jax.random.key(1), their_state, params)
        # as drawn, with evosax's own parameters
        as_drawn, _ = theirs.tell(jax.random.key(2), population, -fitness, their_state, params)
        # sorted best first, with the paper's c_sigma
        paper = params.replace(c_std=jnp.asarray(2 * lam / dim))
        sorted_state = their_state.replace(z=their_state.z[order])
        their_new, _ = theirs.tell(
            jax.random.key(2), population[order], -fitness[order], sorted_state, paper
        )

    ours = LMMAES(pop_size=lam)
    state = ours.init(jax.random.key(0), jnp.zeros(dim)).replace(
        mean=y0, std=jnp.asarray(0.6), p_sigma=p0, vectors=v0, generation=jnp.asarray(t)
    )
    # the same directions from the same z
    directions = jax.jit(ours.transform)(state, their_state.z)
    np.testing.assert_allclose(y0[None] + 0.6 * directions, population, rtol=1e-5, atol=1e-5)

    new, _ = jax.jit(ours.tell)(jax.random.key(2), state, population, fitness)
    np.testing.assert_allclose(new.mean, as_drawn.mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(new.mean, their_new.mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(new.p_sigma, their_new.p_std, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(new.vectors, their_new.M, rtol=1e-4, atol=1e-5)
    assert np.abs(np.asarray(new.vectors - as_drawn.M)).max() > 0.1  # evosax's drawn order
    # the step-size rules on the same p_sigma
    norm = float(jnp.linalg.norm(their_new.p_std))
    c_sigma = 2 * lam / dim
    paper_std = 0.6 * np.exp(c_sigma / 2 * (norm**2 / dim - 1))
    csa_std = 0.6 * np.exp(c_sigma / float(paper.d_std) * (norm / float(paper.chi_n) - 1))
    np.testing.assert_allclose(new.std, paper_std, rtol=1e-5)
    np.testing.assert_allclose(their_new.std, csa_std, rtol=1e-5)


@pytest.mark.slow  # BBOB runs; the exact one-generation match stays in the default run
@pytest.mark.parametrize(
    "function_id, generations",
    [(1, 500), (2, 2000), (10, 2000)],
    ids=["f1-sphere", "f2-separable-ellipsoid", "f10-ellipsoid"],
)
def test_bbob_best_fitness_against_evosax(function_id, generations):
    """d = 40, lambda = 16 for both (the paper's c_sigma = 0.8): both reach f - f* < 1e-8 on
    the sphere in 500 generations (measured 5e-13 and 1e-10, seed 0); on the ellipsoids
    (condition 1e6) after 2,000 generations evolax's best is at least 3 times lower than
    evosax's (measured 250 vs 5,900 on f2 and 320 vs 8,000 on f10, seed 0; 7 to 25 times
    lower over seeds 0-1), as evosax's vectors follow unselected samples."""
    dim, lam = 40, 16
    problem = bbob_problem(function_id, dim)
    key = jax.random.key(0)
    run = jax.jit(best_after, static_argnums=(0, 2))
    ours = float(run(LMMAES(pop_size=lam), problem, generations, key))
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        theirs = evosax.LM_MA_ES(population_size=lam, solution=jnp.zeros(dim))
        theirs = float(run(theirs, problem, generations, key, theirs.default_params))
    if function_id == 1:
        assert ours < 1e-8 and theirs < 1e-8, (ours, theirs)
    else:
        assert ours < theirs / 3, (ours, theirs)
