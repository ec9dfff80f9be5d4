"""WaterWorld (Karpathy's REINFORCEjs demo) as in the EvoJAX paper (Tang et al., 2022).

An agent in a 600 x 600 pool steers with four thrust actions among 50 drifting items, half
of them food (+1 when touched) and half poison (-1). Eaten items disappear for the rest of
the episode. The agent sees the pool through 30 range sensors spread evenly around it; each
reports the distance to the nearest wall, food or poison along its ray (whichever is closest;
the other channels read the full range) and that item's velocity, and the agent also sees its
own velocity: ``30 * 5 + 2 = 152`` observations.

The rules, the sensor geometry and the initial-state distribution follow EvoJAX's
``evojax.task.waterworld`` (its tests step both side by side), including two of its details:
the sensors are ``2 * 3.14 / 30`` radians apart, and a ray's hit on an item is measured at the
item's centre offset by its distance from the ray. ``reset`` draws the same initial state as
EvoJAX's for the same key.

The ray geometry here is shared with :class:`~evolax.tasks.MultiAgentWaterWorld`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from evolax.tasks.base import Task
from evolax.types import Done, PRNGKey, Reward
from evolax.validation import (
    check_in_interval,
    check_non_negative,
    check_positive,
    check_positive_int,
)

if TYPE_CHECKING:
    from evolax.tasks.multi_agent_waterworld import MultiAgentWaterWorld

SCREEN_SIZE = 600
"""Width and height of the pool (pixels)."""
N_SENSORS = 30
SENSOR_ANGLES = np.arange(N_SENSORS, dtype=np.float32) * np.float32(2 * 3.14 / N_SENSORS)
"""The sensors' directions (radians; EvoJAX's spacing, from 3.14 rather than pi)."""
N_ACTIONS = 4
"""Thrust up, down, left, right (image coordinates: up is -y)."""
THRUST = 1.0
"""EvoJAX's velocity added per step by a thrust (px/step): the default ``thrust``."""
DAMPING = 0.95
"""EvoJAX's factor on the agent's velocity each step: the default ``damping``."""
ITEM_SPEED = 2.5
"""EvoJAX's bound on each initial velocity component of an item (px/step): the default
``item_speed``."""

_WALLS = np.array(  # the pool's four sides as segments (x1, y1, x2, y2)
    [
        [0, 0, 0, SCREEN_SIZE],
        [0, SCREEN_SIZE, SCREEN_SIZE, SCREEN_SIZE],
        [SCREEN_SIZE, SCREEN_SIZE, SCREEN_SIZE, 0],
        [SCREEN_SIZE, 0, 0, 0],
    ],
    np.float32,
)


@chex.dataclass(frozen=True)
class WaterWorldState:
    """A WaterWorld state. For :class:`~evolax.tasks.MultiAgentWaterWorld`, ``obs``, the agent
    arrays and ``poison_eaten`` have a leading ``agents`` axis.

    Attributes:
        obs: the agent's observation, ``f32[152]`` (``f32[agents, 182]``).
        agent_pos, agent_vel: ``f32[2]`` (x, y).
        item_pos, item_vel: ``f32[n_items, 2]``.
        item_food: whether each item is food (else poison), ``bool[n_items]``.
        item_valid: whether each item is still in the pool (not eaten), ``bool[n_items]``.
        poison_eaten: poison items the agent has touched, ``i32[]``.
        steps: steps taken in this episode, ``i32[]``.
    """

    obs: Float[Array, "..."]
    agent_pos: Float[Array, "... 2"]
    agent_vel: Float[Array, "... 2"]
    item_pos: Float[Array, "items 2"]
    item_vel: Float[Array, "items 2"]
    item_food: Bool[Array, " items"]
    item_valid: Bool[Array, " items"]
    poison_eaten: Int[Array, "..."]
    steps: Int[Array, ""]


def sensor_ends(agent_pos: Float[Array, "2"], max_range: float) -> Float[Array, "sensors 2"]:
    """The far end of each sensor's ray from ``agent_pos``."""
    return jnp.stack(
        [
            agent_pos[0] + max_range * jnp.cos(SENSOR_ANGLES),
            agent_pos[1] + max_range * jnp.sin(SENSOR_ANGLES),
        ],
        axis=-1,
    )


