"""CMA-ES against a float64 numpy transcription of pycma 4's update (Hansen, 2016, appendix A,
with pycma's defaults), against pycma itself step by step (same samples, float64), and against
pycma's evaluations to a target: on sphere, ellipsoid, Rosenbrock and Rastrigin, and on COCO's
ill-conditioned bbob functions f10-f14 (``benchmarks/cma_vs_pycma.py``)."""

import json
import math
import os
import subprocess
import sys
import textwrap

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.cma.cma_es import CMAES, default_pop_size, eigen_interval
from helpers import cma_vs_pycma

# ---------------------------------------------------------------------------------------------
# numpy transcription of pycma 4 (float64), written from pycma's sources, not from the code


def pycma_parameters(n, lam):
    """pycma 4's defaults for ``popsize = lam >= 6`` (no mirrored samples):
    ``options_parameters.CMAEvolutionStrategyParameters.set`` (weights, c_c),
    ``interfaces.StatisticalModelSamplerWithZeroMeanBaseClass.parameters`` (c1, c_mu),
    ``recombination_weights.RecombinationWeights.finalize_negative_weights``,
    ``sigma_adaptation.CMAAdaptSigmaCSA.compute_cs / compute_damps``, ``Mh.chiN``."""
    mu = lam // 2
    wp = np.log((lam + 1) / 2) - np.log(np.arange(1, lam + 1))  # Hansen (2016), eq. 49
    mu_eff = wp[:mu].sum() ** 2 / (wp[:mu] ** 2).sum()
    mu_eff_neg = wp[mu:].sum() ** 2 / (wp[mu:] ** 2).sum()
    c1 = min(1, lam / 6) * 2 / ((n + 1.3) ** 2 + mu_eff)
    c_mu = min(1 - c1, 2 * (0.25 + mu_eff - 2 + 1 / mu_eff) / ((n + 2) ** 2 + 2 * mu_eff / 2))
    w = np.where(wp >= 0, wp / wp[wp > 0].sum(), wp / -wp[wp < 0].sum())  # sum w^- = -1
    neg_sum = 1 + c1 / c_mu  # _negative_weights_set_sum, then _negative_weights_limit_sum:
    neg_sum = min(neg_sum, (1 - c1 - c_mu) / c_mu / n, 1 + 2 * mu_eff_neg / (mu_eff + 2))
    w = np.where(w < 0, w * neg_sum, w)
    c_sigma = min(0.5, (mu_eff + 2) / (n + mu_eff + 3))
    lam_mirr = 0
    damp_in = max(1, 3 * (1 - 0.5 ** (n / 9)))
    d_sigma = (
        0.5
        + min(1, (lam_mirr / (0.159 * lam) - 1) ** 2) / 2
        + 2 * damp_in**0 * max(0, damp_in * ((mu_eff - 1) / (n + 1)) ** 0.5 - 1)
        + c_sigma
    )
    chi_n = 2**0.5 * math.exp(math.lgamma((n + 1) / 2) - math.lgamma(n / 2))  # Mh.chiN
    return dict(
        mu=mu, w=w, mu_eff=mu_eff, c_sigma=c_sigma, d_sigma=d_sigma,
        c_c=(4 + mu_eff / n) / (n + 4 + 2 * mu_eff / n), c1=c1, c_mu=c_mu, chi_n=chi_n,
    )  # fmt: skip


