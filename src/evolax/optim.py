"""Optimizers for the gradient-like steps of evolution strategies, as optax transformations."""

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax


class ClipUpState(NamedTuple):
    """State of :func:`clipup`: the velocity (a pytree like the parameters) and a step count."""

    velocity: optax.Updates
    count: chex.Array  # type: ignore[assignment]  # shadows tuple.count, as in optax


def clipup(
    learning_rate: optax.ScalarOrSchedule,
    momentum: float = 0.9,
    max_speed: float = 0.15,
    normalize_gradient: bool = True,
) -> optax.GradientTransformation:
    """ClipUp: normalised-gradient momentum with a clipped velocity (Toklu et al., 2020).

    ``v <- clip_norm(momentum * v + lr * g / ||g||, max_speed)``; the update is ``-v`` (optax
    minimises, so pass the negated ascent direction as the gradient, as every optax optimizer
    expects). ``max_speed`` is usually twice the learning rate.

    Args:
        learning_rate: step size (``lr``), a float or an optax schedule.
        momentum: velocity decay in ``[0, 1)``.
        max_speed: largest allowed global norm of the velocity.
        normalize_gradient: divide the gradient by its global norm first (the paper's default).
    """
    if not 0.0 <= momentum < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum}")
    if not max_speed > 0:
        raise ValueError(f"max_speed must be positive, got {max_speed}")

    def init_fn(params):
        return ClipUpState(velocity=optax.tree.zeros_like(params), count=jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None):
        del params
        lr = learning_rate(state.count) if callable(learning_rate) else learning_rate
        if normalize_gradient:
            norm = optax.tree.norm(updates)
            scale = jnp.where(norm > 0, 1.0 / jnp.where(norm > 0, norm, 1.0), 0.0)
            updates = optax.tree.scale(scale, updates)
        velocity = jax.tree.map(lambda v, g: momentum * v + lr * g, state.velocity, updates)
        speed = optax.tree.norm(velocity)
        clip = jnp.where(speed > max_speed, max_speed / jnp.where(speed > 0, speed, 1.0), 1.0)
        velocity = optax.tree.scale(clip, velocity)
        new_updates = jax.tree.map(jnp.negative, velocity)
        return new_updates, ClipUpState(velocity=velocity, count=optax.safe_increment(state.count))

    return optax.GradientTransformation(init_fn, update_fn)