def wall_distances(
    agent_pos: Float[Array, "2"], ends: Float[Array, "sensors 2"], max_range: float
) -> tuple[Float[Array, " sensors"], Bool[Array, " sensors"]]:
    """Each ray's distance to the nearest wall it crosses, and whether the wall found was hit.

    Segment-segment intersection with both parameters strictly inside ``(0, 1)``; a ray that
    crosses no wall reads ``max_range``.
    """
    x1, y1 = agent_pos[0], agent_pos[1]
    x2, y2 = ends[:, 0:1], ends[:, 1:2]  # [sensors, 1] against the walls' [4]
    x3, y3, x4, y4 = (jnp.asarray(_WALLS[None, :, i]) for i in range(4))
    denominator = (y4 - y3) * (x2 - x1) - (x4 - x3) * (y2 - y1)
    parallel = jnp.isclose(denominator, 0.0)
    ua = jnp.where(parallel, 0.0, ((x4 - x3) * (y1 - y3) - (y4 - y3) * (x1 - x3)) / denominator)
    ub = jnp.where(parallel, 0.0, ((x2 - x1) * (y1 - y3) - (y2 - y1) * (x1 - x3)) / denominator)
    hit = (ua > 0.0) & (ua < 1.0) & (ub > 0.0) & (ub < 1.0)
    hit_x = jnp.where(hit, x1 + ua * (x2 - x1), SCREEN_SIZE)
    hit_y = jnp.where(hit, y1 + ua * (y2 - y1), SCREEN_SIZE)
    distance = jnp.where(hit, jnp.sqrt(jnp.square(hit_y - y1) + jnp.square(hit_x - x1)), max_range)
    nearest = jnp.argmin(distance, axis=1)
    return jnp.min(distance, axis=1), jnp.take_along_axis(hit, nearest[:, None], axis=1)[:, 0]


def item_distances(
    agent_pos: Float[Array, "2"],
    item_pos: Float[Array, "items 2"],
    item_valid: Bool[Array, " items"],
    radius: float,
    max_range: float,
) -> tuple[Float[Array, "sensors items"], Bool[Array, "sensors items"]]:
    """Each ray's squared distance to each item, ``max_range**2`` where the ray misses it or
    the item is gone; and whether the ray passes within ``radius`` of the item (whatever its
    validity).

    EvoJAX's rule: the hit point is the item's centre moved along the ray's normal
    ``(sin a, -cos a)`` by the item's distance from the ray (onto the ray when the item lies
    to its left, mirrored away from it otherwise); the ray hits when that point, measured
    along the ray's longer axis, lies strictly inside the ray.
    """
    cos, sin = (jnp.asarray(f(SENSOR_ANGLES))[:, None] for f in (np.cos, np.sin))
    rel_x = (item_pos[:, 0] - agent_pos[0])[None, :]  # [1, items] against the sensors' [s, 1]
    rel_y = (item_pos[:, 1] - agent_pos[1])[None, :]
    offset = jnp.abs(rel_x * sin - rel_y * cos)
    hit_x = rel_x + sin * offset  # the hit point relative to the agent
    hit_y = rel_y - cos * offset
    along = jnp.where(
        np.abs(np.cos(SENSOR_ANGLES))[:, None] > np.abs(np.sin(SENSOR_ANGLES))[:, None],
        hit_x / (max_range * cos),
        hit_y / (max_range * sin),
    )
    hit = (offset <= radius) & (along > 0.0) & (along < 1.0)
    squared = jnp.square(hit_x) + jnp.square(hit_y)
    return jnp.where(hit & item_valid[None, :], squared, max_range**2), hit


