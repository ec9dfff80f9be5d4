"""Double-pole balancing (Wieland, 1991): NEAT's harder pole benchmark (Stanley &
Miikkulainen, 2002, section 4.2), with and without velocities."""

from __future__ import annotations

from collections.abc import Sequence

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
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


def derivatives(physics: Sequence[Array], force: Array) -> tuple[Array, ...]:
    """:func:`accelerations` on components: ``physics`` as six arrays of one shape (one
    environment's scalars, or a fused rollout's lanes), elementwise."""
    _, x_dot, theta_1, theta_1_dot, theta_2, theta_2_dot = physics
    poles = []  # each pole's cos, sin, friction, force on and mass added to the cart
    for theta, theta_dot, m, h in zip(
        (theta_1, theta_2), (theta_1_dot, theta_2_dot), POLE_MASSES, HALF_LENGTHS, strict=True
    ):
        # float32 constants (numpy's, which a kernel inlines), multiplied in float32
        mass, half = np.float32(m), np.float32(h)
        cos, sin = jnp.cos(theta), jnp.sin(theta)
        friction = POLE_FRICTION * theta_dot / (mass * half)
        pole_force = mass * half * theta_dot**2 * sin - 0.75 * mass * cos * (
            GRAVITY * sin - friction
        )
        poles.append((cos, sin, friction, pole_force, mass * (1.0 - 0.75 * cos**2), half))
    (c1, s1, f1, pf1, pm1, h1), (c2, s2, f2, pf2, pm2, h2) = poles
    x_acc = (force + (pf1 + pf2)) / (CART_MASS + (pm1 + pm2))
    theta_1_acc = 0.75 * (GRAVITY * s1 - x_acc * c1 - f1) / h1
    theta_2_acc = 0.75 * (GRAVITY * s2 - x_acc * c2 - f2) / h2
    return x_dot, x_acc, theta_1_dot, theta_1_acc, theta_2_dot, theta_2_acc


def accelerations(physics: Float[Array, "6"], force: Float[Array, ""]) -> Float[Array, "6"]:
    """The time derivative of ``physics`` under ``force`` on the cart (Wieland's equations:
    each pole a uniform rod hinged on the cart with friction, the cart frictionless)."""
    return jnp.stack(derivatives(tuple(physics), force)).astype(physics.dtype)


def rk4_parts(physics: Sequence[Array], force: Array) -> tuple[Array, ...]:
    """:func:`rk4` on components (see :func:`derivatives`)."""

    def moved(by: float, slope: Sequence[Array]) -> tuple[Array, ...]:
        return tuple(p + by * k for p, k in zip(physics, slope, strict=True))

    k1 = derivatives(physics, force)
    k2 = derivatives(moved(0.5 * TAU, k1), force)
    k3 = derivatives(moved(0.5 * TAU, k2), force)
    k4 = derivatives(moved(TAU, k3), force)
    return tuple(
        p + TAU / 6.0 * (a + 2.0 * b + 2.0 * c + d)
        for p, a, b, c, d in zip(physics, k1, k2, k3, k4, strict=True)
    )


def rk4(physics: Float[Array, "6"], force: Float[Array, ""]) -> Float[Array, "6"]:
    """One classical Runge-Kutta step of ``TAU`` seconds."""
    return jnp.stack(rk4_parts(tuple(physics), force))


def failed_parts(physics: Sequence[Array]) -> Array:
    """:func:`failed` on components (see :func:`derivatives`)."""
    x, _, theta_1, _, theta_2, _ = physics
    return (
        (jnp.abs(x) > TRACK)
        | (jnp.abs(theta_1) > FAILURE_ANGLE)
        | (jnp.abs(theta_2) > FAILURE_ANGLE)
    )


def failed(physics: Float[Array, "6"]) -> Bool[Array, ""]:
    """The cart off the track or a pole past 36 degrees."""
    return failed_parts(tuple(physics))


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

    def advance(
        self, physics: Sequence[Array], t: Array, push: Array
    ) -> tuple[tuple[Array, ...], Array, Array, Done]:
        """One step on components, elementwise (one environment's scalars, or a fused
        rollout's lanes): ``push`` is the action's value; returns the physics' six
        components, the step count, whether a pole fell or the cart left, and ``done``."""
        force = FORCE * jnp.clip(push, -1.0, 1.0)
        physics = rk4_parts(rk4_parts(physics, force), force)
        down = failed_parts(physics)
        t = t + 1
        return physics, t, down, down | (t >= self.max_steps)

    def step(
        self, state: DoublePoleState, action: Float[Array, " 1"], key: PRNGKey
    ) -> tuple[DoublePoleState, Reward, Done]:
        del key
        self.check_action(action)
        parts, t, down, done = self.advance(tuple(state.physics), state.t, action[0])
        physics = jnp.stack(parts)
        # the failing step is not one of the last balanced ones
        recorded = state.jiggle.at[state.t % JIGGLE_STEPS].set(jnp.sum(jnp.abs(physics[:4])))
        jiggle = jnp.where(down, state.jiggle, recorded)
        balanced = 1.0 - down.astype(jnp.float32)  # the step counts if the poles stayed up
        if self.velocities:
            reward = balanced
        else:
            steps = t - down.astype(jnp.int32)  # steps balanced so far
            calm = jnp.where(steps > JIGGLE_STEPS, 0.9 * 0.75 / jnp.sum(jiggle), 0.0)
            reward = 1e-4 * balanced + jnp.where(done, calm, 0.0)
        new = DoublePoleState(physics=physics, obs=self.observe(physics), t=t, jiggle=jiggle)
        return new, reward, done

    @property
    def fusable(self) -> bool:
        """With velocities only: without, the return needs the ring of the last 100 steps."""
        return self.velocities

    # the fused rollout's lanes (with velocities): the scaled observation, the physics, t
    def to_lanes(self, state: DoublePoleState) -> tuple[Array, ...]:
        return (
            tuple(state.obs[..., i] for i in range(6))
            + tuple(state.physics[..., i] for i in range(6))
            + (state.t,)
        )

    def from_lanes(self, lanes: Sequence[Array]) -> DoublePoleState:
        """The state of the lanes; the ``jiggle`` ring, which the task's return with
        velocities does not use, is not kept: NaN."""
        t = lanes[12]
        return DoublePoleState(
            obs=jnp.stack(lanes[:6], axis=-1),
            physics=jnp.stack(lanes[6:12], axis=-1),
            t=t,
            jiggle=jnp.full((*t.shape, JIGGLE_STEPS), jnp.nan, jnp.float32),
        )

    def fused_step(
        self, lanes: Sequence[Array], action: Sequence[Array]
    ) -> tuple[tuple[Array, ...], Reward, Done]:
        if not self.velocities:
            raise ValueError("DoublePole has a fused step with velocities=True only")
        physics, t, down, done = self.advance(lanes[6:12], lanes[12], action[0])
        obs = tuple(p / scale for p, scale in zip(physics, OBS_SCALE, strict=True))
        return (*obs, *physics, t), 1.0 - down.astype(jnp.float32), done
