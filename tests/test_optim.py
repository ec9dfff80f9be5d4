"""ClipUp against a direct transcription of Toklu et al. (2020), Algorithm 1; EvoJAX's Adam
against jax.example_libraries' Adam called as EvoJAX calls it, and PGPE with it against
EvoJAX's own PGPE."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms import PGPE
from evolax.optim import clipup, evojax_adam


def test_matches_paper_recurrence():
    lr, momentum, max_speed = 0.1, 0.9, 0.15
    opt = clipup(lr, momentum=momentum, max_speed=max_speed)
    params = {"w": jnp.zeros(3), "b": jnp.zeros(())}
    state = opt.init(params)
    rng = np.random.default_rng(0)
    x, v = np.zeros(4), np.zeros(4)
    for _ in range(6):
        ascent = rng.normal(size=4)
        # paper: v <- m v + lr g/|g|; if |v| > max: v <- max v/|v|; x <- x + v
        v = momentum * v + lr * ascent / np.linalg.norm(ascent)
        if np.linalg.norm(v) > max_speed:
            v = max_speed * v / np.linalg.norm(v)
        x = x + v
        grads = {
            "w": jnp.asarray(-ascent[:3], jnp.float32),
            "b": jnp.asarray(-ascent[3], jnp.float32),
        }
        updates, state = opt.update(grads, state, params)
        params = optax.apply_updates(params, updates)
        got = np.concatenate([params["w"], params["b"][None]])
        np.testing.assert_allclose(got, x, rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore:optax.global_norm is deprecated:DeprecationWarning")
def test_matches_evosax_clipup():
    """evosax 0.3.2's ``clipup(lr, max_velocity)`` keeps the velocity before the learning
    rate (clipped at ``max_velocity / lr``) and normalises by ``norm + 1e-8``: the same steps
    as ``clipup(lr, max_speed=max_velocity)``."""
    evosax_optimizer = pytest.importorskip("evosax.core.optimizer")
    ours, theirs = clipup(0.1, max_speed=0.15), evosax_optimizer.clipup(0.1, max_velocity=0.15)
    params = {"w": jnp.zeros(3), "b": jnp.zeros(())}
    state_ours, state_theirs = ours.init(params), theirs.init(params)
    rng = np.random.default_rng(3)
    for _ in range(8):
        grads = {"w": jnp.asarray(rng.normal(size=3), jnp.float32), "b": jnp.float32(rng.normal())}
        a, state_ours = ours.update(grads, state_ours)
        b, state_theirs = theirs.update(grads, state_theirs)
        for leaf_a, leaf_b in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
            np.testing.assert_allclose(leaf_a, leaf_b, rtol=1e-5, atol=1e-7)


def test_zero_gradient_is_finite():
    opt = clipup(0.1)
    updates, _ = opt.update(jnp.zeros(3), opt.init(jnp.zeros(3)))
    np.testing.assert_array_equal(updates, 0.0)


@pytest.mark.parametrize(
    ("kwargs", "match"), [({"momentum": 1.0}, "momentum"), ({"max_speed": 0}, "max_speed")]
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        clipup(0.1, **kwargs)


def test_momentum_can_be_swept_under_vmap():
    """A traced momentum is not range-checked (it has no value yet); it runs."""

    def first_update(momentum):
        opt = clipup(0.1, momentum=momentum)
        updates, _ = opt.update(jnp.ones(3), opt.init(jnp.zeros(3)))
        return updates

    updates = jax.vmap(first_update)(jnp.array([0.0, 0.9]))
    np.testing.assert_allclose(updates[0], updates[1])  # the first step has no velocity yet


@pytest.mark.slow  # a reference comparison (6 s)
def test_evojax_adam_matches_example_libraries_adam_with_evojax_step_index():
    from jax.example_libraries import optimizers

    init, update, get_params = optimizers.adam(0.006)
    opt = evojax_adam(0.006)
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.normal(size=6), jnp.float32)
    reference, params = init(x), {"a": x[:2], "b": x[2:].reshape(2, 2)}
    state = opt.init(params)
    for t in range(2100):  # across two advances of the corrections' index
        g = rng.normal(size=6).astype(np.float32) + 0.2
        reference = update(t // 1000, jnp.asarray(g), reference)  # EvoJAX's PGPE.tell
        updates, state = opt.update({"a": g[:2], "b": g[2:].reshape(2, 2)}, state)
        params = optax.apply_updates(params, updates)
    got = np.concatenate([params["a"], params["b"].ravel()])
    assert np.max(np.abs(get_params(reference) - x)) > 0.5  # it did move
    np.testing.assert_allclose(got, get_params(reference), rtol=1e-4, atol=1e-4)


def test_evojax_adam_with_period_one_is_optax_adam():
    rng = np.random.default_rng(2)
    a, b = evojax_adam(0.01, correction_period=1), optax.adam(0.01)
    pa, pb = jnp.zeros(4), jnp.zeros(4)
    sa, sb = a.init(pa), b.init(pb)
    for _ in range(50):
        g = jnp.asarray(rng.normal(size=4), jnp.float32)
        ua, sa = a.update(g, sa)
        ub, sb = b.update(g, sb)
        pa, pb = optax.apply_updates(pa, ua), optax.apply_updates(pb, ub)
    np.testing.assert_allclose(pa, pb, rtol=1e-5, atol=1e-7)


@pytest.mark.slow  # a reference comparison (6 s)
def test_pgpe_with_evojax_adam_follows_evojax_pgpe():
    from evojax.algo import PGPE as EvoJAXPGPE

    dim, pop, steps = 12, 8, 1100
    kwargs = {"center_learning_rate": 0.006, "stdev_learning_rate": 0.089, "init_stdev": 0.039}
    theirs = EvoJAXPGPE(pop_size=pop, param_size=dim, optimizer="adam", seed=0, **kwargs)
    ours = PGPE(pop_size=pop, optimizer=evojax_adam(0.006), init_std=0.039, std_lr=0.089)
    state = ours.init(jax.random.key(0), jnp.zeros(dim))
    target = jnp.linspace(-50.0, 50.0, dim)  # far: neither the centre nor std converges
    tell = jax.jit(ours.tell)
    key = jax.random.key(1)  # PGPE's update is deterministic: one key serves
    order = np.r_[0:pop:2, 1:pop:2]  # evolax's layout: [c + e1..n, c - e1..n]
    for _ in range(steps):
        with jax.numpy_rank_promotion("allow"):  # EvoJAX broadcasts implicitly
            center = theirs._center
            solutions = theirs.ask()  # interleaved: [c + e1, c - e1, c + e2, ...]
            # -|x - target|^2 + |c - target|^2, summed near 0: at |x - target|^2 ~ 1e4 two
            # members came within one float32 step, and a GPU's rounding made them tie, which
            # the two layouts' rankings break differently
            step = solutions - center[None]
            fitness = -jnp.sum(step * (step + 2 * (center - target)[None]), axis=1)
            theirs.tell(fitness)
        state, _ = tell(key, state, solutions[order], fitness[order])
    np.testing.assert_allclose(state.mean, theirs.best_params, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(state.std, theirs._stdev, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"b1": 1.0}, "b1"),
        ({"b2": -0.1}, "b2"),
        ({"eps": 0.0}, "eps"),
        ({"correction_period": 0}, "correction_period"),
    ],
)
def test_evojax_adam_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        evojax_adam(0.01, **kwargs)
