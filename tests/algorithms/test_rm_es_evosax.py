"""Rm-ES against evosax 0.3.2's ``Rm_ES``.

The two agree on the recombination of the mean, the evolution path ``p`` (evosax's ``p_c``,
with ``c_c = 2 / (n + 7)``), the rate ``c_cov = 1 / (3 sqrt(n) + 5)`` (evosax's ``c_1``), the
coefficients of the sparse plus low-rank sampling and the rank-based success rule's formula
(``c_s = q* = 0.3``, ``d_sigma = 1``). Mappings: evolax's weights ``ln(mu + 1) - ln i`` (Li &
Zhang's, also those of evosax's older ``RmES`` and of pypop-lso) are given to evosax, whose
``Rm_ES`` takes CMA-ES's ``ln((lambda + 1) / 2) - ln i``, together with their ``mu_eff``;
``init_std`` is ``std_init``, ``n_paths`` is ``m`` and ``generation_gap`` is ``T`` (evosax's
default 20; evolax's ``n``, as pypop7).

evosax departs from Li & Zhang (2018) in five places, each shown below:

- sampling: it draws one ``r ~ N(0, I_m)`` for the whole population where every sample has
  its own ``r_i``, so all samples share the same low-rank offset and the population does not
  follow ``N(m, sigma^2 C)``;
- the rank-based success rule ranks the *shaped* fitness, i.e. the recombination weights,
  which are the same every generation: ``q`` is 0 whatever the fitness, and ``sigma`` shrinks
  by a fixed schedule (``s -> -q*``) down to its floor ``std_min = 1e-3`` (a floor the paper
  has not);
- in the first generation it ranks against ``-inf`` (the best possible when minimising), so
  ``q = -1``, where evolax, with nothing to compare, leaves ``s`` and ``sigma`` unchanged;
- the store of directions drops the *older* of the two closest, so once full it always holds
  the last ``m`` paths and ``T`` has no effect; evolax drops the newer (pypop7's ``RMES``),
  which keeps the directions apart in time.

So the mean and ``p`` are compared with evosax (given evolax's ``sigma`` before each tell),
the step size with an evosax told the fitness itself (identity shaping, which fixes the rule
but would break its mean), both over five generations after the first, and whole runs on BBOB
functions by their best fitness.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.cma.cma_es import default_pop_size
from evolax.algorithms.cma.rm_es import RmES
from evolax.problems import bbob_problem
from helpers import best_after

pytestmark = pytest.mark.slow
evosax = pytest.importorskip("evosax.algorithms")
shaping = pytest.importorskip("evosax.core.fitness_shaping")

RTOL, ATOL = 2e-5, 2e-6


def quadratic(x, dim):
    """A fixed random ellipsoid, maximised at a random target: no ties between samples."""
    rng = np.random.default_rng(0)
    scales = jnp.asarray(rng.uniform(0.5, 3.0, dim), jnp.float32)
    target = jnp.asarray(rng.normal(size=dim), jnp.float32)
    return -jnp.sum(scales[None] * (x - target[None]) ** 2, axis=1)


def test_updates_match_evosax_where_the_rules_agree():
    dim, pop, init_std = 8, 10, 0.5
    x0 = jnp.linspace(-1.0, 1.0, dim)
    ours = RmES(pop_size=pop, init_std=init_std)
    p = ours.parameters(dim)
    mu = p.mu
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        theirs = evosax.Rm_ES(pop, jnp.zeros(dim), m=ours.n_paths)
        params = theirs.default_params
        np.testing.assert_allclose([params.c_c, params.c_1], [p.c_c, p.c_cov], rtol=1e-6)
        assert (params.c_std, params.q_star, params.d_std) == (0.3, 0.3, 1.0)
        params = params.replace(
            std_init=init_std, weights=jnp.asarray(p.weights), mu_eff=p.mu_eff, T=dim
        )
        # evosax told the fitness itself: its success rule on the fitness (its mean aside)
        by_fitness = evosax.Rm_ES(
            pop, jnp.zeros(dim), m=ours.n_paths,
            fitness_shaping_fn=shaping.identity_fitness_shaping_fn,
        )  # fmt: skip
        shaped = theirs.init(jax.random.key(0), x0, params)
        raw = by_fitness.init(jax.random.key(0), x0, params)

    key = jax.random.key(0)
    state = ours.init(key, x0)
    tell = jax.jit(ours.tell)
    evosax_rates, rates = [], []
    for step in range(6):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, step))
        population, _ = ours.ask(ask_key, state)
        fitness = quadratic(population, dim)
        new, _ = tell(tell_key, state, population, fitness)
        with jax.numpy_rank_promotion("allow"):
            shaped, _ = theirs.tell(
                tell_key, population, -fitness, shaped.replace(std=state.std), params
            )
            raw, _ = by_fitness.tell(tell_key, population, -fitness, raw, params)
        err = f"generation {step}"
        np.testing.assert_allclose(new.mean, shaped.mean, RTOL, ATOL, err_msg=err)
        np.testing.assert_allclose(new.path, shaped.p_c, 1e-4, 1e-5, err_msg=err)
        if step == 0:
            # evosax ranks the first elites against -inf, which it counts as better (q = -1
            # with its shaping; the tied -inf share their mean rank with the fitness itself)
            np.testing.assert_allclose(shaped.cumulative_rank_rate, 0.3 * -1.3, 1e-6)
            assert float(raw.cumulative_rank_rate) < -0.3 * 0.3 - 0.1
            assert float(new.rank_rate) == 0.0 and float(new.std) == init_std
            # from here on, both rank against this generation's mu best
            raw = raw.replace(
                cumulative_rank_rate=new.rank_rate,
                std=new.std,
                fitness_elites_sorted=jnp.sort(-fitness)[:mu],
            )
        else:
            np.testing.assert_allclose(new.rank_rate, raw.cumulative_rank_rate, 1e-5, 1e-7)
            np.testing.assert_allclose(new.std, raw.std, RTOL, err_msg=err)
        rates.append(float(new.rank_rate))
        evosax_rates.append(float(shaped.cumulative_rank_rate))
        # the store: the same paths while it fills (m = 2 generations), apart after
        stamps = new.path_generations.tolist()
        if step < ours.n_paths:
            np.testing.assert_allclose(new.paths, shaped.P, 1e-4, 1e-5, err_msg=err)
            np.testing.assert_array_equal(shaped.t[-(step + 1) :], stamps[-(step + 1) :])
        else:
            assert stamps == [0, step], (err, stamps)  # the first path is kept (T = 8)
            np.testing.assert_array_equal(shaped.t, [step - 1, step])  # evosax: the last two
        state = new

    # evosax's rate (default shaping) ignores the fitness: s_t = 0.7 s_(t-1) + 0.3 (0 - 0.3)
    expected = [0.3 * (-1.3)]
    for _ in range(5):
        expected.append(0.7 * expected[-1] - 0.09)
    np.testing.assert_allclose(evosax_rates, expected, rtol=1e-5)
    assert max(abs(a - b) for a, b in zip(rates, expected, strict=True)) > 0.05


def test_evosax_samples_share_one_low_rank_offset():
    """lambda = 4,000 samples around stored directions: the variance of the steps along the
    newest direction ``u`` is ``sigma^2 u^T C u`` for evolax (within 10%), while evosax's
    samples share their low-rank part: its variance along ``u`` is that of the isotropic part
    alone, ``sigma^2 (1 - c_cov)^m``."""
    dim, pop, m = 8, 4000, 2
    rng = np.random.default_rng(0)
    paths = jnp.asarray(rng.standard_normal((m, dim)) * [[1.0], [2.0]], jnp.float32)
    mean = jnp.asarray(rng.standard_normal(dim), jnp.float32)
    c = 1 / (3 * math.sqrt(dim) + 5)
    u = np.asarray(paths[-1], np.float64) / np.linalg.norm(paths[-1])
    covariance = (1 - c) ** m * np.eye(dim) + c * sum(
        (1 - c) ** (m - j) * np.outer(paths[j - 1], paths[j - 1]) for j in range(1, m + 1)
    )
    expected = u @ covariance @ u

    ours = RmES(pop_size=pop, n_paths=m)
    state = ours.init(jax.random.key(0), jnp.zeros(dim)).replace(
        mean=mean, std=jnp.asarray(0.5), paths=paths
    )
    population, _ = ours.ask(jax.random.key(1), state)
    along = (np.asarray(population, np.float64) - np.asarray(mean)) @ u / 0.5
    assert np.var(along) == pytest.approx(expected, rel=0.1)

    with jax.numpy_rank_promotion("allow"):
        theirs = evosax.Rm_ES(pop, jnp.zeros(dim), m=m)
        params = theirs.default_params
        their_state = theirs.init(jax.random.key(0), mean, params).replace(
            std=jnp.asarray(0.5), P=paths
        )
        population, _ = theirs.ask(jax.random.key(1), their_state, params)
    along = (np.asarray(population, np.float64) - np.asarray(mean)) @ u / 0.5
    assert np.var(along) == pytest.approx((1 - c) ** m, rel=0.1)
    assert expected > 2 * (1 - c) ** m


@pytest.mark.parametrize(
    "function_id, generations",
    [(1, 500), (8, 3000)],
    ids=["f1-sphere", "f8-rosenbrock"],
)
def test_bbob_best_fitness_against_evosax(function_id, generations):
    """d = 20, lambda = 12 and m = 2 for both, seed 0: evolax reaches f - f* < 1e-8 (measured
    2e-14 on f1 in 500 generations, 1.6e-11 on f8 in 3,000; seeds 0-1: below 2e-13 and 4e-11)
    while evosax, whose step size shrinks to 1e-3 within about 25 generations whatever the
    fitness, stays above 10 (measured 46 and 139; seeds 0-1: above 35 and 138)."""
    dim = 20
    problem = bbob_problem(function_id, dim)
    key = jax.random.key(0)
    run = jax.jit(best_after, static_argnums=(0, 2))
    ours = float(run(RmES(pop_size=default_pop_size(dim)), problem, generations, key))
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        theirs = evosax.Rm_ES(default_pop_size(dim), jnp.zeros(dim), m=2)
        theirs = float(run(theirs, problem, generations, key, theirs.default_params))
    assert ours < 1e-8, ours
    assert theirs > 10.0, theirs
