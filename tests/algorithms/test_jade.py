"""JADE against a float64 numpy transcription of Zhang & Sanderson (2009) fed the same random
numbers, its truncated Cauchy against rejection sampling, and on a shifted ellipsoid."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.de.adaptive import truncated_cauchy
from evolax.algorithms.de.jade import JADE
from helpers import solve


def np_cauchy(mu, f_u):
    """F ~ Cauchy(mu, 0.1) given F > 0 by the inverse CDF on (CDF(0), 1], then min(F, 1)."""
    low = 0.5 + np.arctan(-mu / 0.1) / np.pi
    q = low + (1.0 - f_u) * (1.0 - low)
    with np.errstate(over="ignore"):
        return np.minimum(mu + 0.1 * np.tan(np.pi * (q - 0.5)), 1.0)


def np_trials(x, f, archive, F, CR, n_best, d):
    """DE/current-to-pbest/1/bin with archive (JADE, eq. 7 and binomial crossover), one member
    and one coordinate at a time."""
    pop, dim = x.shape
    order = sorted(range(pop), key=lambda k: -f[k])  # stable: ties by index
    union = np.concatenate([x, archive], 0)
    trials = np.empty_like(x)
    for i in range(pop):
        pbest = order[min(int(np.floor(d.pbest_u[i] * n_best[i])), n_best[i] - 1)]
        r1 = int(d.r1[i])
        assert r1 != i
        allowed = [k for k in range(len(union)) if k not in (i, r1)]
        r2 = allowed[int(d.r2_bits[i]) % len(allowed)]
        for j in range(dim):
            v = x[i, j] + F[i] * (x[pbest, j] - x[i, j]) + F[i] * (x[r1, j] - union[r2, j])
            take = d.crossover_u[i, j] < CR[i] or j == d.j_rand[i]
            trials[i, j] = v if take else x[i, j]
    return trials


def np_select(x, f, archive, trials, ft, capacity, bits):
    """Selection, success sets and archive (JADE, section III-D): a trial replaces its parent
    if f(u) >= f(x); a strict improvement of a finite parent is a success whose parent joins
    the archive; an overfull archive loses random members (those with the lowest priority)."""
    ft = np.where(np.isfinite(ft), ft, -np.inf)
    success = (ft > f) & np.isfinite(f)
    accept = ft >= f
    new_x = np.where(accept[:, None], trials, x)
    new_f = np.where(accept, ft, f)
    if capacity:
        pool = list(archive) + [x[i] for i in range(len(x)) if success[i]]
        prio = list((bits[: len(archive)] >> 1).astype(np.int64))
        prio += [int(bits[capacity + i] >> 1) for i in range(len(x)) if success[i]]
        keep = np.argsort(-np.asarray(prio), kind="stable")[:capacity]
        archive = np.asarray([pool[k] for k in keep]).reshape(-1, x.shape[1])
    return new_x, new_f, archive, success


def shifted_sphere(x):
    return -np.sum((np.asarray(x, np.float64) - np.linspace(-1, 1, x.shape[1])) ** 2, 1)


def run_against_numpy(algo, np_parameters, np_adapt, gens=8, pop=10, dim=6):
    """``gens`` generations of ``algo`` and of the numpy transcription from the same evaluated
    population and the same draws; the states agree after every ``ask`` and ``tell``.
    ``np_parameters(params, d) -> F, CR, n_best`` and ``np_adapt(params, F, CR, success,
    improvement) -> params`` are the algorithm-specific pieces; returns the largest archive
    size reached and the JAX state."""
    state = algo.init(jax.random.key(0), jnp.zeros(dim))
    x, state = algo.ask(jax.random.key(1), state)
    fitness = shifted_sphere(x)
    state, _ = algo.tell(jax.random.key(2), state, x, jnp.asarray(fitness, jnp.float32))
    assert int(state.archive_count) == 0  # the first evaluations are no successes
    np_x, np_f = np.asarray(x, np.float64), np.asarray(fitness, np.float32).astype(np.float64)
    np_archive = np.zeros((0, dim))
    params = None
    capacity = pop if algo.archive else 0
    ask, tell = jax.jit(algo.ask), jax.jit(algo.tell)
    largest = 0
    for g in range(gens):
        ask_key, tell_key = jax.random.split(jax.random.key(100 + g))
        trials, state = ask(ask_key, state)
        d = jax.tree.map(np.asarray, algo.draws(ask_key, jnp.zeros(dim)))
        d = d._replace(
            **{
                k: np.asarray(v, np.float64)
                for k, v in d._asdict().items()
                if k in ("crossover_u", "pbest_u", "f_u", "cr_z", "extra_u")
            }
        )
        params = np_adapt.initial(algo) if params is None else params
        F, CR, n_best = np_parameters(algo, params, d)
        np.testing.assert_allclose(
            state.differential_weights, F, rtol=2e-6, atol=1e-6
        )  # f32: F near 0 cancels
        np.testing.assert_allclose(state.crossover_rates, CR, rtol=2e-6, atol=1e-7)
        expected = np_trials(np_x, np_f, np_archive, F, CR, n_best, d)
        np.testing.assert_allclose(trials, expected, rtol=1e-5, atol=1e-5)
        ft = shifted_sphere(trials).astype(np.float32).astype(np.float64)
        ft[g % pop] = np.nan
        tie = (g + 3) % pop
        ft[tie] = np_f[tie]  # a tie: replaces its parent, no success
        bits = np.asarray(jax.random.bits(tell_key, (capacity + pop,), jnp.uint32))
        improvement = np.where((ft > np_f) & np.isfinite(np_f), ft - np_f, 0.0)
        np_x, np_f_new, np_archive, success = np_select(
            np_x, np_f, np_archive, np.asarray(trials, np.float64), ft, capacity, bits
        )
        assert not success[tie]
        state, metrics = tell(tell_key, state, trials, jnp.asarray(ft, jnp.float32))
        params = np_adapt(algo, params, F, CR, success, improvement)
        np_f = np_f_new
        np.testing.assert_allclose(state.population, np_x, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(state.fitness, np_f.astype(np.float32))
        count = int(state.archive_count)
        assert count == len(np_archive)
        np.testing.assert_allclose(state.archive[:count], np_archive, rtol=1e-5, atol=1e-5)
        np_adapt.compare(state, params)
        np.testing.assert_allclose(metrics["success_rate"], success.mean(), rtol=1e-6)
        largest = max(largest, count)
    return largest, state


def jade_parameters(algo, params, d):
    mu_F, mu_CR = params
    n_best = np.full(algo.pop_size, max(1, int(np.ceil(algo.p * algo.pop_size))))
    return np_cauchy(mu_F, d.f_u), np.clip(mu_CR + 0.1 * d.cr_z, 0, 1), n_best


def jade_adapt(algo, params, F, CR, success, improvement):
    """mu_CR <- (1 - c) mu_CR + c mean_A(S_CR), mu_F <- (1 - c) mu_F + c mean_L(S_F)."""
    mu_F, mu_CR = params
    if success.any():
        S_F, S_CR = F[success], CR[success]
        mu_CR = (1 - algo.c) * mu_CR + algo.c * S_CR.mean()
        mu_F = (1 - algo.c) * mu_F + algo.c * np.sum(S_F**2) / np.sum(S_F)
    return mu_F, mu_CR


jade_adapt.initial = lambda algo: (0.5, 0.5)
jade_adapt.compare = lambda state, params: np.testing.assert_allclose(
    [state.mu_F, state.mu_CR], params, rtol=1e-6
)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param(dict(), marks=pytest.mark.slow),  # reference checks: nox -s slow
        pytest.param(dict(archive=False, c=0.5, p=0.3), marks=pytest.mark.slow),
        pytest.param(dict(c=1.0, p=0.25), marks=pytest.mark.slow),
    ],
)
def test_generations_match_a_numpy_transcription_of_the_paper(kwargs):
    algo = JADE(pop_size=10, **kwargs)
    largest, state = run_against_numpy(algo, jade_parameters, jade_adapt)
    if algo.archive:
        assert largest == 10  # the archive filled up and was thinned at random
    assert float(state.mu_F) != 0.5 and float(state.mu_CR) != 0.5


@pytest.mark.parametrize("mu", [0.05, 0.5, 0.9])
def test_truncated_cauchy_is_the_rejection_sampler(mu):
    """The one-draw conditional inverse CDF has the distribution of the paper's "regenerate
    while F <= 0, truncate to 1": two-sample Kolmogorov-Smirnov distance on 2e5 draws each
    (critical value at alpha = 1e-6 is ~0.0085), and the same mass at F = 1."""
    n = 200_000
    u = jax.random.uniform(jax.random.key(1), (n,))
    F = np.asarray(jax.jit(truncated_cauchy)(jnp.float32(mu), u), np.float64)
    assert np.all((F > 0) & (F <= 1))
    rng = np.random.default_rng(0)
    draws = mu + 0.1 * rng.standard_cauchy(4 * n)
    reference = np.minimum(draws[draws > 0][:n], 1.0)
    grid = np.linspace(0, 1, 2001)
    distance = (
        np.max(
            np.abs(
                np.searchsorted(np.sort(F), grid, "right")
                - np.searchsorted(np.sort(reference), grid, "right")
            )
        )
        / n
    )
    assert distance < 0.0085, distance
    assert abs(np.mean(F == 1) - np.mean(reference == 1)) < 0.01


def shifted_ellipsoid(population):
    """The ellipsoid sum_i 10^(6 (i - 1) / (D - 1)) z_i^2 (conditioning 1e6), shifted, negated."""
    dim = population.shape[1]
    z = population - jnp.linspace(-2.0, 3.0, dim)[None]
    return -jnp.sum(10.0 ** (6 * jnp.arange(dim) / (dim - 1))[None] * z**2, 1)


def test_solves_a_10d_ellipsoid():
    """D = 10, NP = 30, init_std = 3, defaults otherwise, 3 seeds: f < 1e-6 within 400
    generations (12,000 evaluations; JADE's paper uses NP = 100 and 1500 generations for its
    30-D ellipsoid-like f2-f4)."""
    best = solve(JADE(pop_size=30, init_std=3.0), shifted_ellipsoid, 10, 400)
    assert np.all(-best < 1e-6), -best
