"""CoDE against a float64 numpy transcription of Wang, Cai & Zhang (2011) fed the same random
numbers, on a shifted ellipsoid, and its configuration checks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_jade import shifted_ellipsoid, shifted_sphere

from evolax.algorithms.de.composite_de import CoDE
from helpers import solve


def distinct(r, i, n):
    """``n`` indices, distinct and different from ``i`` (the paper's ``r1 .. rn``)."""
    r = [int(v) for v in r[:n]]
    assert len(set(r)) == n and i not in r
    return r


def np_trials(x, d, F_pool, CR_pool):
    """The three trials of each member (Wang, Cai & Zhang, 2011, section III, eqs. 5-7, with
    binomial crossover, eq. 3), one member and one coordinate at a time: rows ``[s NP, (s + 1)
    NP)`` from strategy ``s`` (rand/1/bin, rand/2/bin, current-to-rand/1), each with the
    pool setting ``d.settings[s, i]``."""
    n, dim = x.shape
    trials = np.empty((3, n, dim))
    for i in range(n):
        F = [F_pool[d.settings[s, i]] for s in range(3)]
        CR = [CR_pool[d.settings[s, i]] for s in range(3)]
        r1, r2, r3 = distinct(d.r_rand_1[i], i, 3)
        q1, q2, q3, q4, q5 = distinct(d.r_rand_2[i], i, 5)
        c1, c2, c3 = distinct(d.r_current[i], i, 3)
        for j in range(dim):
            v = x[r1, j] + F[0] * (x[r2, j] - x[r3, j])
            take = d.crossover_u[0, i, j] < CR[0] or j == d.j_rand[0, i]
            trials[0, i, j] = v if take else x[i, j]
            v = x[q1, j] + F[1] * (x[q2, j] - x[q3, j]) + F[1] * (x[q4, j] - x[q5, j])
            take = d.crossover_u[1, i, j] < CR[1] or j == d.j_rand[1, i]
            trials[1, i, j] = v if take else x[i, j]
            trials[2, i, j] = x[i, j] + d.K[i] * (x[c1, j] - x[i, j]) + F[2] * (x[c2, j] - x[c3, j])
    return trials.reshape(3 * n, dim)


def np_select(x, f, trials, ft):
    """The best of each member's three trials (the first of equal ones) replaces it if it is at
    least as fit (minimising in the paper: ``f(u) <= f(x)``). Returns the new members, their
    fitness and the strategy whose trial replaced each (-1: kept)."""
    n = x.shape[0]
    ft = np.where(np.isfinite(ft), ft, -np.inf).reshape(3, n)
    new_x, new_f, winner = x.copy(), f.copy(), np.full(n, -1)
    for i in range(n):
        s = max(range(3), key=lambda s: (ft[s, i], -s))
        if ft[s, i] >= f[i]:
            new_x[i], new_f[i], winner[i] = trials[s * n + i], ft[s, i], s
    return new_x, new_f, winner


@pytest.mark.slow  # reference check: nox -s slow
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),
        dict(pool_differential_weights=(0.5, 1.5), pool_crossover_rates=(0.0, 1.0)),
    ],
)
def test_generations_match_a_numpy_transcription_of_the_paper(kwargs):
    n, dim, gens = 7, 6, 8
    algo = CoDE(pop_size=3 * n, **kwargs)
    state = algo.init(jax.random.key(0), jnp.zeros(dim))
    x, state = algo.ask(jax.random.key(1), state)
    np.testing.assert_array_equal(x, np.tile(state.population, (3, 1)))  # evaluated first
    fitness = shifted_sphere(x) + np.repeat([0.0, 0.5, 0.25], n)  # as if noisy: keep the best
    state, _ = algo.tell(jax.random.key(2), state, x, jnp.asarray(fitness, jnp.float32))
    np_x = np.asarray(x[:n], np.float64)
    np_f = np.asarray(fitness[n : 2 * n], np.float32).astype(np.float64)
    np.testing.assert_array_equal(state.fitness, np_f.astype(np.float32))
    ask, tell = jax.jit(algo.ask), jax.jit(algo.tell)
    winners = set()
    for g in range(gens):
        key = jax.random.key(100 + g)
        trials, state = ask(key, state)
        d = jax.tree.map(np.asarray, algo.draws(key, jnp.zeros(dim)))
        d = d._replace(crossover_u=d.crossover_u.astype(np.float64), K=d.K.astype(np.float64))
        expected = np_trials(np_x, d, algo.pool_differential_weights, algo.pool_crossover_rates)
        np.testing.assert_allclose(trials, expected, rtol=1e-5, atol=1e-5)
        ft = shifted_sphere(trials).astype(np.float32).astype(np.float64)
        ft[g % (3 * n)] = np.nan
        ft[(g + 5) % n + n] = ft[(g + 5) % n]  # two equal trials: the first wins
        tie = (g + 2) % n
        ft[tie::n] = np.minimum(ft[tie::n], np_f[tie] - 1.0)
        ft[tie + n * (g % 3)] = np_f[tie]  # a trial as fit as its parent replaces it
        new_x, new_f, winner = np_select(np_x, np_f, np.asarray(trials, np.float64), ft)
        assert winner[tie] == g % 3
        state, metrics = tell(key, state, trials, jnp.asarray(ft, jnp.float32))
        np.testing.assert_allclose(state.population, new_x, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(state.fitness, new_f.astype(np.float32))
        np.testing.assert_allclose(metrics["acceptance_rate"], np.mean(winner >= 0), rtol=1e-6)
        for s, name in enumerate(("rand_1_bin", "rand_2_bin", "current_to_rand_1")):
            np.testing.assert_allclose(metrics[f"share_{name}"], np.mean(winner == s), rtol=1e-6)
        winners |= set(winner[winner >= 0].tolist())
        np_x, np_f = new_x, new_f
    assert winners == {0, 1, 2}  # every strategy's trial replaced a member at least once


def test_solves_a_10d_ellipsoid():
    """D = 10, NP = 10 (pop_size 30), init_std = 3, the paper's pool, 3 seeds: f < 1e-6
    within 400 generations (12,000 evaluations)."""
    best = solve(CoDE(pop_size=30, init_std=3.0), shifted_ellipsoid, 10, 400)
    assert np.all(-best < 1e-6), -best
