"""SaDE against a float64 numpy transcription of Qin, Huang & Suganthan (2009) fed the same
random numbers, its one-step truncated normal against rejection sampling, on a shifted
ellipsoid, and its configuration checks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_jade import shifted_ellipsoid, shifted_sphere

from evolax.algorithms.de.sade import SaDE, stochastic_universal_sampling, truncated_normal
from helpers import solve


class NumpySaDE:
    """The paper's algorithm (section IV and its Table I), in float64, one member at a time,
    with the authors' MATLAB code where the paper is silent (stochastic universal sampling
    dealt in a random order; ``S_k = epsilon`` for a strategy without trials in the learning
    period; ``CRm_k ~ U[0, 1]`` for one without successful ``CR``). Memories are Python lists
    of the generations so far, of which the last ``LP`` are read."""

    def __init__(self, algo, x, f):
        self.algo, self.x, self.f = algo, x, f
        self.ns, self.nf, self.cr_memory = [], [], []  # per generation: [4], [4], [(k, CR)]

    def adaptation(self, d):
        lp, eps = self.algo.learning_period, self.algo.epsilon
        if len(self.ns) < lp:  # the first LP generations
            return np.full(4, 0.25), np.full(4, 0.5)
        ns, nf = np.sum(self.ns[-lp:], 0), np.sum(self.nf[-lp:], 0)
        S = np.array([ns[k] / (ns[k] + nf[k]) if ns[k] + nf[k] else 0.0 for k in range(4)])
        S = S + eps
        crm = np.empty(4)
        for k in range(4):
            crs = [cr for generation in self.cr_memory[-lp:] for j, cr in generation if j == k]
            crm[k] = np.median(crs) if crs else d.empty_u[k]
        return S / np.sum(S), crm

    def strategies(self, p, d):
        """Stochastic universal sampling as in the authors' code: ``NP`` pointers spaced
        ``1 / NP`` from a random offset, strategy ``k`` takes those below its cumulative
        probability and past the previous one; the pool is then permuted."""
        n = len(self.x)
        pointers = np.sort(np.mod(d.sus_u + np.arange(n) / n, 1.0))
        pool, total, before = [], 0.0, 0
        for k in range(4):
            total += p[k]
            below = int(np.sum(pointers < total)) if k < 3 else n
            pool += [k] * (below - before)
            before = below
        return np.asarray(pool)[np.argsort(d.order_bits, kind="stable")]

    def ask(self, d):
        from scipy.stats import truncnorm  # slow to import: only in nox -s slow

        x, n, dim = self.x, len(self.x), self.x.shape[1]
        p, crm = self.adaptation(d)
        k = self.strategies(p, d)
        # CR ~ N(CRm_k, 0.1) regenerated until in [0, 1]: its inverse CDF at the same u
        CR = np.array(
            [
                truncnorm.ppf(d.cr_u[i], -crm[k[i]] / 0.1, (1 - crm[k[i]]) / 0.1, crm[k[i]], 0.1)
                for i in range(n)
            ]
        )
        best = max(range(n), key=lambda i: (self.f[i], -i))
        trials = np.empty_like(x)
        for i in range(n):
            r = [int(v) for v in d.r[i]]
            assert len(set(r)) == 5 and i not in r
            F = d.F[i]
            for j in range(dim):
                if k[i] == 0:  # DE/rand/1/bin
                    v = x[r[0], j] + F * (x[r[1], j] - x[r[2], j])
                elif k[i] == 1:  # DE/rand-to-best/2/bin
                    v = (
                        x[i, j]
                        + F * (x[best, j] - x[i, j])
                        + F * (x[r[0], j] - x[r[1], j])
                        + F * (x[r[2], j] - x[r[3], j])
                    )
                elif k[i] == 2:  # DE/rand/2/bin
                    v = x[r[0], j] + F * (x[r[1], j] - x[r[2], j]) + F * (x[r[3], j] - x[r[4], j])
                else:  # DE/current-to-rand/1, no crossover
                    trials[i, j] = (
                        x[i, j] + d.K[i] * (x[r[0], j] - x[i, j]) + F * (x[r[1], j] - x[r[2], j])
                    )
                    continue
                take = d.crossover_u[i, j] < CR[i] or j == d.j_rand[i]
                trials[i, j] = v if take else x[i, j]
        self.k, self.CR = k, CR
        return p, crm, k, CR, trials

    def tell(self, trials, ft):
        """f(u) <= f(x) (minimising) enters the next generation: a success of its strategy
        whose CR joins CRMemory_k; otherwise a failure. Parents without a finite fitness are
        counted in neither (nor is the first evaluation a generation)."""
        ft = np.where(np.isfinite(ft), ft, -np.inf)
        ns, nf, crs = np.zeros(4, int), np.zeros(4, int), []
        counted = np.isfinite(self.f)
        for i in range(len(self.x)):
            accept = ft[i] >= self.f[i]
            if counted[i] and accept:
                ns[self.k[i]] += 1
                crs.append((self.k[i], self.CR[i]))
            elif counted[i]:
                nf[self.k[i]] += 1
            if accept:
                self.x[i], self.f[i] = trials[i], ft[i]
        if counted.any():
            self.ns.append(ns)
            self.nf.append(nf)
            self.cr_memory.append(crs)
        return ns, nf


@pytest.mark.slow  # reference check: nox -s slow
@pytest.mark.parametrize(
    ("kwargs", "paths"),
    [
        (dict(learning_period=3), {"no trial", "no CR"}),
        (dict(learning_period=5, epsilon=0.2), {"no CR"}),
    ],
)
def test_generations_match_a_numpy_transcription_of_the_paper(kwargs, paths):
    """NP = 20, D = 6, 14 generations; every trial of rand-to-best/2 fails after the first
    generation, so its probability drops to ~epsilon / sum S and later learning periods hold
    no trial (``S_k = epsilon``; with LP = 3, epsilon = 0.01) and no successful CR (``CRm_k``
    uniform) of it."""
    n, dim, gens = 20, 6, 14
    algo = SaDE(pop_size=n, **kwargs)
    state = algo.init(jax.random.key(0), jnp.zeros(dim))
    x, state = algo.ask(jax.random.key(1), state)
    np.testing.assert_array_equal(x, state.population)  # the first ask: evaluated first
    fitness = shifted_sphere(x)
    state, _ = algo.tell(jax.random.key(2), state, x, jnp.asarray(fitness, jnp.float32))
    assert int(state.learning_generations) == 0
    np_algo = NumpySaDE(
        algo, np.asarray(x, np.float64), np.asarray(fitness, np.float32).astype(np.float64)
    )
    ask, tell = jax.jit(algo.ask), jax.jit(algo.tell)
    seen = set()
    for g in range(gens):
        key = jax.random.key(100 + g)
        trials, state = ask(key, state)
        d = jax.tree.map(np.asarray, algo.draws(key, jnp.zeros(dim)))
        d = d._replace(
            **{
                name: np.asarray(value, np.float64)
                for name, value in d._asdict().items()
                if name not in ("j_rand", "r", "order_bits")
            }
        )
        p, crm, k, CR, expected = np_algo.ask(d)
        np.testing.assert_allclose(state.probabilities, p, rtol=1e-6)
        np.testing.assert_allclose(state.crossover_rate_means, crm, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(state.strategies, k)
        np.testing.assert_allclose(state.crossover_rates, CR, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(trials, expected, rtol=1e-5, atol=1e-5)
        ft = shifted_sphere(trials).astype(np.float32).astype(np.float64)
        if g:
            ft[k == 1] = np.nan  # rand-to-best/2 always fails
        ft[g % n] = -np.inf
        tie = next(i % n for i in range(g + 3, g + 3 + n) if k[i % n] != 1)
        ft[tie] = np_algo.f[tie]  # as fit as its parent: enters the population, a success
        ns, _ = np_algo.tell(np.asarray(trials, np.float64), ft)
        state, metrics = tell(key, state, trials, jnp.asarray(ft, jnp.float32))
        np.testing.assert_allclose(state.population, np_algo.x, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(state.fitness, np_algo.f.astype(np.float32))
        np.testing.assert_allclose(metrics["success_rate"], ns.sum() / n, rtol=1e-6)
        lp = algo.learning_period
        if len(np_algo.ns) >= lp:
            window_ns = np.sum(np_algo.ns[-lp:], 0) + np.sum(np_algo.nf[-lp:], 0)
            seen |= {"no trial"} if window_ns[1] == 0 else set()
            seen |= (
                {"no CR"}
                if not any(j == 1 for c in np_algo.cr_memory[-lp:] for j, _ in c)
                else set()
            )
    assert seen == paths, seen
    assert not np.allclose(state.probabilities, 0.25)


@pytest.mark.slow
def test_stochastic_universal_sampling_deals_floor_or_ceil_of_the_expected_counts():
    p = jnp.array([0.5, 0.1, 0.15, 0.25])
    bits = jax.random.bits(jax.random.key(0), (100, 23), jnp.uint32)
    offsets = jax.random.uniform(jax.random.key(1), (100,))
    deal = jax.jit(jax.vmap(lambda u, b: stochastic_universal_sampling(p, u, b, 23)))
    counts = np.stack([np.bincount(row, minlength=4) for row in np.asarray(deal(offsets, bits))])
    expected = 23 * np.asarray(p)
    assert np.all((counts >= np.floor(expected)) & (counts <= np.ceil(expected)))
    np.testing.assert_allclose(counts.mean(0), expected, atol=0.15)


@pytest.mark.slow
@pytest.mark.parametrize("mean", [0.0, 0.05, 0.5, 0.97])
def test_truncated_normal_is_the_rejection_sampler(mean):
    """The one-step inverse CDF has the distribution of "regenerate while CR is outside
    [0, 1]": two-sample Kolmogorov-Smirnov distance on 2e5 draws each (critical value at
    alpha = 1e-6 is ~0.0085)."""
    n = 200_000
    u = jax.random.uniform(jax.random.key(1), (n,))
    CR = np.asarray(jax.jit(truncated_normal)(jnp.float32(mean), u), np.float64)
    assert np.all((CR >= 0) & (CR <= 1))
    draws = np.random.default_rng(0).normal(mean, 0.1, 20 * n)
    reference = draws[(draws >= 0) & (draws <= 1)][:n]
    assert len(reference) == n
    grid = np.linspace(0, 1, 2001)
    distance = (
        np.max(
            np.abs(
                np.searchsorted(np.sort(CR), grid, "right")
                - np.searchsorted(np.sort(reference), grid, "right")
            )
        )
        / n
    )
    assert distance < 0.0085, distance


def test_solves_a_10d_ellipsoid():
    """D = 10, NP = 30, init_std = 3, LP = 20, 3 seeds: f < 1e-6 within 300 generations
    (9,000 evaluations)."""
    best = solve(SaDE(pop_size=30, init_std=3.0, learning_period=20), shifted_ellipsoid, 10, 300)
    assert np.all(-best < 1e-6), -best
