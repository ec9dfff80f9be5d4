"""The planar robotic arm of the quality-diversity literature (Cully et al. 2015;
Vassiliades et al. 2018; QDax's ``arm``): joint angles in, the end effector's position as the
descriptor."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from evolax.drawing import draw_text
from evolax.tasks.base import ConstructedTask
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
