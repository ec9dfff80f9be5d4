"""Cart-pole swing-up, as in the EvoJAX paper (Tang et al., 2022)."""

from __future__ import annotations

from collections.abc import Sequence

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.tasks.base import Task
from evolax.types import Done, PRNGKey, Reward
from evolax.validation import check_non_negative, check_positive, check_positive_int

# EvoJAX's constants: the defaults of CartPoleSwingUp's physics fields
GRAVITY = 9.82  # m/s^2
CART_MASS = 0.5  # kg
POLE_MASS = 0.5  # kg
POLE_LENGTH = 0.6  # m
FRICTION = 0.1  # N s/m
FORCE_SCALING = 10.0  # N
DELTA_T = 0.01  # s
CART_X_LIMIT = 2.4  # m

# Drawing (pixels): the track's centre (x = 0) is the image's centre column.
SCREEN_W, SCREEN_H = 600, 400
PIXELS_PER_METRE = 100.0
CART_W, CART_H = 60, 30
CART_Y = 250  # row of the cart's centre (and of the pole's pivot)
WHEEL_RADIUS = 8
TRACK_Y = CART_Y + CART_H // 2 + WHEEL_RADIUS
LIMIT_MARK_HALF_HEIGHT = 12
POLE_WIDTH = 8
CART_COLOR, POLE_COLOR, WHEEL_COLOR = (255, 0, 0), (0, 0, 255), (128, 128, 128)


@chex.dataclass(frozen=True)
class CartPoleState:
    """Cart-pole state.

    Attributes:
        obs: ``f32[5]`` = ``[x, x_dot, cos(theta), sin(theta), theta_dot]``.
        physics: ``f32[4]`` = ``[x, x_dot, theta, theta_dot]`` (theta = 0 is upright).
        steps: steps taken in this episode.
    """

    obs: Float[Array, "5"]
    physics: Float[Array, "4"]
    steps: Int[Array, ""]


def observe_parts(physics: Array | Sequence[Array]) -> tuple[Array, ...]:
    """:func:`observe` on components: ``physics`` as four arrays of one shape (one
    environment's scalars, or a fused rollout's lanes), the observation as five."""
    x, x_dot, theta, theta_dot = physics
    return x, x_dot, jnp.cos(theta), jnp.sin(theta), theta_dot


def observe(physics: Float[Array, "4"]) -> Float[Array, "5"]:
    """Observation ``[x, x_dot, cos(theta), sin(theta), theta_dot]`` of a physics state."""
    return jnp.stack(observe_parts(physics))


