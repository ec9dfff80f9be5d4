"""IGD+, the inverted generational distance plus (Ishibuchi et al., 2015), for maximised
objectives."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.pareto.sorting import finite_rows

__all__ = ["igd_plus"]


def igd_plus(
    points: Float[Array, "n m"], front: Float[Array, "k m"], batch_size: int = 256
) -> Float[Array, ""]:
    """The mean over the reference ``front`` of the distance from each of its points ``z`` to
    the nearest of ``points``, counting only the objectives where that point falls short of
    ``z``: ``mean_z min_a |max(z - a, 0)|``. It is 0 when the points cover the front, and,
    unlike IGD, weakly Pareto-compliant. Rows with a non-finite entry count as ``-inf``.

    Args:
        points: the approximation, ``[n, m]``, maximised.
        front: points of the true Pareto front, ``[k, m]``.
        batch_size: front points handled at once.
    Returns:
        ``[]``.
    """
    if jnp.ndim(points) != 2 or jnp.ndim(front) != 2 or jnp.shape(points)[1] != jnp.shape(front)[1]:
        raise ValueError(
            f"points and front must have shapes (n, m) and (k, m), got "
            f"{tuple(jnp.shape(points))} and {tuple(jnp.shape(front))}"
        )
    a = finite_rows(jnp.asarray(points, jnp.result_type(points, jnp.float32)))
    z = jnp.asarray(front, a.dtype)

    def nearest(zi):
        shortfall = jnp.maximum(zi[None, :] - a, 0.0)
        return jnp.sqrt(jnp.min(jnp.sum(shortfall * shortfall, axis=-1)))

    return jnp.mean(jax.lax.map(nearest, z, batch_size=batch_size))
