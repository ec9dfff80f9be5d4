"""The planar robotic arm of the quality-diversity literature (Cully et al. 2015;
Vassiliades et al. 2018; QDax's ``arm``): joint angles in, the end effector's position as the
descriptor; and its multi-task form (Mouret & Maguire 2020), a set of arms of different
lengths and joint ranges reaching for one target."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from evolax.drawing import draw_text
from evolax.qd import cvt_centroids
from evolax.tasks.base import ConstructedTask
from evolax.tasks.distributions import ParamSet
from evolax.types import Done, PRNGKey, Reward
from evolax.validation import check_positive_int


@chex.dataclass(frozen=True)
class ArmState:
    """The arm after (or before) its one move.

    Attributes:
        obs: ``f32[1]``, always zero (the task observes nothing).
        angles: the joint angles in radians, ``[n_joints]`` (zeros before the move).
    """

    obs: Float[Array, "1"]
    angles: Float[Array, " joints"]


def end_effector(angles: Float[Array, "... joints"]) -> Float[Array, "... 2"]:
    """The tip of an arm of ``n`` links of length ``1 / n`` based at the origin, each joint
    angle relative to the previous link: ``sum_i (cos, sin)(theta_1 + ... + theta_i) / n``."""
    absolute = jnp.cumsum(angles, axis=-1)
    n = angles.shape[-1]
    return jnp.stack([jnp.cos(absolute).sum(-1), jnp.sin(absolute).sum(-1)], axis=-1) / n


class Arm(ConstructedTask):
    """A one-step task: the action ``[n_joints]`` in ``[0, 1]`` (clipped) sets the joint
    angles ``2 pi (a - 1/2)``. The reward is minus the standard deviation of the angles (the
    smoothest posture is the fittest; 0 at best); the descriptor is the end effector's
    position mapped from the reachable disc ``[-1, 1]^2`` to ``[0, 1]^2``. With the
    :class:`~evolax.policies.Direct` policy the genome is the posture itself, as in the
    papers.

    Args:
        n_joints: the arm's joints (and links), positive; 8 in QDax's example.
    """

    n_joints: int = eqx.field(static=True)

    descriptor_bounds = ((0.0, 0.0), (1.0, 1.0))

    def __init__(self, n_joints: int = 8):
        check_positive_int("n_joints", n_joints)
        self.n_joints = n_joints
        self.max_steps = 1
        self.obs_shape = (1,)
        self.action_shape = (n_joints,)

    def angles(self, action: Float[Array, " joints"]) -> Float[Array, " joints"]:
        """The joint angles an action sets, in ``[-pi, pi]``."""
        return 2.0 * jnp.pi * (jnp.clip(action, 0.0, 1.0) - 0.5)

    def reset(self, key: PRNGKey) -> ArmState:
        """The arm before its move; the key is not used."""
        del key
        return ArmState(obs=jnp.zeros(1, jnp.float32), angles=jnp.zeros(self.n_joints))

    def step(
        self, state: ArmState, action: Float[Array, " joints"], key: PRNGKey
    ) -> tuple[ArmState, Reward, Done]:
        """Set the angles; reward ``-std(angles)``; always done."""
        del key
        self.check_action(action)
        angles = self.angles(action)
        return state.replace(angles=angles), -jnp.std(angles), jnp.ones([], bool)  # type: ignore[attr-defined]

    def descriptor(self, state: ArmState) -> Float[Array, "2"]:
        """The end effector's position, ``[0, 1]^2`` (``(1/2, 1/2)`` is the base)."""
        return 0.5 * end_effector(state.angles) + 0.5

    def render(self, state: ArmState) -> np.ndarray:
        """The arm from above, as ``uint8[256, 256, 3]``: links, joints and tip."""
        from PIL import Image, ImageDraw

        angles = np.asarray(state.angles, dtype=np.float64)
        if angles.shape != (self.n_joints,):
            raise ValueError(
                f"render draws one state: angles must have shape ({self.n_joints},), got "
                f"{angles.shape}"
            )
        size, scale = 256, 120.0
        absolute = np.cumsum(angles)
        steps = np.stack([np.cos(absolute), np.sin(absolute)], axis=1) / self.n_joints
        points = np.concatenate([np.zeros((1, 2)), np.cumsum(steps, axis=0)])
        pixels = [(size / 2 + scale * x, size / 2 - scale * y) for x, y in points]
        image = Image.new("RGB", (size, size), "white")
        draw = ImageDraw.Draw(image)
        draw.ellipse((size / 2 - scale,) * 2 + (size / 2 + scale,) * 2, outline=(210, 210, 210))
        draw.line(pixels, fill=(40, 40, 40), width=3)
        for x, y in pixels[:-1]:
            draw.ellipse((x - 3, y - 3, x + 3, y + 3), fill=(70, 110, 200))
        x, y = pixels[-1]
        draw.ellipse((x - 5, y - 5, x + 5, y + 5), fill=(220, 60, 40))
        draw_text(draw, (6, 6), f"std {np.std(angles):.3f}")
        return np.asarray(image)


