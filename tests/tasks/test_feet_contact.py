"""Feet-contact descriptors on Brax's ant: a standing ant keeps its four feet down, waving
legs lifts them, the descriptor is the fraction of steps each foot touched, and evaluate
returns it for MAP-Elites (slow: compiling the ant takes about 15 s on 2 cores)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("brax", reason="the Brax task needs brax: pip install evolax[brax]")

import evolax
from evolax.policies import MLP
from evolax.tasks import Brax, CartPoleSwingUp
from evolax.tasks.feet_contact import FeetContact

pytestmark = pytest.mark.slow
STEPS = 100


@pytest.fixture(scope="module")
def ant():
    return FeetContact(Brax("ant", max_steps=STEPS))


def episode(task, actions, key):
    state = task.reset(key)

    def body(state, action):
        state, _, _ = task.step(state, action, key)
        return state, task.touching(state.inner)

    state, touching = jax.lax.scan(body, state, actions)
    return task.descriptor(state), touching


def test_standing_keeps_the_feet_down_and_waving_lifts_them(ant):
    assert ant.feet == (2, 4, 6, 8) and ant.descriptor_bounds == ((0.0,) * 4, (1.0,) * 4)
    run = jax.jit(lambda a: episode(ant, a, jax.random.key(0)))
    still, touching = run(jnp.zeros((STEPS, 8)))
    np.testing.assert_array_equal(touching[-STEPS // 4 :], 1.0)  # settled on four feet
    np.testing.assert_allclose(still, touching.mean(axis=0), rtol=1e-6)
    wave = jnp.sin(jnp.arange(STEPS) / 3.0)[:, None] * jnp.tile(jnp.array([0.0, 1.0]), 4)[None]
    waving, _ = run(wave)
    waving, still = np.asarray(waving), np.asarray(still)
    assert np.all(waving < still) and waving.mean() < still.mean() - 0.3


def test_evaluate_returns_feet_contact_descriptors(ant, key):
    policy = MLP(hidden_sizes=(8,))
    params = jax.vmap(lambda k: policy.init(k, ant.obs_shape, ant.action_shape))(
        jax.random.split(key, 3)
    )
    fitness, info = evolax.evaluate(policy, ant, params, key, descriptors=True)
    assert fitness.shape == (3,) and info.descriptors.shape == (3, 4)
    assert np.all((info.descriptors >= 0) & (info.descriptors <= 1))


def test_needs_a_brax_task_with_known_feet():
    with pytest.raises(TypeError, match="task must be a Brax task"):
        FeetContact(CartPoleSwingUp())
    with pytest.raises(ValueError, match="task must be a Brax environment with known feet"):
        FeetContact(Brax("inverted_pendulum"))
