"""CR-FM-NES against the authors' reference implementation (PyPI ``crfmnes`` 1.0.0) fed the
same samples, and on a sphere, an ellipsoid and Rosenbrock's function."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.cma.cr_fm_nes import CRFMNES, crfmnes_parameters, default_pop_size
from helpers import optimize

crfmnes = pytest.importorskip("crfmnes")
crfmnes_alg = pytest.importorskip("crfmnes.alg")

DIM, POP = 10, 10

# compiled once for every test (the algorithm is a pytree argument, its pop_size static)
tell = jax.jit(
    lambda algo, state, population, fitness: algo.tell(
        jax.random.key(0), state, population, fitness
    )
)
sample = jax.jit(lambda algo, state, z: algo.sample(state, z))
ask = jax.jit(lambda algo, key, state: algo.ask(key, state))


def reference_run(monkeypatch, f, m0, sigma0, z_scale, n_iterations, seed):
    """Run the reference and ours side by side for ``n_iterations``: each iteration the
    reference draws injected half-samples, and ours is told the reference's population with
    the negated objective (NaN where the reference sees an infeasible ``inf``).

    Returns, per iteration, our state, the reference's, the reference's branch of the sigma
    rate and its number of feasible samples."""
    rng = np.random.default_rng(seed)
    v0 = rng.standard_normal((DIM, 1)) / np.sqrt(DIM)
    reference = crfmnes.CRFMNES(
        DIM,
        f,
        m0.reshape(DIM, 1).copy(),
        sigma0,
        POP,
        v=v0.copy(),
        use_constraint_violation=False,
    )
    algo = CRFMNES(pop_size=POP)
    state = algo.init(jax.random.key(0), jnp.asarray(m0, jnp.float32)).replace(
        std=jnp.asarray(sigma0, jnp.float32), v=jnp.asarray(v0[:, 0], jnp.float32)
    )
    results = []
    for _ in range(n_iterations):
        z_half = z_scale * rng.standard_normal((DIM, POP // 2))
        monkeypatch.setattr(np.random, "randn", lambda *shape, z=z_half: z)
        xs, evals, _ = reference.one_iteration()
        monkeypatch.undo()
        x = np.stack(xs)
        # our sampling map, on the same z (the layout [z, -z] is the reference's)
        z = np.concatenate([z_half.T, -z_half.T])
        np.testing.assert_allclose(
            sample(algo, state, jnp.asarray(z, jnp.float32)),
            x,
            rtol=1e-4,
            atol=1e-5 * np.abs(x).max(),
        )
        fitness = -np.where(np.isinf(evals), np.nan, evals)  # tell makes NaN -inf
        state, metrics = tell(
            algo, state, jnp.asarray(x, jnp.float32), jnp.asarray(fitness, jnp.float32)
        )
        ps_norm = np.linalg.norm(reference.ps)
        branch = (
            "move"
            if ps_norm >= reference.chiN
            else "stag"
            if ps_norm >= 0.1 * reference.chiN
            else "conv"
        )
        assert float(metrics["feasible"]) == np.sum(np.isfinite(evals))
        results.append((state, snapshot(reference), branch, int(np.sum(np.isfinite(evals)))))
    return results


def snapshot(reference):
    return {
        "mean": reference.m[:, 0].copy(),
        "std": float(reference.sigma),
        "v": reference.v[:, 0].copy(),
        "d": reference.D[:, 0].copy(),
        "p_sigma": reference.ps[:, 0].copy(),
        "p_c": reference.pc[:, 0].copy(),
    }


def assert_state_matches(state, ref):
    for name in ("mean", "std", "v", "d", "p_sigma", "p_c"):
        want = np.asarray(ref[name])
        np.testing.assert_allclose(
            getattr(state, name),
            want,
            rtol=2e-4,
            atol=2e-5 * max(1.0, np.abs(want).max()),
            err_msg=name,
        )


def sphere(x):
    return float(np.sum(x**2))


def half_space_sphere(x):
    # infeasible (inf) beyond x_0 > 2, the optimum (3, ..., 3) outside: the mean moves to the
    # boundary, where some samples of each generation are infeasible
    return np.inf if x[0, 0] > 2.0 else float(np.sum((x - 3.0) ** 2))


@pytest.mark.parametrize(
    "f, m0, sigma0, z_scale, branches",
    [
        # far away: the distance weights of a moving distribution, then the stagnation rate
        (sphere, 3.0 * np.ones(DIM), 0.5, 1.0, {"move", "stag"}),
        (sphere, 0.1 * np.ones(DIM), 1.0, 1.0, {"stag"}),  # near the optimum
        (sphere, 0.1 * np.ones(DIM), 1.0, 0.01, {"conv"}),  # tiny samples: |p_sigma| small
        (half_space_sphere, np.zeros(DIM), 1.0, 1.0, {"move", "stag"}),  # infeasible samples
    ],
    ids=["moving", "near-optimum", "small-path", "infeasible"],
)
def test_updates_match_the_reference_implementation(monkeypatch, f, m0, sigma0, z_scale, branches):
    """12 generations side by side, each state within float32 tolerance of the reference's
    (which runs in float64); ``branches`` are the sigma-rate branches the run must cover."""
    results = reference_run(monkeypatch, f, m0, sigma0, z_scale, 12, seed=0)
    for state, ref, _, _ in results:
        assert_state_matches(state, ref)
    assert {branch for _, _, branch, _ in results} == branches
    n_feasible = [n for *_, n in results]
    if f is half_space_sphere:  # some, never most, samples were infeasible
        assert min(n_feasible) > POP // 2 and min(n_feasible) < POP, n_feasible
    else:
        assert min(n_feasible) == POP


def test_constants_match_the_reference():
    reference = crfmnes.CRFMNES(
        DIM, sphere, np.zeros((DIM, 1)), 1.0, POP, use_constraint_violation=False
    )
    p = crfmnes_parameters(DIM, POP)
    np.testing.assert_allclose(p.w_rank, reference.w_rank[:, 0], rtol=1e-12)
    np.testing.assert_allclose(p.w_rank_hat, reference.w_rank_hat[:, 0], rtol=1e-12)
    for ours, theirs in [
        (p.mu_eff, reference.mueff),
        (p.c_sigma, reference.cs),
        (p.c_c, reference.cc),
        (p.c1_cma, reference.c1_cma),
        (p.chi_n, reference.chiN),
    ]:
        assert ours == pytest.approx(theirs, rel=1e-12)
    for dim in (2, 10, 1000, 100000):
        assert crfmnes_parameters(dim, POP).h_inv == pytest.approx(
            crfmnes_alg.get_h_inv(dim), rel=1e-9
        )


def test_default_pop_size_is_even():
    assert default_pop_size(10) == 10  # 4 + floor(3 ln 10)
    assert default_pop_size(100) == 18  # 4 + floor(3 ln 100) = 17, rounded up
    assert all(default_pop_size(d) % 2 == 0 for d in range(1, 2000, 7))


def test_ask_is_mirrored_and_has_the_restricted_covariance(key):
    dim = 5
    algo = CRFMNES(pop_size=40000)
    v = jnp.asarray([0.5, -1.0, 0.0, 0.3, 0.2])
    d = jnp.asarray([1.0, 2.0, 0.5, 1.0, 1.5])
    state = algo.init(key, jnp.arange(5.0)).replace(std=jnp.asarray(0.3), v=v, d=d)
    population, _ = ask(algo, key, state)
    population = np.asarray(population, np.float64)
    half = 20000
    np.testing.assert_allclose(
        population[:half] + population[half:] - 2 * np.arange(5.0)[None], 0.0, atol=1e-5
    )
    cov = np.cov(population.T)
    dd = np.diag(np.asarray(d, np.float64))
    want = 0.09 * dd @ (np.eye(dim) + np.outer(v, v)) @ dd
    np.testing.assert_allclose(cov, want, atol=0.01)


def run_crfmnes(fitness_fn, gap_fn, n_generations, key, x0):
    algo = CRFMNES(pop_size=default_pop_size(x0.shape[0]))
    return optimize(algo, fitness_fn, gap_fn, n_generations, key, x0)


def test_reaches_1e_8_on_a_shifted_sphere(key):
    """d = 10, lambda = 10, sigma_0 = 1 from 1: f - f* < 1e-8 within 150 generations (1,500
    evaluations; measured: 82-90 generations over seeds 0-2)."""
    optimum = jnp.linspace(-2.0, 3.0, 10)
    _, gaps = run_crfmnes(
        lambda p: -jnp.sum((p - optimum[None]) ** 2, 1),
        lambda m: jnp.sum((m - optimum) ** 2),
        150,
        key,
        jnp.ones(10),
    )
    assert float(gaps[-1]) < 1e-8, float(gaps[-1])


def test_reaches_1e_8_on_an_ellipsoid(key):
    """d = 10, condition 1e6 (axis-parallel), lambda = 10: f < 1e-8 within 350 generations
    (3,500 evaluations; measured: 188-194 generations, seeds 0-2)."""
    scales = 10.0 ** (6 * jnp.arange(10) / 9)
    _, gaps = run_crfmnes(
        lambda p: -jnp.dot(p**2, scales), lambda m: jnp.dot(m**2, scales), 350, key, jnp.ones(10)
    )
    assert float(gaps[-1]) < 1e-8, float(gaps[-1])


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reaches_1e_8_on_rosenbrock(seed):
    """d = 10 from 0, lambda = 10: the mean reaches f < 1e-8 within 1,000 generations
    (10,000 evaluations; measured: 445-635 generations, seeds 0-2)."""

    def rosenbrock(p):
        return jnp.sum(100 * (p[:, 1:] - p[:, :-1] ** 2) ** 2 + (1 - p[:, :-1]) ** 2, 1)

    _, gaps = run_crfmnes(
        lambda p: -rosenbrock(p),
        lambda m: rosenbrock(m[None])[0],
        1000,
        jax.random.key(seed),
        jnp.zeros(10),
    )
    assert float(jnp.min(gaps)) < 1e-8, float(jnp.min(gaps))


def test_every_non_finite_fitness_is_infeasible(key):
    """NaN, -inf and +inf all arrive as -inf: infeasible, not counted in lambda_F."""
    algo = CRFMNES(pop_size=8)
    state = algo.init(key, jnp.zeros(6))
    population, _ = ask(algo, jax.random.key(1), state)
    fitness = jnp.asarray([1.0, jnp.nan, 0.5, -jnp.inf, -1.0, 2.0, jnp.inf, 0.0])
    new_state, metrics = tell(algo, state, population, fitness)
    assert float(metrics["feasible"]) == 5.0 and float(metrics["skipped"]) == 0.0
    for leaf in jax.tree.leaves(new_state):
        assert np.all(np.isfinite(leaf))


def test_rejects_bad_configuration():
    algo = CRFMNES(pop_size=4)
    state = algo.init(jax.random.key(0), jnp.zeros(6))
    with pytest.raises(ValueError, match="fitness"):
        algo.tell(jax.random.key(0), state, jnp.zeros((4, 6)), jnp.zeros(5))