@chex.dataclass(frozen=True)
class ReachParams:
    """One task of :class:`MultiTaskArm`.

    Attributes:
        angular_range: in ``[0, 1]``: each joint turns within ``+-pi angular_range /
            n_joints``.
        length: the arm's total length (each link ``length / n_joints``).
    """

    angular_range: Float[Array, ""] | float
    length: Float[Array, ""] | float


@chex.dataclass(frozen=True)
class ReachState:
    """The arm after (or before) its one move.

    Attributes:
        obs: ``f32[1]``, always zero.
        angles: the joint angles in radians, ``[n_joints]``.
        params: the episode's task, :class:`ReachParams`.
    """

    obs: Float[Array, "1"]
    angles: Float[Array, " joints"]
    params: ReachParams


class MultiTaskArm(ConstructedTask):
    """The multi-task arm of Mouret & Maguire (2020), as the authors' ``pymap_elites`` example
    (``multitask_arm.py``) writes it: a one-step task whose action ``[n_joints]`` in ``[0,
    1]`` (clipped) sets the joint angles ``2 pi (a - 1/2) angular_range / n_joints`` of an arm
    of ``n_joints`` links of length ``length / n_joints``; the reward is minus the distance
    from its tip to the target ``(1/2, 1/2)``. A task is a pair ``(angular_range, length)``
    (:class:`ReachParams`); with ``n_tasks`` the task set is ``n_tasks`` centroids of a
    centroidal Voronoi tessellation of ``[0, 1]^2`` (:func:`~evolax.qd.cvt_centroids`), a
    :class:`~evolax.tasks.ParamSet` in ``distribution`` that each episode draws from (and
    that :class:`~evolax.algorithms.MTMAPElites` assigns per individual).

    Args:
        n_joints: the arm's joints (and links), positive; 10 in the paper.
        n_tasks: the size of the task set, or ``None`` for the single task ``params``.
        task_seed: the seed of the tessellation's points.
        params: the task played without a task set (default ``(1, 1)``).
    """

    n_joints: int = eqx.field(static=True)
    params: ReachParams
    distribution: ParamSet | None

    def __init__(
        self,
        n_joints: int = 10,
        n_tasks: int | None = None,
        task_seed: int = 0,
        params: ReachParams | None = None,
    ):
        check_positive_int("n_joints", n_joints)
        self.n_joints = n_joints
        self.max_steps = 1
        self.obs_shape = (1,)
        self.action_shape = (n_joints,)
        self.params = ReachParams(angular_range=1.0, length=1.0) if params is None else params
        self.distribution = None
        if n_tasks is not None:
            check_positive_int("n_tasks", n_tasks)
            tasks = cvt_centroids(jax.random.key(task_seed), n_tasks, (0.0, 0.0), (1.0, 1.0))
            members = ReachParams(angular_range=tasks[:, 0], length=tasks[:, 1])
            self.distribution = ParamSet(members)

    def reset(self, key: PRNGKey) -> ReachState:
        """The arm before its move, on a task drawn from the task set (if any)."""
        params = self.params if self.distribution is None else self.distribution.sample(key, None)
        return ReachState(
            obs=jnp.zeros(1, jnp.float32), angles=jnp.zeros(self.n_joints), params=params
        )

    def tip(self, action: Float[Array, " joints"], params: ReachParams) -> Float[Array, "2"]:
        """Where the tip of the arm goes for ``action`` on task ``params``."""
        angles = 2.0 * jnp.pi * (jnp.clip(action, 0.0, 1.0) - 0.5) * params.angular_range
        angles = angles / self.n_joints
        return end_effector(angles) * params.length

    def step(
        self, state: ReachState, action: Float[Array, " joints"], key: PRNGKey
    ) -> tuple[ReachState, Reward, Done]:
        """Move; reward minus the tip's distance to ``(1/2, 1/2)``; always done."""
        del key
        self.check_action(action)
        tip = self.tip(action, state.params)
        reward = -jnp.sqrt(jnp.sum((tip - 0.5) ** 2))
        angles = 2.0 * jnp.pi * (jnp.clip(action, 0.0, 1.0) - 0.5) * state.params.angular_range
        return state.replace(angles=angles / self.n_joints), reward, jnp.ones([], bool)  # type: ignore[attr-defined]