def move_agent(
    pos: Float[Array, "... 2"],
    vel: Float[Array, "... 2"],
    direction: Int[Array, "..."],
    thrust: float,
    damping: float,
) -> tuple[Float[Array, "... 2"], Float[Array, "... 2"]]:
    """Add ``thrust`` to the velocity in ``direction`` (0 up, 1 down, 2 left, 3 right),
    multiply it by ``damping``, move; an agent that reaches a wall (1 px from the edge) stops
    there."""
    push_x = jnp.where(direction == 3, thrust, 0.0) - jnp.where(direction == 2, thrust, 0.0)
    push_y = jnp.where(direction == 1, thrust, 0.0) - jnp.where(direction == 0, thrust, 0.0)
    vel = (vel + jnp.stack([push_x, push_y], axis=-1)) * damping
    pos = pos + vel
    outside = (pos < 1.0) | (pos > SCREEN_SIZE - 1.0)
    blocked = jnp.any(outside, axis=-1, keepdims=True)
    return jnp.clip(pos, 1.0, SCREEN_SIZE - 1.0), jnp.where(blocked, 0.0, vel)


def move_items(
    pos: Float[Array, "items 2"], vel: Float[Array, "items 2"]
) -> tuple[Float[Array, "items 2"], Float[Array, "items 2"]]:
    """Drift; an item that reaches a wall bounces off it."""
    pos = pos + vel
    vel = jnp.where((pos < 1.0) | (pos > SCREEN_SIZE - 1.0), -vel, vel)
    return jnp.clip(pos, 1.0, SCREEN_SIZE - 1.0), vel


def touching(
    agent_pos: Float[Array, "*agents 2"], item_pos: Float[Array, "items 2"], min_dist: float
) -> Bool[Array, "*agents items"]:
    """Items whose centre is closer than ``min_dist`` to each agent's."""
    lead = (1,) * (agent_pos.ndim - 1)
    offset = agent_pos[..., None, :] - item_pos.reshape(*lead, *item_pos.shape)
    distance = jnp.sqrt(jnp.square(offset[..., 0]) + jnp.square(offset[..., 1]))
    return distance < min_dist


def advance_pool(
    task: WaterWorld | MultiAgentWaterWorld,
    state: WaterWorldState,
    direction: Int[Array, "*agents"],
    observe: Callable[..., Float[Array, "*agents obs"]],
) -> tuple[WaterWorldState, Float[Array, "*agents"], Done]:
    """One step of a pool with one agent (no agent axis) or several (a leading agent axis):
    thrust every agent in its ``direction``, drift the items, and let each agent eat the items
    it touches among those still in the pool at the step's start (two agents touching one item
    both eat it). ``task`` gives the pool's ``radius``, ``thrust``, ``damping`` and
    ``max_steps``. Returns the next state (``observe`` gives its ``obs``), each agent's food
    minus poison, and whether ``max_steps`` is reached."""
    agent_pos, agent_vel = move_agent(
        state.agent_pos, state.agent_vel, direction, task.thrust, task.damping
    )
    item_pos, item_vel = move_items(state.item_pos, state.item_vel)
    lead = (1,) * (agent_pos.ndim - 1)
    item_food = state.item_food.reshape(*lead, -1)
    eaten = touching(agent_pos, item_pos, 2 * task.radius) & state.item_valid.reshape(*lead, -1)
    food = jnp.sum(eaten & item_food, axis=-1)
    poison = jnp.sum(eaten & ~item_food, axis=-1)
    item_valid = state.item_valid & ~jnp.any(eaten.reshape(-1, eaten.shape[-1]), axis=0)
    steps = state.steps + 1
    new_state = WaterWorldState(
        obs=observe(agent_pos, agent_vel, item_pos, item_vel, state.item_food, item_valid),
        agent_pos=agent_pos,
        agent_vel=agent_vel,
        item_pos=item_pos,
        item_vel=item_vel,
        item_food=state.item_food,
        item_valid=item_valid,
        poison_eaten=state.poison_eaten + poison.astype(jnp.int32),
        steps=steps,
    )
    return new_state, (food - poison).astype(jnp.float32), steps >= task.max_steps


def uniform_positions(key: PRNGKey, margin: float) -> Float[Array, "2"]:
    """A position uniform in the pool less ``margin`` on every side (EvoJAX's draw)."""
    kx, ky, _, _ = jax.random.split(key, 4)
    low, high = margin, SCREEN_SIZE - margin
    return jnp.stack(
        [
            jax.random.uniform(kx, (), minval=low, maxval=high),
            jax.random.uniform(ky, (), minval=low, maxval=high),
        ]
    )