class CartPoleSwingUp(Task):
    """Swing a pole up from hanging down and balance it, keeping the cart on the track.

    Action ``f32[1]`` in ``[-1, 1]`` (clipped) scales a force of up to ``force_scaling``
    (10 N). The reward per step is :meth:`swing_up_reward`; an episode ends when
    ``|x| > cart_x_limit`` (2.4 m) or after ``max_steps`` steps. Easy: start near hanging
    still, ``N([0, 0, pi, 0], 0.2^2)``. Hard: ``[0, 0, pi, 0] + U(-1, 1) * [cart_x_limit, 10,
    pi/2, 10]``.

    The physics parameters are ordinary (not static) fields, kept apart from the state as
    gymnax keeps an environment's parameters: set them at construction, or ``vmap`` over them
    by building the task inside the vmapped function from traced values. Python floats (the
    defaults are EvoJAX's constants) compile into the program as constants (a trainer treats
    only arrays as arguments). Each is checked at construction when it is a concrete number.

    Args:
        hard: use the hard initial-state distribution.
        max_steps: episode length limit (1000 in the paper).
        gravity: gravitational acceleration (m/s^2), ``>= 0``.
        cart_mass: mass of the cart (kg), positive.
        pole_mass: mass of the pole (kg), positive.
        pole_length: length of the pole (m), positive; the pole is a uniform rod pivoting at
            the cart (the equations' moment of inertia about the pivot is ``m L^2 / 3``).
        friction: friction coefficient of the cart on the track (N s/m), ``>= 0``.
        force_scaling: the force of action 1 (N), positive.
        delta_t: time step of the explicit Euler integration (s), positive.
        cart_x_limit: half-length of the track (m), positive: the episode ends when the cart
            leaves it.
    """

    hard: bool = eqx.field(static=True, default=False)
    max_steps: int = eqx.field(static=True, default=1000)
    gravity: float = GRAVITY
    cart_mass: float = CART_MASS
    pole_mass: float = POLE_MASS
    pole_length: float = POLE_LENGTH
    friction: float = FRICTION
    force_scaling: float = FORCE_SCALING
    delta_t: float = DELTA_T
    cart_x_limit: float = CART_X_LIMIT
    obs_shape: tuple[int, ...] = eqx.field(static=True, default=(5,), init=False)
    action_shape: tuple[int, ...] = eqx.field(static=True, default=(1,), init=False)

    def __check_init__(self):
        check_positive_int("max_steps", self.max_steps)
        for name in ("gravity", "friction"):
            check_non_negative(name, getattr(self, name))
        for name in (
            "cart_mass",
            "pole_mass",
            "pole_length",
            "force_scaling",
            "delta_t",
            "cart_x_limit",
        ):
            check_positive(name, getattr(self, name))

    def swing_up_reward(self, physics: Array | Sequence[Array]) -> Reward:
        """``(cos(theta) + 1) / 2 * cos(pi / 2 * x / cart_x_limit)``: 1 when upright at the
        centre (``physics`` as an array or its four components)."""
        x, _, theta, _ = physics
        return (jnp.cos(theta) + 1.0) / 2.0 * jnp.cos(x / self.cart_x_limit * (jnp.pi / 2.0))

    def integrate(
        self,
        physics: Float[Array, "4"],
        force: Float[Array, ""],
        sin_cos: tuple[Float[Array, ""], Float[Array, ""]] | None = None,
    ) -> Float[Array, "4"]:
        """One explicit-Euler step of EvoJAX's cart-pole equations of motion.

        ``sin_cos``: ``(sin(theta), cos(theta))`` when already known (an observation holds
        them), to save computing them again.
        """
        return jnp.stack(self.euler_step(physics, force, sin_cos))

    def euler_step(
        self,
        physics: Array | Sequence[Array],
        force: Array,
        sin_cos: tuple[Array, Array] | None = None,
    ) -> tuple[Array, Array, Array, Array]:
        """:meth:`integrate` on components: ``[x, x_dot, theta, theta_dot]`` as four arrays of
        one shape (one environment's scalars, or a fused rollout's lanes), elementwise."""
        x, x_dot, theta, theta_dot = physics
        s, c = (jnp.sin(theta), jnp.cos(theta)) if sin_cos is None else sin_cos
        gravity, friction, dt = self.gravity, self.friction, self.delta_t
        pole_mass, pole_length = self.pole_mass, self.pole_length
        total_mass = self.cart_mass + pole_mass
        m_p_l = pole_mass * pole_length
        x_acc = (
            -2 * m_p_l * theta_dot**2 * s
            + 3 * pole_mass * gravity * s * c
            + 4 * force
            - 4 * friction * x_dot
        ) / (4 * total_mass - 3 * pole_mass * c**2)
        theta_acc = (
            -3 * m_p_l * theta_dot**2 * s * c
            + 6 * total_mass * gravity * s
            + 6 * (force - friction * x_dot) * c
        ) / (4 * pole_length * total_mass - 3 * m_p_l * c**2)
        return (
            x + x_dot * dt,
            x_dot + x_acc * dt,
            theta + theta_dot * dt,
            theta_dot + theta_acc * dt,
        )

    def initial_physics(self, key: PRNGKey) -> Float[Array, "4"]:
        """Sample the initial ``[x, x_dot, theta, theta_dot]``."""
        hanging = jnp.array([0.0, 0.0, jnp.pi, 0.0])
        if self.hard:
            scale = jnp.array([self.cart_x_limit, 10.0, jnp.pi / 2.0, 10.0])
            return hanging + jax.random.uniform(key, (4,), minval=-1.0, maxval=1.0) * scale
        return hanging + 0.2 * jax.random.normal(key, (4,))

    def reset(self, key: PRNGKey) -> CartPoleState:
        physics = self.initial_physics(key)
        return CartPoleState(obs=observe(physics), physics=physics, steps=jnp.zeros([], jnp.int32))

    def advance(
        self,
        physics: Array | Sequence[Array],
        sin_cos: tuple[Array, Array],
        steps: Array,
        push: Array,
    ) -> tuple[tuple[Array, Array, Array, Array], Array, Reward, Done]:
        """One step on components, elementwise (one environment's scalars, or a fused
        rollout's lanes): ``push`` is the action's value; returns the physics' four
        components, the step count, the reward and ``done``."""
        force = jnp.clip(push, -1.0, 1.0) * self.force_scaling
        new = self.euler_step(physics, force, sin_cos)
        steps = steps + 1
        done = (jnp.abs(new[0]) > self.cart_x_limit) | (steps >= self.max_steps)
        return new, steps, self.swing_up_reward(new), done

    def step(
        self, state: CartPoleState, action: Float[Array, "1"], key: PRNGKey
    ) -> tuple[CartPoleState, Reward, Done]:
        del key
        # the observation holds cos and sin of theta: reused, they are not computed twice
        parts, steps, reward, done = self.advance(
            state.physics, (state.obs[3], state.obs[2]), state.steps, action[0]
        )
        physics = jnp.stack(parts)
        return CartPoleState(obs=observe(physics), physics=physics, steps=steps), reward, done

    # the fused rollout's lanes: the observation's five components, theta and the step count
    def to_lanes(self, state: CartPoleState) -> tuple[Array, ...]:
        return (*(state.obs[..., i] for i in range(5)), state.physics[..., 2], state.steps)

    def from_lanes(self, lanes: Sequence[Array]) -> CartPoleState:
        x, x_dot, _, _, theta_dot, theta, steps = lanes
        return CartPoleState(
            obs=jnp.stack(lanes[:5], axis=-1),
            physics=jnp.stack([x, x_dot, theta, theta_dot], axis=-1),
            steps=steps,
        )

    def fused_step(
        self, lanes: Sequence[Array], action: Sequence[Array]
    ) -> tuple[tuple[Array, ...], Reward, Done]:
        x, x_dot, cos, sin, theta_dot, theta, steps = lanes
        physics, steps, reward, done = self.advance(
            (x, x_dot, theta, theta_dot), (sin, cos), steps, action[0]
        )
        return (*observe_parts(physics), physics[2], steps), reward, done

    descriptor_bounds = ((-1.0, -1.0), (1.0, 1.0))

    def descriptor(self, state: CartPoleState) -> Float[Array, "2"]:
        """Where the episode left the cart and the pole: ``[x / cart_x_limit, cos(theta)]``
        (clipped to ``[-1, 1]``): ``[0, 1]`` is upright at the centre."""
        x, _, theta, _ = state.physics
        return jnp.clip(jnp.stack([x / self.cart_x_limit, jnp.cos(theta)]), -1.0, 1.0)

    def render(self, state: CartPoleState) -> np.ndarray:
        """Draw one state as ``uint8[400, 600, 3]``: track, limits, cart, wheels, pole, step.

        The pole points up at ``theta = 0`` and right at ``theta = pi / 2``.
        """
        from PIL import Image, ImageDraw

        physics = np.asarray(state.physics, dtype=np.float64)
        if physics.shape != (4,):
            raise ValueError(
                f"render draws one state: physics must have shape (4,), got {physics.shape}"
            )
        x, _, theta, _ = physics
        x_limit, pole_length = float(self.cart_x_limit), float(self.pole_length)
        image = Image.new("RGB", (SCREEN_W, SCREEN_H), (255, 255, 255))
        draw = ImageDraw.Draw(image)
        centre = SCREEN_W / 2
        draw.line([(0, TRACK_Y), (SCREEN_W, TRACK_Y)], fill=(0, 0, 0), width=2)
        for limit in (-x_limit, x_limit):
            column = centre + limit * PIXELS_PER_METRE
            top, bottom = TRACK_Y - LIMIT_MARK_HALF_HEIGHT, TRACK_Y + LIMIT_MARK_HALF_HEIGHT
            draw.line([(column, top), (column, bottom)], fill=(0, 0, 0), width=3)
        cart_x = centre + x * PIXELS_PER_METRE
        draw.rectangle(
            [cart_x - CART_W / 2, CART_Y - CART_H / 2, cart_x + CART_W / 2, CART_Y + CART_H / 2],
            fill=CART_COLOR,
            outline=(0, 0, 0),
        )
        wheel_y = CART_Y + CART_H / 2
        for wheel_x in (cart_x - CART_W / 3, cart_x + CART_W / 3):
            draw.ellipse(
                [
                    wheel_x - WHEEL_RADIUS,
                    wheel_y - WHEEL_RADIUS,
                    wheel_x + WHEEL_RADIUS,
                    wheel_y + WHEEL_RADIUS,
                ],
                fill=WHEEL_COLOR,
                outline=(0, 0, 0),
            )
        pole = pole_length * PIXELS_PER_METRE
        # In these equations a positive theta leans the pole towards -x (pushing the cart right
        # increases theta), so the tip is drawn at x - L sin(theta), unlike EvoJAX's renderer.
        tip = (cart_x - pole * np.sin(theta), CART_Y - pole * np.cos(theta))
        draw.line([(cart_x, CART_Y), tip], fill=POLE_COLOR, width=POLE_WIDTH)
        draw.text((10, 10), f"t = {int(np.asarray(state.steps))}", fill=(0, 0, 0))
        return np.asarray(image, dtype=np.uint8)
