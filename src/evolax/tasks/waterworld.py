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

import dataclasses
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


FOOD, POISON, AGENT = 0, 1, 2
"""The kinds of object a sensor tells apart, in the order of their distance channels (after
the wall's)."""


@chex.dataclass(frozen=True)
class Targets:
    """The objects the sensors can see.

    Attributes:
        pos, vel: ``f32[targets, 2]``.
        valid: whether each is in the pool, ``bool[targets]``.
        kind: :data:`FOOD`, :data:`POISON` or :data:`AGENT`, ``i32[targets]``.
    """

    pos: Float[Array, "targets 2"]
    vel: Float[Array, "targets 2"]
    valid: Bool[Array, " targets"]
    kind: Int[Array, " targets"]


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


def target_distances(
    agent_pos: Float[Array, "2"], targets: Targets, radius: float, max_range: float
) -> tuple[Float[Array, "sensors targets"], Bool[Array, "sensors targets"]]:
    """Each ray's squared distance to each target, ``max_range**2`` where the ray misses it or
    the target is gone; and whether the ray passes within ``radius`` of the target (whatever
    its validity).

    EvoJAX's rule: the hit point is the target's centre moved along the ray's normal
    ``(sin a, -cos a)`` by its distance from the ray (onto the ray when the target lies
    to its left, mirrored away from it otherwise); the ray hits when that point, measured
    along the ray's longer axis, lies strictly inside the ray.
    """
    cos, sin = (jnp.asarray(f(SENSOR_ANGLES))[:, None] for f in (np.cos, np.sin))
    rel_x = (targets.pos[:, 0] - agent_pos[0])[None, :]  # [1, targets] against [sensors, 1]
    rel_y = (targets.pos[:, 1] - agent_pos[1])[None, :]
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
    return jnp.where(hit & targets.valid[None, :], squared, max_range**2), hit


def observe_targets(
    task: WaterWorld | MultiAgentWaterWorld,
    agent_pos: Float[Array, "2"],
    agent_vel: Float[Array, "2"],
    targets: Targets,
    ignore_at_zero: bool = False,
) -> Float[Array, " obs"]:
    """One agent's observation: per sensor the distances, over ``task.max_range``, to the wall
    and to a target of each kind (``task.max_range`` but on the channel of what the ray sees
    first, if anything), then the seen target's velocity; then the agent's own velocity.
    ``ignore_at_zero``: targets at distance 0 are not seen (an agent among the targets does
    not see itself)."""
    max_range = task.max_range
    ends = sensor_ends(agent_pos, max_range)
    wall, wall_hit = wall_distances(agent_pos, ends, max_range)
    squared, target_hit = target_distances(agent_pos, targets, task.radius, max_range)
    if ignore_at_zero:
        squared = jnp.where(squared == 0.0, max_range**2, squared)
    nearest = jnp.argmin(squared, axis=1)
    target = jnp.sqrt(jnp.min(squared, axis=1))
    sees = (wall >= target) & jnp.take_along_axis(target_hit, nearest[:, None], axis=1)[:, 0]
    sees_wall = (wall < target) & wall_hit
    kind = targets.kind[nearest]
    channels = jnp.stack(
        [jnp.where(sees_wall, wall, max_range)]
        + [
            jnp.where(sees & (kind == k), target, max_range)
            for k in range(distance_channels(task) - 1)
        ],
        axis=1,
    )
    velocity = jnp.where(sees[:, None], targets.vel[nearest], 0.0)
    sensors = jnp.concatenate([channels / max_range, velocity], axis=1)
    return jnp.concatenate([sensors.reshape(-1), agent_vel])


def move_agent(
    pos: Float[Array, "... 2"],
    vel: Float[Array, "... 2"],
    direction: Int[Array, "..."],
    task: WaterWorld | MultiAgentWaterWorld,
) -> tuple[Float[Array, "... 2"], Float[Array, "... 2"]]:
    """Add ``task.thrust`` to the velocity in ``direction`` (0 up, 1 down, 2 left, 3 right),
    multiply it by ``task.damping``, move; an agent that reaches a wall (1 px from the edge)
    stops there."""
    thrust = task.thrust
    push_x = jnp.where(direction == 3, thrust, 0.0) - jnp.where(direction == 2, thrust, 0.0)
    push_y = jnp.where(direction == 1, thrust, 0.0) - jnp.where(direction == 0, thrust, 0.0)
    vel = (vel + jnp.stack([push_x, push_y], axis=-1)) * task.damping
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


Observe = Callable[..., Float[Array, "*agents obs"]]
"""A task's observation of every agent, from the arrays of a :class:`WaterWorldState`:
``observe(agent_pos, agent_vel, item_pos, item_vel, item_food, item_valid)``."""


def observed(state: WaterWorldState, observe: Observe) -> WaterWorldState:
    """``state`` with ``obs`` set to ``observe``'s reading of its agents and items."""
    obs = observe(
        state.agent_pos,
        state.agent_vel,
        state.item_pos,
        state.item_vel,
        state.item_food,
        state.item_valid,
    )
    return dataclasses.replace(state, obs=obs)