def pycma_tell(m, sigma, C, p_sigma, p_c, g, X, f):
    """One ``CMAEvolutionStrategy.tell`` of pycma 4 (minimising -f), g counted from 0; B and D
    decompose C (as when the eigendecomposition is due every generation)."""
    n, lam = m.shape[0], X.shape[0]
    p = pycma_parameters(n, lam)
    eigvals, B = np.linalg.eigh(C)
    C_inv_sqrt = B @ np.diag(eigvals**-0.5) @ B.T  # sm.transform_inverse
    pop = X[np.argsort(-f, kind="stable")]
    w, mu = p["w"], p["mu"]
    m_new = w[:mu] @ pop[:mu]
    cs, cc, c1, c_mu = p["c_sigma"], p["c_c"], p["c1"], p["c_mu"]
    countiter = g + 1
    # adapt_sigma.hsig -> _update_ps with isotropic_mean_shift
    p_sigma = (1 - cs) * p_sigma + np.sqrt(cs * (2 - cs)) * (
        np.sqrt(p["mu_eff"]) * C_inv_sqrt @ (m_new - m) / sigma
    )
    squared_sum = np.sum(p_sigma**2) / (1 - (1 - cs) ** (2 * countiter))
    h_ratio = (squared_sum / n - 1) / (1 + 4 / (n + 1))  # hsig is True iff below 1
    h = 1.0 if h_ratio < 1 else 0.0
    c1a = c1 * (1 - (1 - h**2) * cc * (2 - cc))
    p_c = (1 - cc) * p_c + h * np.sqrt(cc * (2 - cc) * p["mu_eff"]) / sigma * (m_new - m)
    # sm.update([(c1 / c1a)^0.5 pc] + pop_zero / sigma, [c1a] + c_mu w)
    vectors = np.vstack([np.sqrt(c1 / c1a) * p_c, (pop - m) / sigma])
    weights = np.concatenate([[c1a], c_mu * w])
    C_new = C * (1 - weights.sum())
    for k in np.nonzero(weights < 0)[0]:
        weights[k] *= n / np.linalg.norm(C_inv_sqrt @ vectors[k]) ** 2
    C_new += (weights * vectors.T) @ vectors
    # adapt_sigma.update2: exp of cs / damps (|ps| / chiN - 1), clipped to [-1, 1]
    s = cs / p["d_sigma"] * (np.linalg.norm(p_sigma) / p["chi_n"] - 1)
    sigma_new = sigma * np.exp(np.clip(s, -1, 1))
    return m_new, sigma_new, C_new, p_sigma, p_c, h, h_ratio


@eqx.filter_jit
def _ask(algo, key, state):
    return algo.ask(key, state)[0]


@eqx.filter_jit
def _tell(algo, state, population, fitness):
    return algo.tell(jax.random.key(0), state, population, fitness)


def _rotated_ellipsoid(dim):
    rotation = jnp.asarray(np.linalg.qr(np.random.default_rng(0).normal(size=(dim, dim)))[0])
    scales = jnp.asarray(10.0 ** np.arange(dim), jnp.float32)
    return lambda x: -jnp.sum(scales[None] * jnp.dot(x, rotation) ** 2, 1)


def _reference(state, population, f):
    return pycma_tell(
        np.asarray(state.mean, np.float64),
        float(state.std),
        np.asarray(state.cov, np.float64),
        np.asarray(state.p_sigma, np.float64),
        np.asarray(state.p_c, np.float64),
        int(state.generation),
        np.asarray(population, np.float64),
        np.where(np.isnan(f), -np.inf, f).astype(np.float64),
    )