def item_kind_and_velocity(
    key: PRNGKey, item_speed: float
) -> tuple[Bool[Array, ""], Float[Array, "2"]]:
    """Food with probability 1/2, and a velocity uniform in ``[-item_speed, item_speed]^2``
    (EvoJAX's draw)."""
    _, _, k_vel, k_kind = jax.random.split(key, 4)
    food = jax.random.uniform(k_kind) > 0.5
    return food, jax.random.uniform(k_vel, (2,), minval=-item_speed, maxval=item_speed)


def check_pool(task: WaterWorld | MultiAgentWaterWorld) -> None:
    """Validate the fields a WaterWorld task shares with the multi-agent one (a ``ValueError``
    naming the field). Traced values (a field vmapped over) are not checked."""
    check_positive_int("n_items", task.n_items)
    check_positive_int("max_steps", task.max_steps)
    for name in ("radius", "max_range"):
        check_in_interval(
            name, getattr(task, name), 0, SCREEN_SIZE // 2, low_open=True, high_open=True
        )
    check_positive("thrust", task.thrust)
    check_in_interval("damping", task.damping, 0, 1, low_open=True)
    check_non_negative("item_speed", task.item_speed)


def draw_pool(
    agent_pos: np.ndarray,
    agent_obs: np.ndarray,
    item_pos: np.ndarray,
    item_food: np.ndarray,
    item_valid: np.ndarray,
    radius: float,
    max_range: float,
    n_channels: int,
) -> np.ndarray:
    """Draw the pool: items (green food, red poison), agents (yellow) and their sensor rays,
    each drawn as far as its reading. ``agent_pos`` is ``[agents, 2]``, ``agent_obs``
    ``[agents, obs]`` whose first ``n_channels`` per sensor are normalised distances."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (SCREEN_SIZE, SCREEN_SIZE), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    angles = np.asarray(SENSOR_ANGLES)
    for (x, y), obs in zip(agent_pos, agent_obs, strict=True):
        sensors = obs[:-2].reshape(N_SENSORS, -1)[:, :n_channels]
        reach = sensors.min(axis=1) * max_range
        for angle, length in zip(angles, reach, strict=True):
            end = (x + length * np.cos(angle), y + length * np.sin(angle))
            draw.line((x, y, *end), fill=(0, 0, 0), width=1)
    for (x, y), food, valid in zip(item_pos, item_food, item_valid, strict=True):
        if valid:
            box = (x - radius, y - radius, x + radius, y + radius)
            draw.ellipse(box, fill=(0, 200, 0) if food else (230, 0, 0), outline=(0, 0, 0))
    for x, y in agent_pos:
        box = (x - radius, y - radius, x + radius, y + radius)
        draw.ellipse(box, fill=(255, 220, 0), outline=(0, 0, 0))
    return np.asarray(image)


class WaterWorld(Task):
    """Karpathy's WaterWorld for one agent, as in the EvoJAX paper.

    Actions are four logits (unnormalised log-probabilities) over thrust up, down, left and
    right; each step the task samples one direction from ``softmax(action)`` with the step's
    key, as EvoJAX samples from its policy's softmax output. An MLP with a linear output (or
    ``log_softmax``) is EvoJAX's policy.

    ``n_items`` and ``max_steps`` set array shapes and are static; the other fields are the
    pool's parameters, ordinary fields kept apart from the state as gymnax keeps an
    environment's parameters: set them at construction, or ``vmap`` over them by building the
    task inside the vmapped function from traced values. Python floats (the defaults are
    EvoJAX's values) compile into the program as constants. Each is checked at construction
    when it is a concrete number.

    Args:
        n_items: items in the pool (each food or poison with probability 1/2), positive.
        max_steps: episode length, positive. EvoJAX's class defaults to 1000; its training
            script and benchmark use 500.
        radius: radius of the agent and of the items (pixels), in ``(0, 300)``; two touch
            below ``2 * radius``, and items start at least ``2 * radius`` from the walls.
        max_range: length of the sensor rays (pixels), in ``(0, 300)``.
        thrust: velocity an action adds each step, before damping (pixels per step), positive.
        damping: factor on the agent's velocity each step, in ``(0, 1]``.
        item_speed: each component of an item's initial velocity is uniform in
            ``[-item_speed, item_speed]`` (pixels per step), ``>= 0``.
    """

    n_items: int = eqx.field(static=True, default=50)
    max_steps: int = eqx.field(static=True, default=1000)
    radius: float = 10.0
    max_range: float = 120.0
    thrust: float = THRUST
    damping: float = DAMPING
    item_speed: float = ITEM_SPEED
    obs_shape: tuple[int, ...] = eqx.field(static=True, default=(N_SENSORS * 5 + 2,))
    action_shape: tuple[int, ...] = eqx.field(static=True, default=(N_ACTIONS,))

    def __check_init__(self):
        check_pool(self)

    def observe(
        self,
        agent_pos: Float[Array, "2"],
        agent_vel: Float[Array, "2"],
        item_pos: Float[Array, "items 2"],
        item_vel: Float[Array, "items 2"],
        item_food: Bool[Array, " items"],
        item_valid: Bool[Array, " items"],
    ) -> Float[Array, "152"]:
        """The agent's observation: per sensor ``[wall, food, poison]`` distances divided by
        ``max_range`` and the seen item's velocity, then the agent's velocity."""
        ends = sensor_ends(agent_pos, self.max_range)
        wall, wall_hit = wall_distances(agent_pos, ends, self.max_range)
        squared, item_hit = item_distances(
            agent_pos, item_pos, item_valid, self.radius, self.max_range
        )
        nearest = jnp.argmin(squared, axis=1)
        item = jnp.sqrt(jnp.min(squared, axis=1))
        sees_item = (wall >= item) & jnp.take_along_axis(item_hit, nearest[:, None], axis=1)[:, 0]
        sees_wall = (wall < item) & wall_hit
        food = item_food[nearest]
        channels = jnp.stack(
            [
                jnp.where(sees_wall, wall, self.max_range),
                jnp.where(sees_item & food, item, self.max_range),
                jnp.where(sees_item & ~food, item, self.max_range),
            ],
            axis=1,
        )
        velocity = jnp.where(sees_item[:, None], item_vel[nearest], 0.0)
        sensors = jnp.concatenate([channels / self.max_range, velocity], axis=1)
        return jnp.concatenate([sensors.reshape(-1), agent_vel])

    def reset(self, key: PRNGKey) -> WaterWorldState:
        """Agent at rest and items placed uniformly ``2 * radius`` from the walls."""
        _, key = jax.random.split(key)  # EvoJAX keeps the first half for its steps
        keys = jax.random.split(key, 1 + self.n_items)
        margin = 2 * self.radius
        agent_pos = uniform_positions(keys[0], margin)
        item_pos = jax.vmap(uniform_positions, in_axes=(0, None))(keys[1:], margin)
        item_food, item_vel = jax.vmap(item_kind_and_velocity, in_axes=(0, None))(
            keys[1:], self.item_speed
        )
        agent_vel = jnp.zeros(2)
        item_valid = jnp.ones(self.n_items, bool)
        return WaterWorldState(
            obs=self.observe(agent_pos, agent_vel, item_pos, item_vel, item_food, item_valid),
            agent_pos=agent_pos,
            agent_vel=agent_vel,
            item_pos=item_pos,
            item_vel=item_vel,
            item_food=item_food,
            item_valid=item_valid,
            poison_eaten=jnp.zeros([], jnp.int32),
            steps=jnp.zeros([], jnp.int32),
        )

    def step(
        self, state: WaterWorldState, action: Float[Array, "4"], key: PRNGKey
    ) -> tuple[WaterWorldState, Reward, Done]:
        """Sample a thrust direction, move the agent and the items, eat what it touches."""
        self.check_action(action)
        direction = jax.random.categorical(key, action)
        return advance_pool(self, state, direction, self.observe)

    def render(self, state: WaterWorldState) -> np.ndarray:
        """The pool, the agent (yellow) and its sensor rays, food (green) and poison (red)."""
        return draw_pool(
            np.asarray(state.agent_pos)[None],
            np.asarray(state.obs)[None],
            np.asarray(state.item_pos),
            np.asarray(state.item_food),
            np.asarray(state.item_valid),
            float(self.radius),
            float(self.max_range),
            n_channels=3,
        )
