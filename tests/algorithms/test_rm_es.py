"""Rm-ES against a numpy transcription of Li & Zhang (2018) (R1-ES and Rm-ES), the store of
directions against hand-worked generations, and on a sphere and a cigar."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.cma.cma_es import default_pop_size
from evolax.algorithms.cma.rm_es import RmES, rmes_parameters
from evolax.algorithms.noise import gaussian
from helpers import optimize

tell = jax.jit(lambda algo, state, x, f: algo.tell(jax.random.key(0), state, x, f))


def numpy_weights(lam):
    mu = lam // 2
    w = np.log(mu + 1) - np.log(np.arange(1, mu + 1))
    return w / w.sum()


def numpy_rank_rate(previous, current, w):
    """The rank-based success rule on the mu best of two generations (each sorted best first,
    maximised): 1-based ranks in the mixed set, mean ranks for ties."""
    mixed = np.concatenate([previous, current])
    ranks = np.array([np.sum(mixed > v) + (np.sum(mixed == v) + 1) / 2 for v in mixed])
    mu = len(current)
    return np.sum(w * (ranks[:mu] - ranks[mu:])) / mu


def numpy_tell(mean, sigma, p, s, x, fitness, previous, dim):
    """One update of Li & Zhang (2018), float64: mean, path, rank rate and step size."""
    lam = len(fitness)
    w = numpy_weights(lam)
    mu, mu_eff, c_c = len(w), 1 / np.sum(w**2), 2 / (dim + 7)
    order = np.argsort(-fitness, kind="stable")
    new_mean = np.sum(w[:, None] * x[order[:mu]], axis=0)
    p = (1 - c_c) * p + np.sqrt(c_c * (2 - c_c) * mu_eff) * (new_mean - mean) / sigma
    elite = fitness[order[:mu]]
    if previous is not None:
        s = 0.7 * s + 0.3 * (numpy_rank_rate(previous, elite, w) - 0.3)
        sigma = sigma * np.exp(s)
    return new_mean, sigma, p, s, elite


def test_rank_rate_examples():
    w = numpy_weights(8)  # mu = 4
    better, worse = np.array([9.0, 8.0, 7.0, 6.0]), np.array([4.0, 3.0, 2.0, 1.0])
    rate = lambda a, b: float(RmES.rank_rate(jnp.asarray(a), jnp.asarray(b), w))  # noqa: E731
    assert rate(worse, better) == pytest.approx(1.0)  # every new elite ranks above the old
    assert rate(better, worse) == pytest.approx(-1.0)
    assert rate(better, better) == pytest.approx(0.0)  # ties share their mean rank
    interleaved = np.array([8.5, 7.5, 6.5, 5.5])  # each just behind its counterpart
    assert rate(better, interleaved) == pytest.approx(-1 / 4)
    with_inf = np.array([5.0, 3.0, -np.inf, -np.inf])
    expected = numpy_rank_rate(with_inf, worse, w)  # -inf: told only when not finite
    assert rate(with_inf, worse) == pytest.approx(expected, rel=1e-5)
    assert rate(worse, with_inf) == pytest.approx(-expected, rel=1e-5)


def test_ask_matches_the_sparse_plus_low_rank_model():
    """m = 3: x_i = m + sigma ((1 - c)^(m/2) z_i + sqrt(c) sum_j (1 - c)^((m - j)/2) r_ij p_j), with
    its own r_i for every sample."""
    dim, lam, n_paths = 12, 6, 3
    rng = np.random.default_rng(0)
    algo = RmES(pop_size=lam, n_paths=n_paths)
    paths = rng.standard_normal((n_paths, dim)).astype(np.float32)
    mean = rng.standard_normal(dim).astype(np.float32)
    state = algo.init(jax.random.key(0), jnp.zeros(dim)).replace(
        mean=jnp.asarray(mean), std=jnp.asarray(0.4, jnp.float32), paths=jnp.asarray(paths)
    )
    key = jax.random.key(3)
    population, _ = jax.jit(algo.ask)(key, state)
    key_z, key_r = jax.random.split(key)
    z = np.asarray(gaussian(key_z, (lam, dim)), np.float64)
    r = np.asarray(gaussian(key_r, (lam, n_paths)), np.float64)
    c = 1 / (3 * np.sqrt(dim) + 5)
    expected = np.empty((lam, dim))
    for i in range(lam):
        low_rank = sum(
            (1 - c) ** ((n_paths - j) / 2) * r[i, j - 1] * paths[j - 1]
            for j in range(1, n_paths + 1)
        )
        expected[i] = mean + 0.4 * ((1 - c) ** (n_paths / 2) * z[i] + np.sqrt(c) * low_rank)
    np.testing.assert_allclose(population, expected, rtol=1e-5, atol=1e-5)


def test_tell_matches_the_paper_over_generations():
    """Eight generations of random populations and fitness against ``numpy_tell``; the first
    leaves s and sigma as they were."""
    dim, lam = 9, 8
    rng = np.random.default_rng(0)
    algo = RmES(pop_size=lam, init_std=0.8)
    state = algo.init(jax.random.key(0), jnp.zeros(dim))
    mean, sigma, p, s, previous = np.zeros(dim), 0.8, np.zeros(dim), 0.0, None
    for _ in range(8):
        x = (mean + sigma * rng.standard_normal((lam, dim))).astype(np.float32)
        fitness = rng.standard_normal(lam).astype(np.float32)
        state, metrics = tell(algo, state, jnp.asarray(x), jnp.asarray(fitness))
        mean, sigma, p, s, previous = numpy_tell(
            mean, sigma, p, s, x.astype(np.float64), fitness, previous, dim
        )
        np.testing.assert_allclose(state.mean, mean, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(state.path, p, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(float(state.std), sigma, rtol=1e-5)
        np.testing.assert_allclose(float(state.rank_rate), s, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(state.elite_fitness, previous)
        assert float(metrics["skipped"]) == 0.0
    assert np.abs(s) > 0.05  # the rank rate moved


def test_store_keeps_the_directions_apart():
    """m = 3, T = 2, worked by hand: the oldest leaves while the store fills; then the newer of
    the closest two, unless every gap exceeds T (generation 8 drops the oldest); the stored rows
    are the paths of those generations."""
    dim, lam = 4, 6
    algo = RmES(pop_size=lam, n_paths=3, generation_gap=2)
    state = algo.init(jax.random.key(0), jnp.zeros(dim))
    expected = [
        [-1, -1, 0], [-1, 0, 1], [0, 1, 2], [0, 2, 3], [0, 2, 4],
        [0, 4, 5], [0, 4, 6], [0, 4, 7], [4, 7, 8], [4, 7, 9],
    ]  # fmt: skip
    history = []
    rng = np.random.default_rng(1)
    for generation, stamps in enumerate(expected):
        x = jnp.asarray(rng.standard_normal((lam, dim)), jnp.float32)
        state, _ = tell(algo, state, x, jnp.asarray(rng.standard_normal(lam), jnp.float32))
        history.append(np.asarray(state.path))
        assert state.path_generations.tolist() == stamps, generation
        for row, stamp in zip(np.asarray(state.paths), stamps, strict=True):
            np.testing.assert_array_equal(row, 0.0 if stamp < 0 else history[stamp])
    # m = 1 (R1-ES) keeps just the newest path
    algo = RmES(pop_size=lam, n_paths=1)
    state = algo.init(jax.random.key(0), jnp.zeros(dim))
    for _ in range(2):
        state, _ = tell(algo, state, x, jnp.arange(lam, dtype=jnp.float32))
        np.testing.assert_array_equal(state.paths, state.path[None])


def test_papers_defaults():
    p = rmes_parameters(1000, 24)
    assert p.mu == 12 and p.generation_gap == 1000
    np.testing.assert_allclose(p.weights[:12], numpy_weights(24), rtol=1e-12)
    assert np.all(p.weights[12:] == 0) and p.mu_eff == pytest.approx(1 / np.sum(p.weights**2))
    assert p.c_cov == pytest.approx(1 / (3 * np.sqrt(1000) + 5))
    assert p.c_c == pytest.approx(2 / 1007)
    algo = RmES(pop_size=24)
    assert (algo.n_paths, algo.c_s, algo.q_star, algo.d_sigma) == (2, 0.3, 0.3, 1.0)


def test_reaches_1e_8_on_a_cigar(key):
    """d = 10, lambda = 10, the paper's defaults: f < 1e-8 on the cigar x_1^2 + 1e6 sum_i>1
    x_i^2 within 1,200 generations (measured 770-838 over seeds 0-1), which needs the stored
    directions to learn its long axis."""
    dim = 10

    def cigar(p):
        return p[..., 0] ** 2 + 1e6 * jnp.sum(p[..., 1:] ** 2, -1)

    _, gaps = optimize(
        RmES(pop_size=default_pop_size(dim)), lambda p: -cigar(p), cigar, 1200, key, jnp.ones(dim)
    )
    assert float(gaps[-1]) < 1e-8, float(gaps[-1])


def test_runs_in_o_m_d_memory(key):
    """d = 200,000: no array in ask or tell (state, population or intermediate) has more than
    lambda x d elements."""
    dim, lam = 200_000, 8
    algo = RmES(pop_size=lam, n_paths=4)

    def step(state, key):
        population, state = algo.ask(key, state)
        return algo.tell(key, state, population, -jnp.sum(population**2, 1))

    state = algo.init(key, jnp.zeros(dim))

    def shapes(jaxpr):
        for eqn in jaxpr.eqns:
            for var in eqn.outvars:
                yield getattr(var.aval, "shape", ())
            for param in eqn.params.values():
                for sub in param if isinstance(param, (list, tuple)) else [param]:
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        yield from shapes(inner)

    all_shapes = list(shapes(jax.make_jaxpr(step)(state, key).jaxpr))
    assert len(all_shapes) > 30
    for shape in all_shapes:
        assert np.prod(shape, dtype=np.int64) <= lam * dim and shape.count(dim) <= 1, shape


@pytest.mark.slow  # a reference check against evosax (nox -s slow)
def test_evosax_samples_share_one_low_rank_offset():
    """evosax 0.3.2's ``Rm_ES`` draws one ``r ~ N(0, I_m)`` for the whole population where Li &
    Zhang (2018) give every sample its own ``r_i``: all its samples share the same low-rank
    offset, and the population does not follow ``N(m, sigma^2 C)``. lambda = 4,000 samples
    around stored directions: the variance of the steps along the newest direction ``u`` is
    ``sigma^2 u^T C u`` for evolax (within 10%), while evosax's variance along ``u`` is that
    of the isotropic part alone, ``sigma^2 (1 - c_cov)^m``. (The reference table's ``RmES``
    rows compare the rest and show its other departures.)"""
    evosax = pytest.importorskip("evosax.algorithms")
    from reference_table import allow

    dim, pop, m = 8, 4000, 2
    rng = np.random.default_rng(0)
    paths = jnp.asarray(rng.standard_normal((m, dim)) * [[1.0], [2.0]], jnp.float32)
    mean = jnp.asarray(rng.standard_normal(dim), jnp.float32)
    c = 1 / (3 * np.sqrt(dim) + 5)
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

    with allow():
        theirs = evosax.Rm_ES(pop, jnp.zeros(dim), m=m)
        params = theirs.default_params
        their_state = theirs.init(jax.random.key(0), mean, params).replace(
            std=jnp.asarray(0.5), P=paths
        )
        population, _ = theirs.ask(jax.random.key(1), their_state, params)
    along = (np.asarray(population, np.float64) - np.asarray(mean)) @ u / 0.5
    assert np.var(along) == pytest.approx((1 - c) ** m, rel=0.1)
    assert expected > 2 * (1 - c) ** m
