"""Cart-pole swing-up against an independent float64 transcription of EvoJAX's equations."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.tasks import CartPoleSwingUp
from evolax.tasks.cartpole import CartPoleState, observe


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


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pole_length": 0.0}, "pole_length must be a finite positive number"),
        ({"cart_mass": np.float32(-0.5)}, "cart_mass must be a finite positive number"),
        ({"pole_mass": float("inf")}, "pole_mass must be a finite positive number"),
        ({"delta_t": -0.01}, "delta_t must be a finite positive number"),
        ({"force_scaling": 0}, "force_scaling must be a finite positive number"),
        ({"cart_x_limit": np.array(-1.0)}, "cart_x_limit must be a finite positive number"),
        ({"gravity": -9.82}, "gravity must be a finite number >= 0"),
        ({"friction": float("nan")}, "friction must be a finite number >= 0"),
    ],
)
def test_physics_fields_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CartPoleSwingUp(**kwargs)


def test_physics_fields_default_to_evojax_constants():
    task = CartPoleSwingUp(gravity=0.0, friction=0.0)  # zero gravity and friction are allowed
    assert (task.gravity, task.friction) == (0.0, 0.0)
    task = CartPoleSwingUp()
    fields = ("gravity", "cart_mass", "pole_mass", "pole_length", "friction")
    assert tuple(getattr(task, f) for f in fields) == (9.82, 0.5, 0.5, 0.6, 0.1)
    assert (task.force_scaling, task.delta_t, task.cart_x_limit) == (10.0, 0.01, 2.4)


def swing(task, physics, actions):
    """Step ``task`` from ``physics`` with ``actions``: every physics state after, ``[T, 4]``."""
    state = CartPoleState(obs=observe(physics), physics=physics, steps=jnp.zeros([], jnp.int32))

    def body(state, action):
        state, _, _ = task.step(state, action[None], jax.random.key(0))
        return state, state.physics

    return jax.lax.scan(body, state, actions)[1]


def test_vmap_over_pole_length_runs_each_length_as_alone():
    """The pole length is an ordinary field: one vmapped program runs each length as a
    program for that length alone does (up to float32 rounding: XLA fuses the batched program
    differently)."""
    start = jnp.array([0.0, 0.0, jnp.pi - 0.3, 0.0])
    actions = jnp.sin(jnp.arange(300) / 7.0)

    def run(length):
        return swing(CartPoleSwingUp(pole_length=length), start, actions)

    lengths = jnp.array([0.6, 0.9])
    batched = jax.jit(jax.vmap(run))(lengths)
    for i, length in enumerate(lengths):
        np.testing.assert_allclose(batched[i], jax.jit(run)(length), rtol=1e-4, atol=1e-4)
        # as a Python float (compiled in as a constant)
        constant = jax.jit(lambda length=float(length): run(length))()
        np.testing.assert_allclose(batched[i], constant, rtol=1e-4, atol=1e-4)
    assert np.abs(batched[0] - batched[1]).max() > 0.1  # the lengths do swing differently
    # the default is EvoJAX's 0.6 m, bit for bit
    np.testing.assert_array_equal(
        jax.jit(lambda: swing(CartPoleSwingUp(), start, actions))(),
        jax.jit(lambda: run(0.6))(),
    )


def test_a_longer_pole_swings_as_the_equations_of_motion_predict():
    """Against the equations of motion (EvoJAX's, as in ``integrate``), solved by hand:

    * the pole held horizontal (theta = pi/2, at rest, no force) has ``cos(theta) = 0``, so
      ``theta_acc = 6 M g / (4 L M) = 3 g / (2 L)`` (a uniform rod about its end), whatever
      the cart: the first Euler step gives ``theta_dot = dt * 3 g / (2 L)``;
    * hanging (theta = pi + phi, small phi, no friction, no force): ``sin(theta) = -phi``,
      ``cos(theta) = -1``, and the ``theta_dot^2`` term is of second order, so
      ``phi_acc = -6 M g phi / (L (4 M - 3 m_p))``: small oscillations of period
      ``2 pi sqrt(L (4 M - 3 m_p) / (6 M g))``, longer by ``sqrt(1.5)`` for a pole 1.5 times
      as long.
    """
    g, m_cart, m_pole, dt = 9.82, 0.5, 0.5, 0.01
    lengths = np.array([0.6, 0.9])
    total = m_cart + m_pole

    def first_theta_dot(length):
        task = CartPoleSwingUp(pole_length=length)
        return swing(task, jnp.array([0.0, 0.0, jnp.pi / 2, 0.0]), jnp.zeros(1))[0, 3]

    theta_dot = jax.jit(jax.vmap(first_theta_dot))(jnp.asarray(lengths))
    np.testing.assert_allclose(theta_dot, dt * 3 * g / (2 * lengths), rtol=1e-5)

    def hanging(length):
        task = CartPoleSwingUp(pole_length=length, friction=0.0, max_steps=500)
        return swing(task, jnp.array([0.0, 0.0, jnp.pi + 0.05, 0.0]), jnp.zeros(500))[:, 2]

    phi = np.asarray(jax.jit(jax.vmap(hanging))(jnp.asarray(lengths)), np.float64) - np.pi
    periods = []
    for p in phi:  # the time between upward zero crossings (linearly interpolated)
        up = np.flatnonzero((p[:-1] < 0) & (p[1:] >= 0))
        crossings = (up + p[up] / (p[up] - p[up + 1])) * dt
        assert len(crossings) >= 3
        periods.append(np.mean(np.diff(crossings)))
    expected = 2 * np.pi * np.sqrt(lengths * (4 * total - 3 * m_pole) / (6 * total * g))
    np.testing.assert_allclose(periods, expected, rtol=0.01)
    np.testing.assert_allclose(periods[1] / periods[0], np.sqrt(1.5), rtol=0.01)
