"""ASEBO against a numpy transcription of Choromanski et al. (2019), algorithm 1 (the decayed
second moment of the gradients, its PCA, the exploration weight alpha), its sampling
covariance, and on a function with a one-dimensional active subspace."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms.es.asebo import ASEBO
from helpers import optimize

tell = jax.jit(
    lambda algo, state, population, fitness: algo.tell(
        jax.random.key(7), state, population, fitness
    )
)
ask = jax.jit(lambda algo, key, state: algo.ask(key, state))
SGD = optax.sgd(0.05)  # one optimizer object and one pop_size: one compilation for all tests
POP = 400


def numpy_projector(cov, threshold):
    """The projector on the active subspace of ``cov``: its fewest leading eigenvectors
    whose eigenvalues hold ``threshold`` of its trace (none if it is 0)."""
    values, vectors = np.linalg.eigh(cov)
    values, vectors = values[::-1], vectors[:, ::-1]
    if np.trace(cov) <= 0:
        return np.zeros_like(cov), values
    r = int(np.argmax(np.cumsum(values) >= threshold * np.trace(cov) * (1 - 1e-9))) + 1
    return vectors[:, :r] @ vectors[:, :r].T, values


def test_tell_matches_algorithm_1(key):
    """Six generations in D = 6 (max_rank = D: exact): grad = sum (f+ - f-) g / (2 n sigma),
    Cov_{t+1} = gamma Cov_t + (1 - gamma) grad grad^T, the active subspace of the fewest
    leading eigenvectors holding ``pca_threshold`` of trace(Cov_t), alpha_{t+1} =
    min(1, |(I - P) grad| / |P grad|) with P the projector the population was sampled with,
    and the plain step mean += lr grad, all against float64 numpy."""
    dim, pop, sigma, lr, gamma, threshold = 6, POP, 0.2, 0.05, 0.8, 0.9
    algo = ASEBO(pop_size=pop, optimizer=SGD, init_std=sigma, grad_decay=gamma,
                 pca_threshold=threshold, max_rank=dim, warmup=2)  # fmt: skip
    state = algo.init(key, jnp.zeros(dim))
    rng = np.random.default_rng(0)
    target = rng.standard_normal(dim)
    mean, cov, alpha = np.zeros(dim), np.zeros((dim, dim)), 1.0
    alphas = []
    for step in range(6):
        population, _ = ask(algo, jax.random.key(step), state)
        x = np.asarray(population, np.float64)
        fitness = -np.sum((x - target) ** 2 * np.arange(1, dim + 1), axis=1)
        state, metrics = tell(algo, state, population, jnp.asarray(fitness, jnp.float32))

        g = (x[: pop // 2] - mean) / sigma
        np.testing.assert_allclose(x[pop // 2 :] - mean, -sigma * g, atol=1e-5)
        grad = (fitness[: pop // 2] - fitness[pop // 2 :]) @ g / (2 * (pop // 2) * sigma)
        projector, _ = numpy_projector(cov, threshold)
        inside = np.linalg.norm(projector @ grad)
        alpha = min(1.0, np.linalg.norm(grad - projector @ grad) / inside) if inside else 1.0
        cov = gamma * cov + (1 - gamma) * np.outer(grad, grad)
        mean = mean + lr * grad
        alphas.append(alpha)

        err = f"generation {step}"
        np.testing.assert_allclose(state.mean, mean, rtol=1e-4, atol=1e-5, err_msg=err)
        assert float(state.alpha) == pytest.approx(alpha, rel=1e-3, abs=1e-5), err
        assert float(state.trace) == pytest.approx(np.trace(cov), rel=1e-4), err
        projector, values = numpy_projector(cov, threshold)
        np.testing.assert_allclose(state.eigenvalues, values, rtol=1e-3, atol=1e-5 * values[0])
        basis = np.asarray(state.basis, np.float64)[np.asarray(algo.active(state))]
        np.testing.assert_allclose(basis.T @ basis, projector, atol=1e-4, err_msg=err)
        assert float(metrics["subspace_dims"]) == pytest.approx(np.trace(projector), abs=1e-6)
    assert min(alphas[1:]) < 1.0  # the adaptive branch was exercised


def directions(algo, state):
    """The directions ``g`` of the first halves (the second mirrors them) of 10
    populations, ``[2000, D]``."""
    keys = jax.random.split(jax.random.key(11), 10)
    half = jnp.concatenate([ask(algo, k, state)[0][: algo.pop_size // 2] for k in keys])
    return np.asarray((half - state.mean[None]) / state.std, np.float64)


def test_ask_mixes_the_active_subspace_and_isotropic_noise(key):
    """With a one-dimensional active subspace u and alpha = 0.3, the directions are those of
    N(0, alpha / D I + (1 - alpha) u u^T) (the mean squared cosine with u matches numpy's
    draws) and their norms those of an isotropic draw (chi(D): |g|^2 has mean D and variance
    2 D); during the warmup sampling is isotropic."""
    dim, alpha = 6, 0.3
    algo = ASEBO(pop_size=POP, optimizer=SGD, init_std=0.5, max_rank=dim, warmup=3)
    u = np.zeros(dim)
    u[5] = 1.0
    state = algo.init(key, jnp.zeros(dim))
    state = state.replace(
        basis=jnp.zeros((dim, dim)).at[0].set(u),
        eigenvalues=jnp.zeros(dim).at[0].set(2.0),
        trace=jnp.float32(2.0),
        alpha=jnp.float32(alpha),
    )
    rng = np.random.default_rng(0)
    isotropic = rng.standard_normal((100_000, dim))
    mixed = np.sqrt(alpha / dim) * isotropic + np.sqrt(1 - alpha) * np.outer(
        rng.standard_normal(100_000), u
    )
    for generation, reference in [(2, isotropic), (3, mixed)]:
        g = directions(algo, state.replace(generation=jnp.int32(generation)))
        squares = np.sum(g**2, axis=1)
        # standard errors over 2,000 draws: 1.3% (mean), 5% (variance), 2.5% (cosine)
        assert np.mean(squares) == pytest.approx(dim, rel=0.05), generation
        assert np.var(squares) == pytest.approx(2 * dim, rel=0.25), generation
        cosine = np.mean((g @ u) ** 2 / squares)
        expected = np.mean((reference @ u) ** 2 / np.sum(reference**2, axis=1))
        assert cosine == pytest.approx(expected, rel=0.1), generation
    assert expected > 0.5  # the subspace was sampled, not just the isotropic part


def test_the_active_subspace_speeds_up_a_low_rank_problem(key):
    """f(x) = -(b^T x - c)^2 in D = 30 varies along b only. With 16 pairs per generation the
    gradient estimates concentrate in span(b), alpha falls (measured 0.2-0.4 at the end) and
    the samples follow; after 100 generations f's gap is below a fifth of that of the same
    estimator with isotropic samples throughout (warmup > generations; measured: 9e-9-2e-8
    against 6e-7-1.2e-6 over seeds 0-2)."""
    dim = 30
    rng = np.random.default_rng(0)
    b = jnp.asarray(rng.standard_normal(dim) / np.sqrt(dim), jnp.float32)
    c = float(rng.standard_normal())

    def fitness(population):
        return -((population @ b - c) ** 2)

    def run(warmup):
        algo = ASEBO(pop_size=32, optimizer=optax.sgd(0.05), max_rank=20, warmup=warmup)
        state, gap = optimize(algo, fitness, lambda best: -fitness(best), 100, key,
                              jnp.zeros(dim))  # fmt: skip
        return gap[-1], state.alpha

    (adaptive, isotropic), (alpha, _) = jax.jit(jax.vmap(run))(jnp.array([5, 1000]))
    assert float(alpha) < 0.8
    assert float(adaptive) < 0.2 * float(isotropic), (float(adaptive), float(isotropic))


@pytest.mark.slow  # a reference check against evosax (nox -s slow)
def test_evosax_centres_the_gradients_and_loses_their_direction():
    """evosax 0.3.2's ``ASEBO`` departs from the paper (Choromanski et al., 2019, algorithm
    1), which evolax follows: its active subspace is the top ``subspace_dims`` right singular
    vectors of the CENTRED last ``subspace_dims + 1`` gradients, not the leading eigenvectors
    of their decayed second moment ``Cov_t = gamma Cov_{t-1} + (1 - gamma) grad grad^T``.
    Centring removes the mean gradient direction. (The updates agree given the same subspace:
    the reference table's ``ASEBO`` row.)

    The same gradient told twice: the paper's ``Cov_t`` is rank one along it, and so is
    evolax's active subspace; evosax's centred archive is 0 (its copy of the gradient is set
    exactly, without the rounding of two tells), so its ``UUT`` is 0 and it samples
    isotropically. With two consistent noisy gradients ``d + 0.1 n_i``, the paper's leading
    eigenvector is close to ``d``, evosax's is their difference, nearly orthogonal to ``d``.
    Its ``grad_decay`` changes nothing."""
    evosax = pytest.importorskip("evosax.algorithms")
    from jax.flatten_util import ravel_pytree
    from reference_table import F32, X0, allow, asebo_projector, to_norm_dim

    from evolax.algorithms import mirrored

    dim, pop, std, lr = 8, 10, 0.3, 0.05
    ours = ASEBO(pop_size=pop, optimizer=optax.chain(to_norm_dim(dim), optax.adam(lr)),
                 init_std=std, max_rank=4, warmup=0)  # fmt: skip
    with allow():
        theirs = evosax.ASEBO(pop, X0, subspace_dims=1, optimizer=optax.adam(lr),
                              std_schedule=optax.constant_schedule(std))  # fmt: skip
        params = theirs.default_params
    key = jax.random.key(0)
    state = ours.init(key, X0)
    with allow():
        their_state = theirs.init(key, X0, params)
    g = jax.random.normal(jax.random.key(1), (pop // 2, dim))
    fitness = jax.random.normal(jax.random.key(2), (pop,))
    _, unravel = ravel_pytree(X0)
    for _ in range(2):  # the same directions and fitness around the current mean
        population = jax.vmap(unravel)(mirrored(state.mean, std * g))
        state, _ = ours.tell(key, state, population, fitness)
        with allow():
            their_state, _ = theirs.tell(key, population, -fitness, their_state, params)
        np.testing.assert_allclose(state.mean, their_state.mean, *F32)
    gradient = their_state.grad_subspace[-1]
    np.testing.assert_allclose(their_state.grad_subspace[0], gradient, rtol=1e-4)
    direction = gradient / jnp.linalg.norm(gradient)
    np.testing.assert_allclose(asebo_projector(ours, state), jnp.outer(direction, direction),
                               atol=1e-5)  # fmt: skip
    assert int(jnp.sum(ours.active(state))) == 1

    def evosax_subspace(params, gradients):
        """evosax's ``UUT`` for the gradient archive ``gradients`` (its ``ask`` computes it)."""
        with allow():
            asked = their_state.replace(grad_subspace=gradients)
            return theirs.ask(jax.random.key(0), asked, params)[1].UUT

    twice = jnp.stack([gradient, gradient])
    their_state = their_state.replace(generation_counter=2)  # evosax's subspace is ready
    np.testing.assert_array_equal(evosax_subspace(params, twice), jnp.zeros((dim, dim)))

    d = np.zeros(dim, np.float32)
    d[3] = 1.0
    noise = 0.1 * np.random.default_rng(0).standard_normal((2, dim)).astype(np.float32)
    consistent = jnp.asarray(d + noise)
    theirs_uut = evosax_subspace(params, consistent)
    _, vectors = np.linalg.eigh(np.asarray(consistent, np.float64).T @ np.asarray(consistent))
    assert abs(vectors[:, -1] @ d) > 0.97  # the paper's leading direction
    assert float(d @ theirs_uut @ d) < 0.05  # evosax's misses it
    unused = evosax_subspace(params.replace(grad_decay=0.5), consistent)
    np.testing.assert_array_equal(theirs_uut, unused)  # grad_decay is not used
