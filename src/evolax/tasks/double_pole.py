"""Double-pole balancing (Wieland, 1991): NEAT's harder pole benchmark (Stanley &
Miikkulainen, 2002, section 4.2), with and without velocities."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from evolax.tasks.base import Task
from evolax.types import Done, PRNGKey, Reward
from evolax.validation import check_positive_int

# The constants of the benchmark as NEAT's and ESP's code define it (SI units).
GRAVITY = 9.8
CART_MASS = 1.0
POLE_MASSES = (0.1, 0.01)
HALF_LENGTHS = (0.5, 0.05)  # each pole is a uniform rod of length 2 * half_length
POLE_FRICTION = 2e-6  # N m s: the hinges' friction coefficient
FORCE = 10.0  # N, at action +-1
TAU = 0.01  # s: one Runge-Kutta step; an environment step is two (0.02 s)
TRACK = 2.4  # m: the cart fails beyond +-TRACK
FAILURE_ANGLE = 0.628329  # rad (36 degrees): a pole fails beyond it
OBS_SCALE = (4.8, 2.0, 0.52, 2.0, 0.52, 2.0)  # x, x_dot, theta_1, theta_1_dot, theta_2, ...
JIGGLE_STEPS = 100  # Gruau's fitness: the last steps whose jiggle it divides by
# Gruau et al.'s (1996) generalisation test: these fractions of each range for x, x_dot,
# theta_1 and theta_1_dot (625 starts, the short pole upright and still)
GRID_FRACTIONS = (0.05, 0.25, 0.5, 0.75, 0.95)
GRID_RANGES = ((-2.16, 2.16), (-1.35, 1.35), (-0.06283152, 0.06283152), (-0.15009752, 0.15009752))


def generalisation_starts() -> Float[Array, "625 6"]:
    """The 625 starts of Gruau et al.'s generalisation test, each ``[x, x_dot, theta_1,
    theta_1_dot, 0, 0]`` (``theta_1`` within 3.6 degrees, ``theta_1_dot`` within 8.6 degrees
    a second): a controller generalises when it balances at least 200 of them for 1,000
    steps (NEAT's paper, section 4.2)."""
    axes = [lo + jnp.asarray(GRID_FRACTIONS) * (hi - lo) for lo, hi in GRID_RANGES]
    grid = jnp.stack(jnp.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 4)
    return jnp.concatenate([grid, jnp.zeros((len(grid), 2))], axis=1)


@chex.dataclass(frozen=True)
class DoublePoleState:
    """Attributes:
    physics: ``f32[6]`` = ``[x, x_dot, theta_1, theta_1_dot, theta_2, theta_2_dot]``
        (angles from upright, radians).
    obs: the scaled physics (``f32[6]``), or its positions alone (``f32[3]``) without
        velocities.
    t: steps taken.
    jiggle: ``f32[100]``, the last 100 steps' ``|x| + |x_dot| + |theta_1| + |theta_1_dot|``
        (a ring, at ``t % 100``), for Gruau's fitness.
    """

    physics: Float[Array, "6"]
    obs: Float[Array, " obs_dim"]
    t: Int[Array, ""]
    jiggle: Float[Array, "100"]


def accelerations(physics: Float[Array, "6"], force: Float[Array, ""]) -> Float[Array, "6"]:
    """The time derivative of ``physics`` under ``force`` on the cart (Wieland's equations:
    each pole a uniform rod hinged on the cart with friction, the cart frictionless)."""
    _, x_dot, *poles = physics
    theta = jnp.stack(poles[0::2])
    theta_dot = jnp.stack(poles[1::2])
    mass, half = jnp.asarray(POLE_MASSES), jnp.asarray(HALF_LENGTHS)
    cos, sin = jnp.cos(theta), jnp.sin(theta)
    friction = POLE_FRICTION * theta_dot / (mass * half)
    # each pole's effective force on, and effective mass added to, the cart
    pole_force = mass * half * theta_dot**2 * sin - 0.75 * mass * cos * (GRAVITY * sin - friction)
    pole_mass = mass * (1.0 - 0.75 * cos**2)
    x_acc = (force + jnp.sum(pole_force)) / (CART_MASS + jnp.sum(pole_mass))
    theta_acc = 0.75 * (GRAVITY * sin - x_acc * cos - friction) / half
    return jnp.stack([x_dot, x_acc, theta_dot[0], theta_acc[0], theta_dot[1], theta_acc[1]]).astype(
        physics.dtype
    )


def rk4(physics: Float[Array, "6"], force: Float[Array, ""]) -> Float[Array, "6"]:
    """One classical Runge-Kutta step of ``TAU`` seconds."""
    k1 = accelerations(physics, force)
    k2 = accelerations(physics + 0.5 * TAU * k1, force)
    k3 = accelerations(physics + 0.5 * TAU * k2, force)
    k4 = accelerations(physics + TAU * k3, force)
    return physics + TAU / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def failed(physics: Float[Array, "6"]) -> Bool[Array, ""]:
    """The cart off the track or a pole past 36 degrees."""
    return (jnp.abs(physics[0]) > TRACK) | jnp.any(jnp.abs(physics[2::2]) > FAILURE_ANGLE)


class DoublePole(Task):
    """Balance two poles (1 m and 0.1 m, 0.1 kg and 0.01 kg) hinged on one cart by pushing
    it left or right, as long as possible.

    The cart starts at rest in the middle with the long pole at ``initial_angle`` (0.07 rad,
    4 degrees) and the short one upright. Action ``f32[1]`` in ``[-1, 1]`` (clipped) is a
    force of up to 10 N; each step integrates 0.02 s (two Runge-Kutta steps of 0.01 s). An
    episode ends when the cart leaves ``[-2.4, 2.4]`` m or a pole passes 36 degrees, or
    after ``max_steps`` (100,000: the benchmark's success).

    With ``velocities`` (the Markovian task) the observation is ``f32[6]``: ``[x / 4.8,
    x_dot / 2, theta_1 / 0.52, theta_1_dot / 2, theta_2 / 0.52, theta_2_dot / 2]``, and the
    return is the number of steps balanced. Without (``velocities=False``, the harder task:
    the network must estimate them, so it needs recurrence) the observation is the three
    positions, and the return is Gruau et al.'s (1996) fitness ``0.1 * steps / 1000 +
    0.9 * 0.75 / jiggle`` (the second term once the episode passed 100 steps), ``jiggle``
    being the sum of ``|x| + |x_dot| + |theta_1| + |theta_1_dot|`` over its last 100 steps:
    it rewards balancing without oscillating. Deterministic: one episode per individual.

    Args:
        velocities: observe the velocities (the Markovian task).
        max_steps: episode length limit, positive.
        initial_angle: the long pole's starting angle (radians).
    """

    velocities: bool = eqx.field(static=True, default=True)
    max_steps: int = eqx.field(static=True, default=100_000)
    initial_angle: float = 0.07
    obs_shape: tuple[int, ...] = eqx.field(static=True, init=False)
    action_shape: tuple[int, ...] = eqx.field(static=True, default=(1,), init=False)

    def __post_init__(self):
        self.obs_shape = (6,) if self.velocities else (3,)

    def __check_init__(self):
        check_positive_int("max_steps", self.max_steps)
        if not isinstance(self.initial_angle, jax.Array) and not (
            abs(float(self.initial_angle)) < FAILURE_ANGLE
        ):
            raise ValueError(
                f"initial_angle must be within the failure angle (+-{FAILURE_ANGLE} rad), got "
                f"{self.initial_angle!r}"
            )

    def observe(self, physics: Float[Array, "6"]) -> Float[Array, " obs_dim"]:
        scaled = physics / jnp.asarray(OBS_SCALE, physics.dtype)
        return scaled if self.velocities else scaled[0::2]

    def reset(self, key: PRNGKey) -> DoublePoleState:
        del key  # the benchmark's start is fixed
        return self.start(jnp.zeros(6).at[2].set(self.initial_angle))

    def start(self, physics: Float[Array, "6"]) -> DoublePoleState:
        """An episode from ``physics`` (as :func:`generalisation_starts` gives them)."""
        physics = jnp.asarray(physics)
        return DoublePoleState(
            physics=physics,
            obs=self.observe(physics),
            t=jnp.zeros([], jnp.int32),
            jiggle=jnp.zeros(JIGGLE_STEPS),
        )

    def step(
        self, state: DoublePoleState, action: Float[Array, " 1"], key: PRNGKey
    ) -> tuple[DoublePoleState, Reward, Done]:
        del key
        self.check_action(action)
        force = FORCE * jnp.clip(action[0], -1.0, 1.0)
        physics = rk4(rk4(state.physics, force), force)
        down = failed(physics)
        # the failing step is not one of the last balanced ones
        recorded = state.jiggle.at[state.t % JIGGLE_STEPS].set(jnp.sum(jnp.abs(physics[:4])))
        jiggle = jnp.where(down, state.jiggle, recorded)
        t = state.t + 1
        done = down | (t >= self.max_steps)
        balanced = 1.0 - down.astype(jnp.float32)  # the step counts if the poles stayed up
        if self.velocities:
            reward = balanced
        else:
            steps = t - down.astype(jnp.int32)  # steps balanced so far
            calm = jnp.where(steps > JIGGLE_STEPS, 0.9 * 0.75 / jnp.sum(jiggle), 0.0)
            reward = 1e-4 * balanced + jnp.where(done, calm, 0.0)
        new = DoublePoleState(physics=physics, obs=self.observe(physics), t=t, jiggle=jiggle)
        return new, reward, done
