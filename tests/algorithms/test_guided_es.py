"""Guided ES against a numpy transcription of Maheswaranathan et al. (2019), algorithm 1, its
sampling covariance, and the toy problem of the paper's figure 1."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms.es.guided_es import GuidedES

tell = jax.jit(
    lambda algo, state, population, fitness, surrogate: algo.tell(
        jax.random.key(7), state, population, fitness, surrogate_gradient=surrogate
    )
)
ask = jax.jit(lambda algo, key, state: algo.ask(key, state))
SGD = optax.sgd(0.1)  # one optimizer object and one pop_size: one compilation for all tests
POP = 400
X0 = {"a": jnp.arange(4.0), "b": jnp.ones(2)}  # D = 6


def flat(population):
    return jnp.concatenate([population["a"], population["b"]], axis=1)


def test_tell_matches_algorithm_1(key):
    """g = beta / (2 sigma^2 P) sum_i eps_i (f(x + eps_i) - f(x - eps_i)) with P pairs, the
    mean stepping along g (fitness is maximised: the paper's x -= eta g on the loss -f), and
    the last k surrogates kept oldest first; a pytree surrogate is flattened like the genome."""
    pop, sigma, beta, lr = POP, 0.3, 2.0, 0.1
    algo = GuidedES(pop_size=pop, subspace_dims=2, optimizer=SGD, init_std=sigma, beta=beta)
    state = algo.init(key, X0)
    rng = np.random.default_rng(0)
    mean = np.concatenate([np.arange(4.0), np.ones(2)])
    surrogates = [rng.standard_normal(6).astype(np.float32) for _ in range(3)]
    for step, surrogate in enumerate(surrogates):
        population, state = ask(algo, jax.random.key(step), state)
        fitness = jnp.asarray(rng.standard_normal(pop), jnp.float32)
        told = {"a": surrogate[:4], "b": surrogate[4:]} if step == 1 else surrogate
        state, _ = tell(algo, state, population, fitness, told)

        x = np.asarray(flat(population), np.float64)
        eps = x[: pop // 2] - mean
        np.testing.assert_allclose(x[pop // 2 :] - mean, -eps, atol=1e-5)
        f = np.asarray(fitness, np.float64)
        g = beta / (2 * sigma**2 * (pop // 2)) * (f[: pop // 2] - f[pop // 2 :]) @ eps
        mean = mean + lr * g
        np.testing.assert_allclose(state.mean, mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(state.surrogates, np.stack(surrogates[1:]), rtol=1e-6)


def variance_shares(algo, state, direction):
    """The perturbations' mean squared norm and the share of it along ``direction``, over
    the first halves (the second mirrors them) of 10 populations."""
    keys = jax.random.split(jax.random.key(11), 10)
    half = jnp.concatenate([flat(ask(algo, k, state)[0])[: algo.pop_size // 2] for k in keys])
    eps = half - state.mean[None]
    square = float(jnp.mean(jnp.sum(eps**2, 1)))
    along = float(jnp.mean((eps @ (direction / jnp.linalg.norm(direction))) ** 2))
    return square, along / square


def test_ask_samples_the_guided_covariance(key):
    """eps ~ N(0, sigma^2 (alpha / D I + (1 - alpha) / k U U^T)): E|eps|^2 = sigma^2, and the
    share along the one surrogate told so far (k = 2 is replaced by the rank told, 1) is
    alpha / D + 1 - alpha; before any surrogate, 1 / D."""
    dim, sigma, alpha = 6, 0.5, 0.3
    algo = GuidedES(pop_size=POP, subspace_dims=2, optimizer=SGD, init_std=sigma, alpha=alpha)
    state = algo.init(key, X0)
    direction = jnp.asarray(np.random.default_rng(1).standard_normal(dim), jnp.float32)
    square, share = variance_shares(algo, state, direction)
    assert square == pytest.approx(sigma**2, rel=0.05)  # 2,000 draws: 1.3% standard error
    assert share == pytest.approx(1 / dim, rel=0.1)
    population, state = ask(algo, key, state)
    state, _ = tell(algo, state, population, jnp.zeros(POP), 3.0 * direction)
    square, share = variance_shares(algo, state, direction)
    assert square == pytest.approx(sigma**2, rel=0.08)  # 2,000 draws: 2.2% standard error
    assert share == pytest.approx(alpha / dim + 1 - alpha, rel=0.04)


def test_beats_plain_es_on_figure_1s_problem(key):
    """The paper's figure 1(b) (and the authors' demonstration notebook): least squares
    ``f(x) = |A x - b|^2 / (2 m)``, ``A`` (2m x n Gaussian) and ``b`` Gaussian, with the
    surrogate gradient biased by a fixed random unit vector times the true gradient's norm.
    With the notebook's sigma = 0.1, beta = 1, sgd(0.2) and one pair per generation, Guided
    ES (alpha = 0.5, k = 1) reaches ``f - f*`` below half of plain ES's (alpha = 1: the same
    estimator with isotropic samples) within 200 generations (here n = 200 for speed;
    measured at 200 generations: 0.046-0.052 against 0.166-0.177 over seeds 0-4)."""
    n, m = 200, 400
    rng = np.random.RandomState(0)
    a, b = rng.randn(m, n), rng.randn(m)
    x_star = np.linalg.lstsq(a, b, rcond=None)[0]
    f_star = 0.5 / m * np.sum((a @ x_star - b) ** 2)
    bias = rng.randn(n)
    bias = jnp.asarray(bias / np.linalg.norm(bias), jnp.float32)
    a, b = jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)

    def loss(x):
        return 0.5 * jnp.sum((jnp.atleast_2d(x) @ a.T - b[None]) ** 2, -1) / m

    def surrogate(x):
        err = a.T @ (a @ x - b) / m
        return err + bias * jnp.linalg.norm(err)

    def run(alpha):
        algo = GuidedES(pop_size=2, alpha=alpha)

        def generation(state, key):
            ask_key, tell_key = jax.random.split(key)
            population, state = algo.ask(ask_key, state)
            guide = surrogate(state.mean)  # at the mean the population was drawn around
            state, _ = algo.tell(tell_key, state, population, -loss(population),
                                 surrogate_gradient=guide)  # fmt: skip
            return state, None

        state = algo.init(key, jnp.zeros(n))
        state, _ = jax.lax.scan(generation, state, jax.random.split(key, 200))
        return loss(state.mean)[0] - f_star

    guided, plain = jax.jit(jax.vmap(run))(jnp.array([0.5, 1.0]))
    assert float(plain) > 0.1, float(plain)
    assert float(guided) < 0.5 * float(plain), (float(guided), float(plain))


def test_surrogate_checks(key):
    algo = GuidedES(pop_size=POP, subspace_dims=2, optimizer=SGD)
    state = algo.init(key, X0)
    population, state = ask(algo, key, state)
    fitness = jnp.arange(float(POP))
    with pytest.raises(ValueError, match=r"GuidedES\.tell needs surrogate_gradient"):
        tell(algo, state, population, fitness, None)
    with pytest.raises(ValueError, match=r"surrogate_gradient must be a flat \(6,\) array"):
        tell(algo, state, population, fitness, jnp.zeros(4))
    with pytest.raises(ValueError, match="or a pytree like the genome"):
        tell(algo, state, population, fitness, {"a": jnp.zeros(4)})
    # a surrogate that is not finite is not kept; the update still happens
    bad = jnp.array([1.0, jnp.nan, 0.0, 0.0, 0.0, 0.0])
    new, metrics = tell(algo, state, population, fitness, bad)
    np.testing.assert_array_equal(new.surrogates, state.surrogates)
    assert float(metrics["surrogate_kept"]) == 0.0 and float(metrics["skipped"]) == 0.0
    assert not np.allclose(new.mean, state.mean)


@pytest.mark.slow  # a reference check against evosax (nox -s slow)
def test_evosax_leaves_out_the_mean_over_pairs():
    """evosax 0.3.2's ``GuidedES`` estimates ``beta sum (L+ - L-) eps / (2 std^2)``, leaving
    out the paper's ``1 / P`` (algorithm 1: ``beta / (2 sigma^2 P)``, ``P = pop_size / 2``
    pairs): with its own ``beta`` its step is ``P`` times the paper's, which evolax takes.
    (Given ``beta / P``, the updates agree: the reference table's ``GuidedES`` row.)"""
    evosax = pytest.importorskip("evosax.algorithms")
    from reference_table import X0 as REFERENCE_X0
    from reference_table import allow, flat, quadratic

    pop, std, lr = 10, 0.3, 0.02
    ours = GuidedES(pop_size=pop, optimizer=optax.sgd(lr), init_std=std)
    with allow():
        theirs = evosax.GuidedES(pop, REFERENCE_X0, optimizer=optax.sgd(lr),
                                 std_schedule=optax.constant_schedule(std))  # fmt: skip
        params = theirs.default_params
    key = jax.random.key(0)
    state = ours.init(key, REFERENCE_X0)
    with allow():
        their_state = theirs.init(key, REFERENCE_X0, params)
    population, state = ours.ask(key, state)
    fitness = quadratic(population)
    new, _ = ours.tell(key, state, population, fitness, surrogate_gradient=jnp.ones(8))
    their_state = their_state.replace(z=flat(population) - their_state.mean[None])
    with allow():
        their_state, _ = theirs.tell(key, population, -fitness, their_state, params)
    ours_step, their_step = new.mean - state.mean, their_state.mean - state.mean
    np.testing.assert_allclose(their_step, (pop // 2) * ours_step, rtol=1e-4, atol=1e-6)
