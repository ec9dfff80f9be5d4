"""Cart-pole swing-up against an independent float64 transcription of EvoJAX's equations."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.tasks import CartPoleSwingUp


def reference_step(state, action):
    """EvoJAX cartpole.py (0.2.17) `update_state`, written out in float64 numpy."""
    g, m_cart, m_pole, length, mu, dt = 9.82, 0.5, 0.5, 0.6, 0.1, 0.01
    f = float(np.clip(action, -1.0, 1.0)) * 10.0
    x, v, th, w = (float(s) for s in state)
    m = m_cart + m_pole
    sin, cos = np.sin(th), np.cos(th)
    x_acc = (
        -2 * m_pole * length * w * w * sin + 3 * m_pole * g * sin * cos + 4 * f - 4 * mu * v
    ) / (4 * m - 3 * m_pole * cos * cos)
    th_acc = (
        -3 * m_pole * length * w * w * sin * cos + 6 * m * g * sin + 6 * (f - mu * v) * cos
    ) / (4 * length * m - 3 * m_pole * length * cos * cos)
    return np.array([x + v * dt, v + x_acc * dt, th + w * dt, w + th_acc * dt])


def reference_reward(state):
    x, _, th, _ = state
    return (np.cos(th) + 1) / 2 * np.cos(x / 2.4 * np.pi / 2)


def rollout(task, key, actions):
    state = task.reset(key)
    states, rewards, dones = [state], [], []
    step = jax.jit(task.step)
    for a in actions:
        state, r, d = step(state, jnp.array([a], jnp.float32), key)
        states.append(state)
        rewards.append(float(r))
        dones.append(bool(d))
    return states, rewards, dones


@pytest.mark.parametrize("hard", [False, True])
def test_every_step_matches_reference(hard):
    task = CartPoleSwingUp(hard=hard)
    actions = np.random.default_rng(0).uniform(-1.5, 1.5, size=300)  # includes clipped actions
    states, rewards, dones = rollout(task, jax.random.key(3), actions)
    for t, a in enumerate(actions):
        before = np.asarray(states[t].physics, np.float64)
        after = np.asarray(states[t + 1].physics, np.float64)
        np.testing.assert_allclose(after, reference_step(before, a), rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(rewards[t], reference_reward(after), rtol=1e-5, atol=1e-6)
        x, v, th, w = after
        obs = [x, v, np.cos(th), np.sin(th), w]
        np.testing.assert_allclose(states[t + 1].obs, obs, rtol=1e-5, atol=1e-6)
        assert dones[t] == (abs(x) > 2.4)


def test_trajectory_matches_reference_over_100_steps():
    task = CartPoleSwingUp()
    actions = np.sin(np.arange(100) / 7.0)
    states, _, _ = rollout(task, jax.random.key(1), actions)
    ref = np.asarray(states[0].physics, np.float64)
    for a in actions:
        ref = reference_step(ref, a)
    np.testing.assert_allclose(states[-1].physics, ref, rtol=1e-4, atol=1e-4)


def test_episode_ends_at_max_steps_and_off_track():
    task = CartPoleSwingUp(max_steps=5)
    state = task.reset(jax.random.key(0))
    for t in range(5):
        state, _, done = task.step(state, jnp.zeros(1), jax.random.key(0))
        assert bool(done) == (t == 4)
    state = task.reset(jax.random.key(0))
    state = state.replace(physics=jnp.array([2.39, 5.0, 0.0, 0.0]))
    _, _, done = task.step(state, jnp.zeros(1), jax.random.key(0))
    assert bool(done)


def test_initial_state_distributions():
    keys = jax.random.split(jax.random.key(0), 20_000)
    easy = np.asarray(jax.vmap(CartPoleSwingUp().initial_physics)(keys))
    np.testing.assert_allclose(easy.mean(0), [0, 0, np.pi, 0], atol=0.01)
    np.testing.assert_allclose(easy.std(0), 0.2, rtol=0.03)
    hard = np.asarray(jax.vmap(CartPoleSwingUp(hard=True).initial_physics)(keys))
    half_width = np.array([2.4, 10.0, np.pi / 2, 10.0])
    assert np.all(np.abs(hard - [0, 0, np.pi, 0]) <= half_width + 1e-6)
    np.testing.assert_allclose(hard.mean(0), [0, 0, np.pi, 0], atol=0.1)
    np.testing.assert_allclose(hard.std(0), half_width / np.sqrt(3), rtol=0.03)


def test_shapes_and_validation():
    task = CartPoleSwingUp()
    assert task.obs_shape == (5,) and task.action_shape == (1,) and task.max_steps == 1000
    with pytest.raises(ValueError, match="max_steps"):
        CartPoleSwingUp(max_steps=0)
