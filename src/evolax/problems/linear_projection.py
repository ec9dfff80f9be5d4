"""The linear-projection benchmark of the QD literature (Fontaine et al. 2020, section 5.1;
pyribs' sphere tutorial): a shifted sphere normalised to ``[0, 100]``, with two descriptors
that sum the (clipped) halves of the genome."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

BOUND = 5.12
"""The search box's half-width; coordinates outside it are folded back as ``5.12 / x_i``."""


def linear_projection_bound(dim: int) -> float:
    """The descriptors' range is ``[-b, b]`` in both dimensions, ``b = dim / 2 * 5.12``."""
    return dim / 2 * BOUND


def sphere_linear_projection(
    x: Float[ArrayLike, "... dim"],
) -> tuple[Float[Array, "..."], Float[Array, "... 2"]]:
    """Fitness and descriptors of ``x`` (even ``dim``): the fitness is
    ``100 (1 - |x - 2.048|^2 / |(-5.12 - 2.048) 1|^2)``, 100 at ``x_i = 2.048`` (the optimum
    0.4 * 5.12), 0 at the box's far corner; the descriptors are the sums of the first and
    second half of ``x`` after clipping (a coordinate beyond ``+-5.12`` counts as
    ``5.12 / x_i``).

    Args:
        x: ``[..., dim]``.
    Returns:
        ``([...], [..., 2])``.
    """
    x = jnp.asarray(x, jnp.result_type(x, jnp.float32))
    dim = x.shape[-1]
    if dim % 2:
        raise ValueError(f"x must have an even last dimension, got {dim}")
    shift = 0.4 * BOUND
    worst = (-BOUND - shift) ** 2 * dim
    fitness = 100.0 * (1.0 - jnp.sum((x - shift) ** 2, axis=-1) / worst)
    clipped = jnp.where(jnp.abs(x) > BOUND, BOUND / x, x)
    half = dim // 2
    descriptors = jnp.stack(
        [jnp.sum(clipped[..., :half], axis=-1), jnp.sum(clipped[..., half:], axis=-1)], axis=-1
    )
    return fitness, descriptors
