"""The influence-balancing problem (its closed-form optimum and truncated solution), and why
PersistentES and NoiseReuseES exist: on it, truncated ES is biased and they are not."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms import OpenES
from evolax.algorithms.es.noise_reuse_es import NoiseReuseES
from evolax.algorithms.es.persistent_es import PersistentES
from evolax.algorithms.shaping import raw
from evolax.problems.unrolled import InfluenceBalancing

PROBLEM = InfluenceBalancing()  # n = 23, p = 10, T = 100
THETA_STAR = -0.04670222594822068  # PROBLEM.optimum()
THETA_TRUNCATED = 0.9482758629131474  # PROBLEM.truncated_solution(1)


def tbptt_gradient(problem, theta, truncation_length):
    """Truncated BPTT, written independently of the problem's closed forms: the sum over an
    unroll of each truncation's loss gradient, the incoming state held constant."""

    def truncation(state, _):
        loss = lambda th, s: problem.unroll(th, s, truncation_length)  # noqa: E731
        grad, state = jax.grad(loss, has_aux=True)(theta, state)
        return state, grad

    count = problem.total_length // truncation_length
    _, grads = jax.lax.scan(truncation, problem.init_state(), None, length=count)
    return jnp.sum(grads)


def test_the_closed_forms_agree_with_autodiff():
    """``optimum`` zeroes ``jax.grad`` of the full unroll, ``truncated_solution(K)`` zeroes
    truncated BPTT, and a long unroll's optimum tends to -1/6 (``s_0 = -6 theta``)."""
    assert PROBLEM.optimum() == pytest.approx(THETA_STAR, abs=1e-12)
    assert PROBLEM.truncated_solution(1) == pytest.approx(THETA_TRUNCATED, abs=1e-12)
    full_grad = jax.jit(jax.grad(PROBLEM.loss))
    scale = abs(float(full_grad(0.5)))
    assert scale > 1000
    assert abs(float(full_grad(THETA_STAR))) < 1e-6 * scale
    for k in (1, 10):
        solution = PROBLEM.truncated_solution(k)
        assert solution > 0.5  # the wrong side of 0
        assert abs(float(tbptt_gradient(PROBLEM, jnp.float32(solution), k))) < 1e-5 * scale
    assert InfluenceBalancing(total_length=20_000).optimum() == pytest.approx(-1 / 6, abs=2e-3)


def test_unroll_sums_its_steps_losses_across_truncations():
    state = PROBLEM.init_state()
    first, state = PROBLEM.unroll(jnp.array([0.3]), state, 40)
    second, state = PROBLEM.unroll(jnp.array([0.3]), state, 60)
    np.testing.assert_allclose(first + second, PROBLEM.loss(0.3), rtol=1e-5)
    # by hand: s_1 = A 1 + theta v = 1 + theta v except the last unit (0.5 + theta v)
    loss, s1 = PROBLEM.unroll(0.3, PROBLEM.init_state(), 1)
    np.testing.assert_allclose(s1[:-1], 1 + 0.3 * np.asarray(PROBLEM.signs())[:-1], rtol=1e-6)
    assert float(loss) == pytest.approx(0.5 * 0.3**2)


def test_rejects_bad_configuration():
    for kwargs, match in [
        ({"size": 1}, "size"),
        ({"num_positive": 24}, "num_positive"),
        ({"total_length": 0}, "total_length"),
    ]:
        with pytest.raises(ValueError, match=match):
            InfluenceBalancing(**kwargs)