@pytest.mark.parametrize("h_ratio", [None, 0.98, 1.02, "stall"])
def test_tell_matches_the_transcription(key, h_ratio):
    """One tell from a non-trivial state (after 4 generations on a rotated ellipsoid, so C,
    the paths and sigma are not at their initial values), one fitness NaN. ``h_ratio``
    rescales the old p_sigma so that pycma's h_sigma statistic, (||p_sigma||^2 / (1 - (1 -
    c_sigma)^(2(g+1))) / n - 1) / (1 + 4 / (n + 1)), is that value (0.98: h = 1, 1.02: h =
    0); "stall" sets it far above."""
    dim, pop = 6, 9  # odd: the middle weight is exactly zero
    fitness = _rotated_ellipsoid(dim)
    algo = CMAES(pop_size=pop, init_std=0.8)
    state = algo.init(key, jnp.full(dim, 0.5))
    for k in jax.random.split(key, 4):
        population = _ask(algo, k, state)
        state, _ = _tell(algo, state, population, fitness(population))
    population = _ask(algo, jax.random.key(7), state)  # does not depend on p_sigma
    f = np.array(fitness(population))
    f[2] = np.nan  # NaN ranks last
    if h_ratio == "stall":
        state = state.replace(p_sigma=jnp.full(dim, 30.0))
    elif h_ratio is not None:  # bisect on the scale of p_sigma in the float64 reference
        direction = np.asarray(state.p_sigma, np.float64)
        low, high = 1.0, 100.0
        for _ in range(60):
            mid = (low + high) / 2
            trial = state.replace(p_sigma=jnp.asarray(mid * direction, jnp.float32))
            low, high = (
                (mid, high) if _reference(trial, population, f)[-1] < h_ratio else (low, mid)
            )
        state = state.replace(p_sigma=jnp.asarray(low * direction, jnp.float32))
    new_state, metrics = _tell(algo, state, population, jnp.asarray(f))

    m, sigma, C, p_sigma, p_c, h, ratio = _reference(state, population, f)
    if isinstance(h_ratio, float):
        assert ratio == pytest.approx(h_ratio, abs=1e-4)
    assert h == (0.0 if h_ratio in ("stall", 1.02) else 1.0)
    assert float(metrics["h_sigma"]) == h
    np.testing.assert_allclose(new_state.mean, m, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(new_state.p_sigma, p_sigma, rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(new_state.p_c, p_c, rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(new_state.std, sigma, rtol=1e-5)
    np.testing.assert_allclose(new_state.cov, C, rtol=2e-4, atol=2e-5 * np.abs(C).max())
    np.testing.assert_array_equal(new_state.cov, new_state.cov.T)
    # B, D were refreshed (d = 6: the interval is 1) and decompose the new C
    B, D = np.asarray(new_state.eigvecs, np.float64), np.asarray(new_state.eigvals_sqrt)
    np.testing.assert_allclose(B @ np.diag(D**2) @ B.T, C, atol=1e-4 * np.abs(C).max())


@pytest.mark.parametrize(
    "dim, pop, gens, function",
    [(8, 10, 60, "ellipsoid"), (100, 17, 30, "ellipsoid"), (10, 10, 40, "linear")],
)
def test_follows_pycma_step_by_step(dim, pop, gens, function):
    """pycma samples (its own random numbers) and both tell the same population, in float64:
    mean, sigma, C and the paths stay equal to 1e-8 for ``gens`` generations (pycma's state is
    read from ``es.mean, es.sigma, es.sm.C, es.adapt_sigma.ps, es.pc``). On a rotated
    ellipsoid (condition 1e3; at d = 100 B and D are recomputed every 2nd generation) and on a
    linear function from a small sigma, where h_sigma stalls p_c."""
    cma = pytest.importorskip("cma")
    rotation = np.linalg.qr(np.random.default_rng(1).normal(size=(dim, dim)))[0]
    scales = 1e3 ** (np.arange(dim) / (dim - 1))
    if function == "linear":
        f = lambda x: x @ rotation[:, 0]  # noqa: E731
    else:
        f = lambda x: np.sum(scales * (x @ rotation) ** 2, -1)  # noqa: E731
    x0, sigma0 = np.linspace(-1, 2, dim), 0.01 if function == "linear" else 0.7
    es = cma.CMAEvolutionStrategy(x0, sigma0, {"popsize": pop, "seed": 5, "verbose": -9})
    algo = CMAES(pop_size=pop, init_std=sigma0)
    assert (algo.eigen_interval or eigen_interval(dim, pop)) == (2 if dim == 100 else 1)
    stalls = 0
    with jax.enable_x64(True):
        state = algo.init(jax.random.key(0), jnp.asarray(x0))
        # pycma starts from C = diag(exp(1e-4 i / n)), which keeps eigh's order stable
        C0 = np.asarray(es.sm.C)
        state = state.replace(cov=jnp.asarray(C0), eigvals_sqrt=jnp.sqrt(jnp.diag(C0)))
        for _ in range(gens):
            X = np.asarray(es.ask())
            es.tell(list(X), list(f(X)))
            state, metrics = _tell(algo, state, jnp.asarray(X), jnp.asarray(-f(X)))
            stalls += float(metrics["h_sigma"]) == 0
            np.testing.assert_allclose(state.mean, es.mean, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(state.std, es.sigma, rtol=1e-8)
            np.testing.assert_allclose(
                state.cov, es.sm.C, rtol=0, atol=1e-8 * np.abs(es.sm.C).max()
            )
            for ours, ref in ((state.p_sigma, es.adapt_sigma.ps), (state.p_c, es.pc)):
                np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-8 * np.abs(ref).max())
    if function == "linear":
        assert stalls > 0  # h_sigma = 0 was exercised


def test_defaults_are_pycmas():
    """The strategy parameters equal those of pycma's ``CMAEvolutionStrategy`` (and the
    transcription's), and B, D are recomputed once pycma's ``lazy_update_gap`` has passed."""
    assert default_pop_size(10) == 10 and default_pop_size(2000) == 26
    cma = pytest.importorskip("cma")
    for n, pop in ((4, 8), (10, 10), (20, 12), (40, 12), (40, 100), (1000, 128), (2000, 26)):
        es = cma.CMAEvolutionStrategy(np.zeros(n), 1.0, {"popsize": pop, "verbose": -9})
        sm = es.sm.parameters(mueff=es.sp.weights.mueff, lam=pop)
        ours, ref = CMAES(pop_size=pop).parameters(n), pycma_parameters(n, pop)
        pairs = [
            (ours.weights, np.asarray(es.sp.weights)),
            (ours.mu_eff, es.sp.weights.mueff),
            (ours.c_c, es.sp.cc),
            (ours.c1, sm["c1"]),
            (ours.c_mu, sm["cmu"]),
            (ours.chi_n, cma.utilities.math.Mh.chiN(n)),
        ]
        if n < 300:  # pycma adapts sigma by TPA, not CSA, from d = 300
            pairs += [(ours.c_sigma, es.adapt_sigma.cs), (ours.d_sigma, es.adapt_sigma.damps)]
        for value, expected in pairs:
            np.testing.assert_allclose(value, expected, rtol=1e-9, err_msg=f"{n}, {pop}")
        for name in ("mu_eff", "c_sigma", "d_sigma", "c_c", "c1", "c_mu", "chi_n"):
            assert getattr(ours, name) == pytest.approx(ref[name], rel=1e-9), (name, n, pop)
        np.testing.assert_allclose(ours.weights, ref["w"], rtol=1e-9)
        # pycma decomposes once lazy_update_gap generations have passed since the last time
        assert eigen_interval(n, pop) == max(1, math.ceil(es.sm.lazy_update_gap)), (n, pop)
    assert eigen_interval(1000, 128) == 2 and eigen_interval(2000, 26) == 15


def test_lazy_eigendecomposition(key):
    """With ``eigen_interval=3``, B and D change only every third generation (on a pytree
    genome of 6 numbers)."""
    algo = CMAES(pop_size=9, init_std=0.8, eigen_interval=3)
    state = algo.init(key, {"a": jnp.ones(2), "b": jnp.ones((2, 2))})
    changed = []
    for k in jax.random.split(key, 6):
        population = _ask(algo, k, state)
        fitness = -sum(jnp.sum(leaf.reshape(9, -1) ** 2, 1) for leaf in jax.tree.leaves(population))
        new, _ = _tell(algo, state, population, fitness)
        changed.append(bool(jnp.any(new.eigvecs != state.eigvecs)))
        state = new
    assert changed == [False, False, True, False, False, True]
    assert jax.tree.structure(algo.best(state)) == jax.tree.structure({"a": 0, "b": 0})


def test_rejects_bad_configuration():
    algo = CMAES(pop_size=4)
    state = algo.init(jax.random.key(0), jnp.zeros(3))
    population, _ = algo.ask(jax.random.key(1), state)
    with pytest.raises(ValueError, match="fitness"):
        algo.tell(jax.random.key(2), state, population, jnp.zeros(5))


# ---------------------------------------------------------------------------------------------
# termination criteria


def test_history_criteria_fire_on_schedule(key):
    """Maximising, d = 4, lambda = 8, three fitness streams run together. Constant fitness
    stops by EqualFunValues/TolFun (tutorial B.3) after 10 + ceil(30 n / lambda) = 25
    generations. Fitness trending down (plus noise) fires pycma's Stagnation once its
    history holds more than 100 samples (one per 5 generations): after 505 generations
    (T = 100 + 100 n^1.5 / lambda = 200, no new best for T / 2, newest T / 2 generations worse
    than the T / 2 before). Trending up never stagnates.

    Selection in the trending streams is random, so C drifts freely for 515 generations and
    reaches the float32 condition limit; the state must stay finite (it once overflowed)."""
    dim, pop, n = 4, 8, 515
    flat_len, stagnation_len = 10 + math.ceil(30 * dim / pop), 505
    algo = CMAES(pop_size=pop)
    slopes, noise = jnp.array([0.0, -1.0, 1.0]), jnp.array([0.0, 1.0, 1.0])

    def run(slope, scale):
        def step(state, inputs):
            g, k = inputs
            population, state = algo.ask(k, state)
            fitness = slope * g + scale * jax.random.normal(jax.random.fold_in(k, 1), (pop,))
            state, _ = algo.tell(k, state, population, fitness)
            return state, (algo.should_stop(state), algo.termination_criteria(state))

        xs = (jnp.arange(n, dtype=jnp.float32), jax.random.split(key, n))
        return jax.lax.scan(step, algo.init(key, jnp.zeros(dim)), xs)

    final, (stops, criteria) = jax.jit(jax.vmap(run))(slopes, noise)
    flat = np.asarray(stops[0])
    assert not flat[: flat_len - 1].any() and flat[flat_len - 1 :].all()
    assert criteria["equalfunvals"][0, flat_len - 1] and criteria["tolfun"][0, flat_len - 1]
    down, up = np.asarray(criteria["stagnation"][1:])
    assert not down[: stagnation_len - 1].any() and down[stagnation_len - 1 :].all()
    assert not up.any()
    for name in ("tolfun", "equalfunvals", "tolupsigma"):
        assert not np.asarray(criteria[name][1:]).any(), name
    for name in ("mean", "std", "cov", "eigvecs", "eigvals_sqrt", "p_sigma", "p_c"):
        assert np.all(np.isfinite(np.asarray(getattr(final, name)))), name


def test_state_based_criteria(key):
    algo = CMAES(pop_size=6, init_std=0.5)
    state = algo.init(key, jnp.ones(3))
    criteria = eqx.filter_jit(lambda algo, state: algo.termination_criteria(state))
    assert not any(bool(v) for v in criteria(algo, state).values())
    tiny = criteria(algo, state.replace(std=jnp.asarray(1e-14)))
    assert tiny["tolx"] and tiny["noeffectaxis"] and tiny["noeffectcoord"]
    ill = criteria(algo, state.replace(eigvals_sqrt=jnp.array([1.0, 1e-8, 1.0])))
    assert ill["conditioncov"] and not ill["tolx"]
    # no effect along one coordinate only: a huge mean coordinate (in float32 beyond what the
    # mean and its rounding residual resolve together, eps^2 |mean|)
    far = criteria(algo, state.replace(mean=jnp.array([1e18, 1.0, 1.0])))
    assert far["noeffectcoord"] and far["noeffectaxis"] and not far["tolx"]
    assert criteria(algo, state.replace(std=jnp.asarray(1e20)))["tolupsigma"]


# ---------------------------------------------------------------------------------------------
# against pycma: evaluations to reach f - f* < 1e-8 (f32 here, float64 in pycma)


def sphere(x):
    return jnp.sum(x**2, -1)


def ellipsoid(x):
    n = x.shape[-1]
    return jnp.sum(1e6 ** (jnp.arange(n) / (n - 1))[None] * x**2, -1)


def rosenbrock(x):
    return jnp.sum(100 * (x[..., 1:] - x[..., :-1] ** 2) ** 2 + (1 - x[..., :-1]) ** 2, -1)


def rastrigin(x):
    # 10 n + sum(x^2 - 10 cos(2 pi x)) written without the cancellation (1 - cos = 2 sin^2)
    return jnp.sum(x**2 + 20 * jnp.sin(jnp.pi * x) ** 2, -1)


FUNCTIONS = {"sphere": sphere, "ellipsoid": ellipsoid, "rosenbrock": rosenbrock,
             "rastrigin": rastrigin}  # fmt: skip

PYCMA_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import cma
    F = {
        "sphere": lambda x: np.sum(x**2),
        "ellipsoid": lambda x: np.sum(1e6 ** (np.arange(len(x)) / (len(x) - 1)) * x**2),
        "rosenbrock": lambda x: np.sum(100 * (x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2),
        "rastrigin": lambda x: np.sum(x**2 + 20 * np.sin(np.pi * x)**2),
    }
    out = []
    for name, x0, sigma0, pop, seeds, max_evals in json.loads(sys.argv[1]):
        evals = []
        for seed in range(1, seeds + 1):
            es = cma.CMAEvolutionStrategy(x0, sigma0, {"popsize": pop, "ftarget": 1e-8,
                "seed": seed, "verbose": -9, "maxfevals": max_evals})
            while not es.stop():
                X = es.ask()
                es.tell(X, [F[name](np.asarray(x)) for x in X])
            evals.append(es.countevals if es.result.fbest < 1e-8 else None)
        out.append(evals)
    print(json.dumps(out))
    """
)


def pycma_evaluations(runs):
    """Run pycma in a subprocess with one BLAS thread (multi-threaded OpenBLAS is ~20x slower
    for its 40-D eigendecompositions on a busy 2-core machine). ``runs``: tuples
    ``(function, x0, sigma0, pop, seeds, max_evals)``; returns evaluations (``inf``: failed)."""
    pytest.importorskip("cma")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    result = subprocess.run(
        [sys.executable, "-c", PYCMA_SCRIPT, json.dumps(runs)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [np.array([math.inf if e is None else e for e in r]) for r in json.loads(result.stdout)]


def evolax_evaluations(f, x0, sigma0, pop, max_evals, keys, params):
    """Evaluations until the best sample has ``f(x, param) < 1e-8`` (``inf`` if the budget ends
    the run first), one run per ``(key, param)``, all together under vmap.

    The termination criteria are not used: in float32, NoEffectAxis fires once ``0.1 sigma
    D_i`` drops below ~6e-8 |m|, e.g. on Rosenbrock (optimum at 1) around f ~ 1e-7, before the
    1e-8 that pycma, in float64, reaches; this test measures the speed of convergence."""
    algo = CMAES(pop_size=pop, init_std=sigma0)

    def run(key, param):
        def cond(carry):
            _, _, evals, solved = carry
            return ~solved & (evals < max_evals)

        def body(carry):
            state, key, evals, _ = carry
            key, sample_key = jax.random.split(key)
            population, state = algo.ask(sample_key, state)
            values = f(population, param)
            state, _ = algo.tell(key, state, population, -values)
            return state, key, evals + pop, jnp.min(values) < 1e-8

        state = algo.init(key, jnp.asarray(x0, jnp.float32))
        _, _, evals, solved = jax.lax.while_loop(cond, body, (state, key, 0, False))
        return jnp.where(solved, evals, -1)

    evals = np.asarray(jax.jit(jax.vmap(run))(keys, params)).astype(float)
    return np.where(evals < 0, math.inf, evals)


def compare(name, dim, pop, ours, ref):
    """A report line, and whether evolax's median is within 1.5x of pycma's (both ways)."""
    ratio = np.median(ours) / np.median(ref)
    line = (
        f"{name} d={dim} pop={pop}: evolax median {np.median(ours):.0f} {ours.tolist()}, "
        f"pycma median {np.median(ref):.0f} {ref.tolist()}, ratio {ratio:.2f}"
    )
    print(line)
    return line, bool(np.isfinite(ratio) and 1 / 1.5 <= ratio <= 1.5)


@pytest.mark.slow  # a reference run (7 s); the step-by-step pycma matches stay
def test_matches_pycma_on_sphere_and_ellipsoid_10d():
    """d = 10, default population 10, x0 = 1, sigma0 = 1, 3 seeds each: the median number of
    evaluations to f < 1e-8 within 1.5x of pycma's (the sphere is the ellipsoid with
    condition 1, so one compiled program runs both)."""
    dim, pop, seeds, budget = 10, 10, 3, 20_000
    x0 = np.ones(dim)
    reference = pycma_evaluations([(n, list(x0), 1.0, pop, seeds, budget) for n in FUNCTIONS][:2])

    def ellipsoid_with(x, condition):
        return jnp.sum(condition ** (jnp.arange(dim) / (dim - 1))[None] * x**2, -1)

    keys = jnp.tile(jax.random.split(jax.random.key(2016), seeds), 2)
    conditions = jnp.repeat(jnp.array([1.0, 1e6]), seeds)
    ours = evolax_evaluations(ellipsoid_with, x0, 1.0, pop, budget, keys, conditions)
    results = [
        compare(name, dim, pop, ours[i * seeds : (i + 1) * seeds], ref)
        for i, (name, ref) in enumerate(zip(("sphere", "ellipsoid"), reference, strict=True))
    ]
    assert all(ok for _, ok in results), [line for line, _ in results]


@pytest.mark.slow
def test_matches_pycma_on_four_functions():
    """d = 10 and 40, 5 seeds, budget 10^6 evaluations each: the median number of evaluations
    to f - f* < 1e-8 within 1.5x of pycma's (same x0, sigma0 and population for both; a failed
    seed counts as infinitely many). Sphere and ellipsoid (condition 1e6) from x0 = 1, sigma0 =
    1; Rosenbrock from x0 = 0, sigma0 = 0.5 (default populations); Rastrigin from x0 = 3,
    sigma0 = 2 with large populations, as pycma's docs advise for multimodal functions
    (its default population mostly ends in a local optimum): lambda = 400 (d = 10) and 1200
    (d = 40), where both solve at least 4 of 5 seeds.
    Measured (2026-12, float32 evolax / pycma medians): sphere 1320 / 1350 (d = 10), 4890 /
    4890 (d = 40); ellipsoid 3990 / 4000, 48375 / 47805; Rosenbrock 4930 / 4840, 61215 /
    60630; Rastrigin 31200 / 32000, 511200 / 496800."""
    configs = []
    for dim in (10, 40):
        pop = default_pop_size(dim)
        configs += [
            ("sphere", dim, np.ones(dim), 1.0, pop),
            ("ellipsoid", dim, np.ones(dim), 1.0, pop),
            ("rosenbrock", dim, np.zeros(dim), 0.5, pop),
            ("rastrigin", dim, np.full(dim, 3.0), 2.0, {10: 400, 40: 1200}[dim]),
        ]
    seeds, budget = 5, 1_000_000
    reference = pycma_evaluations(
        [(name, list(x0), sigma0, pop, seeds, budget) for name, _, x0, sigma0, pop in configs]
    )
    keys = jax.random.split(jax.random.key(2016), seeds)
    results = []
    for (name, dim, x0, sigma0, pop), ref in zip(configs, reference, strict=True):
        f = FUNCTIONS[name]
        ours = evolax_evaluations(
            lambda x, _, f=f: f(x), x0, sigma0, pop, budget, keys, jnp.zeros(seeds)
        )
        results.append(compare(name, dim, pop, ours, ref))
    assert all(ok for _, ok in results), [line for line, ok in results if not ok]


# ---------------------------------------------------------------------------------------------
# against pycma on COCO's bbob functions (benchmarks/cma_vs_pycma.py, float64)


@pytest.mark.slow  # reference runs; the step-by-step pycma matches stay in the default run
def test_matches_pycma_on_bbob_ellipsoid_and_discus(tmp_path):
    """f10 and f11 in d = 10, 5 seeds (x0 uniform in [-4, 4]^d, sigma0 = 2, default
    population): all runs reach f - f_opt < 1e-8 and the median evaluations are within 1.3x
    of pycma's either way. Measured (2026-12): f10 4170 / 4070, f11 3180 / 3090."""
    rows = cma_vs_pycma(
        tmp_path, "--functions", "10", "11", "--dims", "10", "--no-sep", "--seeds", "5"
    )
    for row in rows:
        assert row["evolax_successes"] == row["pycma_successes"] == 5, row
        assert 1 / 1.3 <= row["ratio"] <= 1.3, row


@pytest.mark.slow
def test_matches_pycma_on_ill_conditioned_bbob(tmp_path):
    """f10-f14 in d = 10 and 20 (IPOP restarts where the termination criteria fire, as on the
    sharp ridge f13): the median evaluations to f - f_opt < 1e-8 are within 1.2x of pycma's.

    20 seeds, not the issue's 5: with 5, the median of the bent cigar f12 (runs from 5,000
    to 20,000 evaluations in d = 10) or of the restarted f13 is so noisy that two identical
    algorithms differ by more than 1.2x in about 1 case in 5 (bootstrap of the 20-seed runs);
    evolax follows pycma to 1e-8 given the same samples (:func:`test_follows_pycma_step_by_
    step`). Measured (2026-12, 20 seeds, evolax / pycma): f10 4165 / 4180, 13710 / 13608; f11
    3095 / 3090, 7626 / 7644; f12 10620 / 10600, 19812 / 20922; f13 7865 / 7435, 36822 / 41382;
    f14 3900 / 3885, 12858 / 12780 (d = 10, 20)."""
    rows = cma_vs_pycma(tmp_path, "--no-sep", "--seeds", "20")
    assert len(rows) == 10
    for row in rows:
        assert row["evolax_successes"] == 20, row
        assert row["ratio"] <= 1.2, row


# ---------------------------------------------------------------------------------------------
# scale


@pytest.mark.slow
def test_d2000_stays_finite_and_improves(key):
    """d = 2000, default population 26, shifted sphere with optimum linspace(-1, 1) from
    x0 = 0 (distance^2 ~ 667), sigma0 = 0.1: 60 generations (4 eigendecompositions), all
    finite, the distance to the optimum decreasing in every 10-generation block."""
    dim, gens = 2000, 60
    algo = CMAES(pop_size=default_pop_size(dim), init_std=0.1)
    optimum = jnp.linspace(-1.0, 1.0, dim)

    def generation(state, k):
        population, state = algo.ask(k, state)
        state, metrics = algo.tell(
            k, state, population, -jnp.sum((population - optimum[None]) ** 2, 1)
        )
        return state, (jnp.sum((algo.best(state) - optimum) ** 2), metrics["std"])

    state, (gaps, sigmas) = jax.jit(
        lambda s, k: jax.lax.scan(generation, s, jax.random.split(k, gens))
    )(algo.init(key, jnp.zeros(dim)), key)
    gaps = np.asarray(gaps)
    for leaf in (state.cov, state.eigvecs, state.eigvals_sqrt, state.mean, sigmas):
        assert np.all(np.isfinite(np.asarray(leaf)))
    blocks = gaps.reshape(-1, 10)[:, -1]
    assert np.all(np.diff(blocks) < 0), blocks
    assert blocks[-1] < 0.9 * float(jnp.sum(optimum**2)), blocks
    assert not bool(algo.should_stop(state))


def test_without_the_fitness_history_only_the_history_and_its_criteria_differ():
    """``fitness_history=False``: the same search, bit for bit; the history stays as ``init``
    left it and TolFun, EqualFunValues and Stagnation never fire (EqualFunValues would, on
    the empty history's equal ``-inf`` values)."""
    from evolax.algorithms.cma.cma_family import HISTORY_CRITERIA

    with_history, without = CMAES(pop_size=8), CMAES(pop_size=8, fitness_history=False)
    states = [algo.init(jax.random.key(0), jnp.zeros(4)) for algo in (with_history, without)]
    initial = states[1].history
    for generation in range(30):
        for i, algo in enumerate((with_history, without)):
            key = jax.random.key(generation)
            population, asked = algo.ask(key, states[i])
            states[i], _ = algo.tell(key, asked, population, -jnp.sum(population**2, axis=1))
    kept, lean = states
    chex.assert_trees_all_equal(lean.replace(history=kept.history), kept)
    chex.assert_trees_all_equal(lean.history, initial)
    criteria = without.termination_criteria(lean)
    assert all(not bool(criteria[name]) for name in HISTORY_CRITERIA)
    assert set(criteria) == set(with_history.termination_criteria(kept))


def test_extremes_are_the_min_and_the_max():
    from evolax.algorithms.cma.cma_family import extremes

    for values in (jnp.array([3.0, -1.0, 7.5, 0.5]), jnp.array([2.0]), jnp.array([1.0, jnp.nan])):
        low, high = extremes(values)
        np.testing.assert_array_equal([low, high], [jnp.min(values), jnp.max(values)])


def test_float32_axis_lengths_follow_pycma_beyond_the_float32_condition():
    """From a float32 state whose C has condition 1e8 (axis lengths 1 down to 1e-4; float32
    resolves eigenvalues of C only to 1e-7 of the largest, ``eigh`` in float32 clips them at
    an axis ratio of 2.9e3), one tell: the new axis lengths D follow the square roots of the
    eigenvalues of pycma's float64 update (the transcription) to 1%. Before D came from a
    float32 factor (``refactor``), the smallest was clipped to 3.4e-4, 3.4 times too long."""
    dim, pop = 6, 9  # as test_tell_matches_the_transcription: compiled once
    rotation = np.linalg.qr(np.random.default_rng(3).normal(size=(dim, dim)))[0]
    lengths = np.array([1.0, 0.3, 1e-1, 1e-2, 1e-3, 1e-4])
    B = jnp.asarray(rotation, jnp.float32)
    D = jnp.asarray(lengths, jnp.float32)
    B64, D64 = np.asarray(B, np.float64), np.asarray(D, np.float64)
    C = B64 @ np.diag(D64**2) @ B64.T
    algo = CMAES(pop_size=pop, init_std=0.8)
    state = algo.init(jax.random.key(0), jnp.zeros(dim, jnp.float32))
    state = state.replace(
        cov=jnp.asarray(C, jnp.float32), eigvecs=B, eigvals_sqrt=D, generation=state.generation + 3
    )
    state = state.replace(eigen_generation=state.eigen_generation + 3)
    population = _ask(algo, jax.random.key(1), state)
    scales = 1.0 / lengths**2
    f = -np.sum(scales * (np.asarray(population, np.float64) @ rotation) ** 2, axis=1)
    new_state, metrics = _tell(algo, state, population, jnp.asarray(f, jnp.float32))
    *_, C_new, _, _, _, _ = pycma_tell(
        np.zeros(dim), 0.8, C, np.zeros(dim), np.zeros(dim), 3,
        np.asarray(population, np.float64), f,
    )  # fmt: skip
    expected = np.sqrt(np.linalg.eigvalsh(C_new))
    np.testing.assert_allclose(np.sort(np.asarray(new_state.eigvals_sqrt)), expected, rtol=1e-2)
    assert float(metrics["condition_guard"]) == 0.0
