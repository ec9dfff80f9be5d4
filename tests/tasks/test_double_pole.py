"""Double-pole balancing against its physics derived from first principles: the Lagrangian of
a cart carrying two uniform rods on hinges with friction (sympy), integrated in float64 with
the benchmark's Runge-Kutta steps, and Gruau's fitness computed from that trajectory."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from evolax.tasks import DoublePole

M, MASSES, HALVES, MU, G = 1.0, (0.1, 0.01), (0.5, 0.05), 2e-6, 9.8


@functools.cache
def reference_accelerations():
    """``f(x_dot, theta_1, theta_1_dot, theta_2, theta_2_dot, force) -> (x_acc, theta_1_acc,
    theta_2_acc)`` from Lagrange's equations."""
    sympy = pytest.importorskip("sympy")
    t, force = sympy.symbols("t F")
    x, th1, th2 = (sympy.Function(n)(t) for n in ("x", "th1", "th2"))
    kinetic = M * x.diff(t) ** 2 / 2
    potential = 0
    for th, m, half in ((th1, MASSES[0], HALVES[0]), (th2, MASSES[1], HALVES[1])):
        cx, cz = x + half * sympy.sin(th), half * sympy.cos(th)  # the rod's centre of mass
        inertia = m * half**2 / 3  # a uniform rod of length 2 half about its centre
        kinetic += m * (cx.diff(t) ** 2 + cz.diff(t) ** 2) / 2 + inertia * th.diff(t) ** 2 / 2
        potential += m * G * cz
    lagrangian = kinetic - potential
    coords = (x, th1, th2)
    generalized = (force, -MU * th1.diff(t), -MU * th2.diff(t))
    equations = [
        lagrangian.diff(q.diff(t)).diff(t) - lagrangian.diff(q) - f
        for q, f in zip(coords, generalized, strict=True)
    ]
    accs = [q.diff(t, 2) for q in coords]
    solved = sympy.solve(equations, accs, dict=True)[0]
    symbols = sympy.symbols("xd a1 a1d a2 a2d")
    state = (x.diff(t), th1, th1.diff(t), th2, th2.diff(t))
    # velocities before angles: replacing th1 first would also rewrite th1's derivative
    pairs = list(zip(state, symbols, strict=True))
    substitutions = sorted(pairs, key=lambda pair: not pair[0].is_Derivative)
    exprs = [solved[a].subs(substitutions) for a in accs]
    return sympy.lambdify([*symbols, force], exprs, "numpy")


def reference_step(physics, action):
    """One environment step in float64: two classical Runge-Kutta steps of 0.01 s."""
    f = reference_accelerations()
    force = 10.0 * np.clip(action, -1.0, 1.0)

    def derivative(s):
        x_acc, a1, a2 = f(s[1], s[2], s[3], s[4], s[5], force)
        return np.array([s[1], x_acc, s[3], a1, s[5], a2])

    for _ in range(2):
        k1 = derivative(physics)
        k2 = derivative(physics + 0.005 * k1)
        k3 = derivative(physics + 0.005 * k2)
        k4 = derivative(physics + 0.01 * k3)
        physics = physics + 0.01 / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return physics


def reference_failed(s):
    return abs(s[0]) > 2.4 or abs(s[2]) > 0.628329 or abs(s[4]) > 0.628329


@functools.cache
def lqr_gain():
    """A full-state feedback that balances both poles (LQR on the reference's linearisation)."""
    zero, eps = np.zeros(6), 1e-6
    a = np.stack(
        [(reference_step(zero + eps * e, 0.0) - reference_step(zero - eps * e, 0.0)) / (2 * eps)
         for e in np.eye(6)],
        axis=1,
    )  # fmt: skip
    b = ((reference_step(zero, eps) - reference_step(zero, -eps)) / (2 * eps))[:, None]
    q, r = np.diag([1.0, 1.0, 100.0, 1.0, 100.0, 1.0]), np.array([[1.0]])
    p = scipy.linalg.solve_discrete_are(a, b, q, r)
    return np.linalg.solve(r + b.T @ p @ b, b.T @ p @ a)[0]


def feedback(physics):
    """The LQR action, clipped to the task's range."""
    return float(np.clip(-lqr_gain() @ physics, -1.0, 1.0))


def test_one_step_equals_the_lagrangian_dynamics():
    rng = np.random.default_rng(0)
    task = DoublePole()
    step = jax.jit(task.step)
    state = task.reset(jax.random.key(0))
    scale = np.array([2.0, 1.0, 0.5, 2.0, 0.5, 4.0])
    for _ in range(32):
        physics = rng.uniform(-1, 1, 6) * scale
        action = rng.uniform(-1.5, 1.5)
        s = state.replace(physics=jnp.asarray(physics, jnp.float32))
        new, _, _ = step(s, jnp.asarray([action], jnp.float32), jax.random.key(0))
        expected = reference_step(physics, action)
        np.testing.assert_allclose(new.physics, expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(
            new.obs, expected / np.array([4.8, 2.0, 0.52, 2.0, 0.52, 2.0]), rtol=1e-4, atol=1e-5
        )


def run(task, controller):
    """The task's episode under ``controller(physics) -> action``: (return, steps)."""
    step = jax.jit(task.step)
    state, total, done, steps = task.reset(jax.random.key(0)), 0.0, False, 0
    while not done:
        action = jnp.asarray([controller(np.asarray(state.physics, np.float64))], jnp.float32)
        state, reward, done = step(state, action, jax.random.key(0))
        total, steps = total + float(reward), steps + 1
    return total, steps


def reference_run(max_steps, controller):
    """The reference episode: (steps balanced, its physics at every balanced step)."""
    physics, trajectory = np.array([0.0, 0.0, 0.07, 0.0, 0.0, 0.0]), []
    for _ in range(max_steps):
        physics = reference_step(physics, controller(physics))
        if reference_failed(physics):
            break
        trajectory.append(physics)
    return len(trajectory), trajectory


def test_steps_balanced_without_a_push_and_under_feedback():
    def still(physics):
        return 0.0

    fallen, _ = reference_run(1000, still)
    assert 10 < fallen < 100
    assert run(DoublePole(), still) == (float(fallen), fallen + 1)  # the failing step is done

    assert reference_run(500, feedback)[0] == 500  # the feedback balances the reference
    assert run(DoublePole(max_steps=500), feedback) == (500.0, 500)


@pytest.mark.parametrize("max_steps", [80, 250])
def test_without_velocities_the_return_is_gruaus_fitness(max_steps):
    task = DoublePole(velocities=False, max_steps=max_steps)
    assert task.obs_shape == (3,)
    total, _ = run(task, feedback)
    steps, trajectory = reference_run(max_steps, feedback)
    jiggle = sum(np.sum(np.abs(s[:4])) for s in trajectory[-100:])
    expected = 0.1 * steps / 1000 + (0.9 * 0.75 / jiggle if steps > 100 else 0.0)
    np.testing.assert_allclose(total, expected, rtol=1e-3)


def test_bad_arguments_fail_in_one_line():
    with pytest.raises(ValueError, match="max_steps"):
        DoublePole(max_steps=0)
    with pytest.raises(ValueError, match="initial_angle"):
        DoublePole(initial_angle=0.7)
    with pytest.raises(ValueError, match="action must have shape"):
        task = DoublePole()
        task.step(task.reset(jax.random.key(0)), jnp.zeros(2), jax.random.key(0))
