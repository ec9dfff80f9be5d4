"""WaterWorld with many agents in one pool, as in the EvoJAX paper (Tang et al., 2022).

16 agents share a pool with 100 items. Each agent eats what it touches (two agents touching
one item in the same step both eat it) and is scored by its own catch; the rollout spawns
``n_agents`` members of the population into each pool (:class:`~evolax.tasks.MultiAgentTask`).
By default (EvoJAX's values, all fields of the task) agents start on a circle of radius 270
about the centre, items uniformly within radius 200, rays are 60 px long and bubbles have
radius 5. Each of the 30 sensors reports wall, food, poison and agent distances and the seen
object's velocity: ``30 * 6 + 2 = 182`` observations.

Rules and initial states follow EvoJAX's ``evojax.task.ma_waterworld`` except one correction:
EvoJAX looks up the type and velocity of the object a sensor sees in the item arrays even
when that object is another agent, so an agent shows up as the last item (food or poison,
with its velocity) and the agent channel never fires. Here an agent is seen as an agent, with
its own velocity.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from evolax.tasks.base import MultiAgentTask
from evolax.tasks.waterworld import (
    AGENT,
    DAMPING,
    FOOD,
    ITEM_SPEED,
    N_ACTIONS,
    N_SENSORS,
    POISON,
    SCREEN_SIZE,
    THRUST,
    Targets,
    WaterWorldState,
    advance_pool,
    check_pool,
    draw_pool,
    observe_targets,
    start_pool,
)
from evolax.types import Done, PRNGKey
from evolax.validation import check_in_interval, check_positive_int

AGENT_CIRCLE = 270.0
"""EvoJAX's distance of the agents' starting circle from the pool's centre (pixels): the
default ``agent_circle``."""
ITEM_DISC = 200.0
"""EvoJAX's radius of the disc the items start in (pixels): the default ``item_disc``."""


def _polar_position(key: PRNGKey, radius: Float[Array, ""] | float) -> Float[Array, "2"]:
    """``radius`` from the centre at an angle uniform in ``[0, 2 pi)`` (EvoJAX's draw)."""
    theta = jax.random.uniform(jax.random.split(key, 4)[1], (), minval=0.0, maxval=2 * jnp.pi)
    centre = SCREEN_SIZE // 2
    return jnp.stack([radius * jnp.cos(theta) + centre, radius * jnp.sin(theta) + centre])


def _item_position(key: PRNGKey, disc: Float[Array, ""] | float) -> Float[Array, "2"]:
    """Uniform in distance (up to ``disc``) and angle about the centre (EvoJAX's draw)."""
    radius = jax.random.uniform(jax.random.split(key, 4)[0], (), minval=0.0, maxval=disc)
    return _polar_position(key, radius)


class MultiAgentWaterWorld(MultiAgentTask):
    """WaterWorld with ``n_agents`` agents in one pool, each scored by its own catch.

    Observations and actions are per agent (``obs_shape`` ``(182,)``, ``action_shape``
    ``(4,)``: logits over thrust up, down, left, right, sampled like
    :class:`~evolax.tasks.WaterWorld`'s); the state's ``obs`` is ``f32[n_agents, 182]``,
    ``step`` takes ``f32[n_agents, 4]`` and returns ``f32[n_agents]`` rewards.

    ``n_agents``, ``n_items`` and ``max_steps`` set array shapes and are static; the other
    fields are ordinary fields, which can be traced (vmapped over), as
    :class:`~evolax.tasks.WaterWorld`'s.

    Args:
        n_agents: agents per pool, positive (EvoJAX: 16).
        n_items: items per pool, positive (EvoJAX: 100).
        max_steps: episode length, positive (EvoJAX's training script: 500).
        radius: radius of agents and items (pixels), in ``(0, 300)``.
        max_range: length of the sensor rays (pixels), in ``(0, 300)``.
        thrust: velocity an action adds each step, before damping (pixels per step), positive.
        damping: factor on an agent's velocity each step, in ``(0, 1]``.
        item_speed: each component of an item's initial velocity is uniform in
            ``[-item_speed, item_speed]`` (pixels per step), ``>= 0``.
        agent_circle: agents start this far from the pool's centre (pixels), in ``[0, 300)``.
        item_disc: items start uniformly in distance (up to ``item_disc``) and angle about the
            centre (pixels), in ``[0, 300)``.
    """

    n_agents: int = eqx.field(static=True, default=16)
    n_items: int = eqx.field(static=True, default=100)
    max_steps: int = eqx.field(static=True, default=500)
    radius: float = 5.0
    max_range: float = 60.0
    thrust: float = THRUST
    damping: float = DAMPING
    item_speed: float = ITEM_SPEED
    agent_circle: float = AGENT_CIRCLE
    item_disc: float = ITEM_DISC
    obs_shape: tuple[int, ...] = eqx.field(static=True, default=(N_SENSORS * 6 + 2,))
    action_shape: tuple[int, ...] = eqx.field(static=True, default=(N_ACTIONS,))

    def __check_init__(self):
        check_positive_int("n_agents", self.n_agents)
        check_pool(self)
        for name in ("agent_circle", "item_disc"):
            check_in_interval(name, getattr(self, name), 0, SCREEN_SIZE // 2, high_open=True)

    def _observe(self, agent_pos, agent_vel, item_pos, item_vel, item_food, item_valid):
        """Every agent's observation, ``f32[n_agents, 182]``: per sensor ``[wall, food, poison,
        agent]`` distances over ``max_range`` and the seen object's velocity, then the agent's
        own velocity. An agent does not see itself (objects at distance 0 are ignored)."""
        targets = Targets(  # the items, then the agents
            pos=jnp.concatenate([item_pos, agent_pos]),
            vel=jnp.concatenate([item_vel, agent_vel]),
            valid=jnp.concatenate([item_valid, jnp.ones(self.n_agents, bool)]),
            kind=jnp.concatenate(
                [jnp.where(item_food, FOOD, POISON), jnp.full(self.n_agents, AGENT)]
            ),
        )
        return jax.vmap(
            lambda pos, vel: observe_targets(self, pos, vel, targets, ignore_at_zero=True)
        )(agent_pos, agent_vel)

    def reset(self, key: PRNGKey) -> WaterWorldState:
        """Agents at rest on a circle about the centre, items scattered within it."""
        _, key = jax.random.split(key)  # EvoJAX keeps the first half for its steps
        keys = jax.random.split(key, self.n_agents + self.n_items)
        agent_pos = jax.vmap(_polar_position, in_axes=(0, None))(
            keys[: self.n_agents], self.agent_circle
        )
        item_keys = keys[self.n_agents :]
        item_pos = jax.vmap(_item_position, in_axes=(0, None))(item_keys, self.item_disc)
        return start_pool(self, self._observe, agent_pos, item_pos, item_keys)

    def step(
        self, state: WaterWorldState, action: Float[Array, "agents 4"], key: PRNGKey
    ) -> tuple[WaterWorldState, Float[Array, " agents"], Done]:
        """Every agent samples a thrust; agents and items move; each agent eats what it
        touches (items still in the pool at the step's start)."""
        self.check_actions(action)
        direction = jax.random.categorical(key, action, axis=-1)
        return advance_pool(self, state, direction, self._observe)

    def render(self, state: WaterWorldState) -> np.ndarray:
        """The pool, every agent (yellow) with its sensor rays, food (green), poison (red)."""
        return draw_pool(self, state)