def start_pool(
    task: WaterWorld | MultiAgentWaterWorld,
    observe: Observe,
    agent_pos: Float[Array, "*agents 2"],
    item_pos: Float[Array, "items 2"],
    item_keys: PRNGKey,
) -> WaterWorldState:
    """The first state: agents at rest at ``agent_pos``, every item in the pool at
    ``item_pos``, each food or poison and moving as drawn from its key (EvoJAX's draw)."""
    item_food, item_vel = jax.vmap(item_kind_and_velocity, in_axes=(0, None))(
        item_keys, task.item_speed
    )
    state = WaterWorldState(
        obs=jnp.zeros(()),  # observed below
        agent_pos=agent_pos,
        agent_vel=jnp.zeros_like(agent_pos),
        item_pos=item_pos,
        item_vel=item_vel,
        item_food=item_food,
        item_valid=jnp.ones(task.n_items, bool),
        poison_eaten=jnp.zeros(agent_pos.shape[:-1], jnp.int32),
        steps=jnp.zeros([], jnp.int32),
    )
    return observed(state, observe)


def advance_pool(
    task: WaterWorld | MultiAgentWaterWorld,
    state: WaterWorldState,
    direction: Int[Array, "*agents"],
    observe: Observe,
) -> tuple[WaterWorldState, Float[Array, "*agents"], Done]:
    """One step of a pool with one agent (no agent axis) or several (a leading agent axis):
    thrust every agent in its ``direction``, drift the items, and let each agent eat the items
    it touches among those still in the pool at the step's start (two agents touching one item
    both eat it). ``task`` gives the pool's ``radius``, ``thrust``, ``damping`` and
    ``max_steps``. Returns the next state (``observe`` gives its ``obs``), each agent's food
    minus poison, and whether ``max_steps`` is reached."""
    agent_pos, agent_vel = move_agent(state.agent_pos, state.agent_vel, direction, task)
    item_pos, item_vel = move_items(state.item_pos, state.item_vel)
    lead = (1,) * (agent_pos.ndim - 1)
    item_food = state.item_food.reshape(*lead, -1)
    eaten = touching(agent_pos, item_pos, 2 * task.radius) & state.item_valid.reshape(*lead, -1)
    food = jnp.sum(eaten & item_food, axis=-1)
    poison = jnp.sum(eaten & ~item_food, axis=-1)
    new_state = dataclasses.replace(
        state,
        agent_pos=agent_pos,
        agent_vel=agent_vel,
        item_pos=item_pos,
        item_vel=item_vel,
        item_valid=state.item_valid & ~jnp.any(eaten.reshape(-1, eaten.shape[-1]), axis=0),
        poison_eaten=state.poison_eaten + poison.astype(jnp.int32),
        steps=state.steps + 1,
    )
    reward = (food - poison).astype(jnp.float32)
    return observed(new_state, observe), reward, new_state.steps >= task.max_steps


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


def distance_channels(task: WaterWorld | MultiAgentWaterWorld) -> int:
    """The distances each sensor reports (the wall's, then one per kind of target): what its
    ``obs_shape`` holds besides each sensor's seen velocity and the agent's own."""
    return (task.obs_shape[0] - 2) // N_SENSORS - 2


def draw_pool(task: WaterWorld | MultiAgentWaterWorld, state: WaterWorldState) -> np.ndarray:
    """Draw the pool: items (green food, red poison), agents (yellow) and their sensor rays,
    each drawn as far as its reading."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (SCREEN_SIZE, SCREEN_SIZE), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    radius, max_range = float(task.radius), float(task.max_range)
    agent_pos = np.asarray(state.agent_pos).reshape(-1, 2)  # [agents, 2] for one agent too
    agent_obs = np.asarray(state.obs).reshape(len(agent_pos), -1)
    angles = np.asarray(SENSOR_ANGLES)
    for (x, y), obs in zip(agent_pos, agent_obs, strict=True):
        sensors = obs[:-2].reshape(N_SENSORS, -1)[:, : distance_channels(task)]
        reach = sensors.min(axis=1) * max_range
        for angle, length in zip(angles, reach, strict=True):
            end = (x + length * np.cos(angle), y + length * np.sin(angle))
            draw.line((x, y, *end), fill=(0, 0, 0), width=1)
    items = (np.asarray(state.item_pos), np.asarray(state.item_food), np.asarray(state.item_valid))
    for (x, y), food, valid in zip(*items, strict=True):
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
        items = Targets(
            pos=item_pos, vel=item_vel, valid=item_valid, kind=jnp.where(item_food, FOOD, POISON)
        )
        return observe_targets(self, agent_pos, agent_vel, items)

    def reset(self, key: PRNGKey) -> WaterWorldState:
        """Agent at rest and items placed uniformly ``2 * radius`` from the walls."""
        _, key = jax.random.split(key)  # EvoJAX keeps the first half for its steps
        keys = jax.random.split(key, 1 + self.n_items)
        margin = 2 * self.radius
        agent_pos = uniform_positions(keys[0], margin)
        item_pos = jax.vmap(uniform_positions, in_axes=(0, None))(keys[1:], margin)
        return start_pool(self, self.observe, agent_pos, item_pos, keys[1:])

    def step(
        self, state: WaterWorldState, action: Float[Array, "4"], key: PRNGKey
    ) -> tuple[WaterWorldState, Reward, Done]:
        """Sample a thrust direction, move the agent and the items, eat what it touches."""
        self.check_action(action)
        direction = jax.random.categorical(key, action)
        return advance_pool(self, state, direction, self.observe)

    def render(self, state: WaterWorldState) -> np.ndarray:
        """The pool, the agent (yellow) and its sensor rays, food (green) and poison (red)."""
        return draw_pool(self, state)