def truncated_training(algo, key, theta0, n_unrolls, truncation_length=1):
    """``n_unrolls`` unrolls of ``PROBLEM`` in truncations of ``truncation_length`` steps: one
    ask/tell each, every member continuing its own inner state, all reset when an unroll
    starts. Returns the mean ``theta`` over each unroll's truncations, ``[n_unrolls]``."""
    count = -(-PROBLEM.total_length // truncation_length)

    def truncation(carry, key):
        state, inner = carry
        ask_key, tell_key = jax.random.split(key)
        x, state = algo.ask(ask_key, state)
        losses, inner = jax.vmap(PROBLEM.unroll, (0, 0, None))(x, inner, truncation_length)
        state, _ = algo.tell(tell_key, state, x, -losses)
        return (state, inner), state.mean[0]

    def unroll(state, key):
        inner = jnp.broadcast_to(PROBLEM.init_state(), (algo.pop_size, PROBLEM.size))
        (state, _), thetas = jax.lax.scan(truncation, (state, inner), jax.random.split(key, count))
        return state, jnp.mean(thetas)

    state = algo.init(key, jnp.array([theta0]))
    return jax.lax.scan(unroll, state, jax.random.split(key, n_unrolls))[1]


SGD = optax.sgd(1e-4)
ALGORITHMS = {
    "truncated_es": (OpenES(20, optimizer=SGD, init_std=0.1, fitness_shaping=raw), 1000),
    "pes": (PersistentES(20, truncation_length=1, total_length=100, optimizer=SGD), 200),
    "nres": (NoiseReuseES(20, truncation_length=1, total_length=100, optimizer=SGD), 200),
}


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_truncated_es_is_biased_where_pes_and_nres_are_not(name):
    """The influence-balancing experiment of Vicol, Metz & Sohl-Dickstein (2021, section 5,
    the loss curves of TBPTT, ES, PES, UORO and RTRL: github.com/google-research/
    persistent_es, ``figures/influence_balancing/influence_balancing.png``; the paper's text
    was not available to check the figure's number). Their settings: truncations of ``K = 1``
    step, ``sigma = 0.1``, plain SGD of learning rate 1e-4, ``theta_0 = 0.5``; here 20 members
    instead of 1000 and unrolls of ``T = 100`` steps reset between unrolls (theirs never
    reset: there truncated methods diverge; here they settle at a wrong point).

    Each member continues its own inner state; evolax ``OpenES`` (antithetic, raw fitness)
    told each truncation's loss is truncated ES. Measured (mean ``theta`` over the last 100
    unrolls, keys 0-7; key 0 is tested): truncated ES 0.80 to 1.09 (0.81) after 1000 unrolls,
    around the truncated solution 0.948 (its pull is weak: ``sum_t c_t b_t = 58`` against the
    full unroll's curvature 6533); PES -0.039 to -0.056 (-0.046) and NRES -0.0476 to -0.0488
    (-0.0476) after 200 unrolls, against the optimum -0.0467."""
    algo, n_unrolls = ALGORITHMS[name]
    thetas = jax.jit(lambda key: truncated_training(algo, key, 0.5, n_unrolls))(jax.random.key(0))
    theta = float(jnp.mean(thetas[-100:]))
    if name == "truncated_es":
        assert theta - THETA_STAR > 0.6
        assert abs(theta - THETA_TRUNCATED) < 0.3
    else:
        assert abs(theta - THETA_STAR) < {"pes": 0.025, "nres": 0.01}[name]


def recorder() -> optax.GradientTransformation:
    """An optimizer that never moves the mean and keeps the last gradient it was given."""
    return optax.GradientTransformation(jnp.zeros_like, lambda g, s, p=None: (jnp.zeros_like(g), g))


def unroll_gradient_estimate(algo, key, theta):
    """The sum over one unroll (``K = 1``) of the loss gradients that ``algo`` estimates at a
    fixed ``theta``."""

    def truncation(carry, key):
        state, inner = carry
        ask_key, tell_key = jax.random.split(key)
        x, state = algo.ask(ask_key, state)
        losses, inner = jax.vmap(PROBLEM.unroll, (0, 0, None))(x, inner, 1)
        state, _ = algo.tell(tell_key, state, x, -losses)
        return (state, inner), state.opt_state[0]

    state = algo.init(key, jnp.array([theta]))
    inner = jnp.broadcast_to(PROBLEM.init_state(), (algo.pop_size, PROBLEM.size))
    keys = jax.random.split(key, PROBLEM.total_length)
    return jnp.sum(jax.lax.scan(truncation, (state, inner), keys)[1])


@pytest.mark.parametrize(
    "name",
    ["pes", pytest.param("nres", marks=pytest.mark.slow),
     pytest.param("truncated_es", marks=pytest.mark.slow)],
)  # fmt: skip
def test_the_estimates_summed_over_an_unroll_are_unbiased(name):
    """At ``theta = 0.5``, 2000 unrolls of one antithetic pair in ``K = 1`` truncations: the
    mean of the summed PES (NRES) estimates is ``jax.grad`` of the full unroll's loss, 3571.6,
    within 4 standard errors (measured: PES 3412 +- 137, NRES 3765 +- 115); truncated ES's is
    truncated BPTT's, -26.0 (measured -28.5 +- 4.8), more than 20 standard errors from the
    truth. The loss is quadratic in ``theta``, so Gaussian smoothing changes no gradient."""
    samples, theta = 2000, 0.5
    algo = {
        "pes": PersistentES(2, truncation_length=1, total_length=100, optimizer=recorder()),
        "nres": NoiseReuseES(2, truncation_length=1, total_length=100, optimizer=recorder()),
        "truncated_es": OpenES(2, optimizer=recorder(), init_std=0.1, fitness_shaping=raw),
    }[name]
    estimate = jax.jit(jax.vmap(lambda key: unroll_gradient_estimate(algo, key, theta)))
    g = np.asarray(estimate(jax.random.split(jax.random.key(1), samples)), np.float64)
    mean, error = g.mean(), g.std() / np.sqrt(samples)
    true = float(jax.grad(PROBLEM.loss)(theta))
    truncated = float(tbptt_gradient(PROBLEM, jnp.float32(theta), 1))
    assert abs(true - truncated) > 20 * error  # the test can tell them apart
    expected = truncated if name == "truncated_es" else true
    assert abs(mean - expected) < 4 * error, (mean, error, expected)
