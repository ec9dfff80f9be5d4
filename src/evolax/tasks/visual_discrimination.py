"""The boxes visual discrimination task of HyperNEAT (Stanley, D'Ambrosio & Gauci, 2009,
"A Hypercube-Based Encoding for Evolving Large-Scale Neural Networks", section 5)."""

from __future__ import annotations

import functools

import chex
import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.tasks.base import Task
from evolax.types import PRNGKey

RESOLUTION = 11
"""The visual field's and the target field's side, in pixels."""
SMALL_POSITIONS = (1, 3, 5, 7, 9)
"""The small object's rows and columns: 25 positions spread evenly over the field."""
OFFSET = 5
"""How far the large object's centre is from the small object: right, down and diagonally."""
SPACING = 2.0 / (RESOLUTION - 1)
"""The distance between neighbouring pixels when the field spans ``[-1, 1]``."""
N_TRIALS = 3 * len(SMALL_POSITIONS) ** 2
"""75: the large object right of, below and diagonal to each of the small one's positions."""


@functools.cache
def trials() -> tuple[np.ndarray, np.ndarray]:
    """The 75 trials: visual fields ``f32[75, 11, 11]`` (1 on the objects, 0 elsewhere) and
    the large object's centre in each, ``i32[75, 2]`` (row, column); built once, read-only.

    The small object (one pixel) takes each of the 25 positions of :data:`SMALL_POSITIONS`;
    for each, the large one (3 x 3 pixels) is centred 5 pixels to its right, below it, and
    diagonally (right and below), wrapping around the field's edge and then moved the least
    that puts all of it in view."""
    fields, targets = [], []
    for row in SMALL_POSITIONS:
        for col in SMALL_POSITIONS:
            for d_row, d_col in ((0, OFFSET), (OFFSET, 0), (OFFSET, OFFSET)):
                centre = np.clip(
                    (np.array([row + d_row, col + d_col])) % RESOLUTION, 1, RESOLUTION - 2
                )
                field = np.zeros((RESOLUTION, RESOLUTION), np.float32)
                field[centre[0] - 1 : centre[0] + 2, centre[1] - 1 : centre[1] + 2] = 1.0
                field[row, col] = 1.0
                fields.append(field)
                targets.append(centre)
    stacked = np.stack(fields), np.stack(targets).astype(np.int32)
    for array in stacked:
        array.setflags(write=False)
    return stacked


def squared_distance(action: Float[Array, " 121"], target: Int[Array, " 2"]) -> Float[Array, ""]:
    """The squared distance, with the field spanning ``[-1, 1]``, from the pixel of the
    highest ``action`` (the target field in row-major order; the first, on ties) to
    ``target`` (row, column)."""
    chosen = jnp.stack(jnp.unravel_index(jnp.argmax(action), (RESOLUTION, RESOLUTION)))
    return SPACING**2 * jnp.sum((chosen - target).astype(jnp.float32) ** 2)


@chex.dataclass(frozen=True)
class VisualDiscriminationState:
    """Which of the 75 trials is shown (``t``) and its visual field (``obs``, ``f32[11, 11]``)."""

    t: Int[Array, ""]
    obs: Float[Array, "11 11"]


class VisualDiscrimination(Task):
    """Find the larger of two objects: the 75 trials of :func:`trials` shown one per step.
    The action is the target field (``[121]``, the ``[11, 11]`` pixels in row-major order);
    its highest pixel is the choice, and the step's reward is minus the squared distance from
    it to the large object's centre (the field spans ``[-1, 1]``, so neighbouring pixels are
    0.2 apart). An episode's return is
    minus the sum of squared distances over the 75 trials, the paper's fitness up to its
    offset: 0 is perfect. Deterministic: one episode per individual suffices.

    HyperNEAT's substrate for it is two sheets of 11 x 11 nodes
    (``HyperNEAT(substrate="grid", hidden_sizes=())``): the CPPN sees both nodes' positions,
    so it can paint one connection pattern that works wherever the objects are."""

    max_steps: int = eqx.field(static=True, default=75)
    obs_shape: tuple[int, ...] = eqx.field(static=True, default=(RESOLUTION, RESOLUTION))
    action_shape: tuple[int, ...] = eqx.field(static=True, default=(RESOLUTION * RESOLUTION,))

    def __check_init__(self):
        if self.max_steps != N_TRIALS:
            raise ValueError(
                f"max_steps must be {N_TRIALS} (one step per trial), got {self.max_steps}"
            )

    def reset(self, key: PRNGKey) -> VisualDiscriminationState:
        del key
        fields, _ = trials()
        return VisualDiscriminationState(t=jnp.zeros([], jnp.int32), obs=jnp.asarray(fields[0]))

    def step(self, state: VisualDiscriminationState, action: Float[Array, " 121"], key: PRNGKey):
        del key
        self.check_action(action)
        fields, targets = (jnp.asarray(a) for a in trials())
        reward = -squared_distance(action, targets[state.t])
        t = state.t + 1
        obs = fields[jnp.minimum(t, self.max_steps - 1)]
        return VisualDiscriminationState(t=t, obs=obs), reward, t >= self.max_steps
