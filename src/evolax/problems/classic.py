"""Classic test functions for minimisation: sphere, ellipsoid, Rosenbrock, Rastrigin.

Each maps ``x: f[..., dim]`` to ``f[...]`` (any leading batch shape) and has minimum 0:
at the origin, except Rosenbrock (at ``(1, ..., 1)``). :func:`shifted` moves a minimum to
a given point, and :func:`to_fitness` negates a function for evolax's maximising
algorithms::

    objective = shifted(rastrigin, jnp.full(10, 1.5))   # minimum 0 at x = 1.5
    fitness = to_fitness(objective)                     # maximum 0 at x = 1.5

For COCO's rotated, conditioned and oscillating versions use :mod:`evolax.problems.bbob`.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

__all__ = ["ellipsoid", "rastrigin", "rosenbrock", "shifted", "sphere", "to_fitness"]

Objective = Callable[[Float[Array, "... dim"]], Float[Array, "..."]]


def sphere(x: Float[ArrayLike, "... dim"]) -> Float[Array, "..."]:
    """The sphere ``sum_i x_i^2``; minimum 0 at 0.

    Args:
        x: ``[..., dim]``.
    Returns:
        ``[...]``.
    """
    x = _as_float(x)
    return jnp.sum(x * x, axis=-1)


def ellipsoid(x: Float[ArrayLike, "... dim"], condition: float = 1e6) -> Float[Array, "..."]:
    """The axis-parallel ellipsoid ``sum_i condition^(i / (dim - 1)) x_i^2``; minimum 0 at 0.

    Its Hessian has condition number ``condition`` (for ``dim >= 2``).

    Args:
        x: ``[..., dim]``.
        condition: ratio of the largest to the smallest coefficient, ``>= 1``.
    Returns:
        ``[...]``.
    """
    x = _as_float(x)
    dim = x.shape[-1]
    weights = jnp.asarray(condition, x.dtype) ** (jnp.arange(dim, dtype=x.dtype) / max(dim - 1, 1))
    return jnp.sum(jnp.broadcast_to(weights, x.shape) * x * x, axis=-1)


def rosenbrock(x: Float[ArrayLike, "... dim"]) -> Float[Array, "..."]:
    """Rosenbrock's function ``sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2``; minimum 0 at 1.

    Args:
        x: ``[..., dim]`` with ``dim >= 2``.
    Returns:
        ``[...]``.
    """
    x = _as_float(x)
    head, tail = x[..., :-1], x[..., 1:]
    return jnp.sum(100.0 * (tail - head * head) ** 2 + (1.0 - head) ** 2, axis=-1)


def rastrigin(x: Float[ArrayLike, "... dim"], amplitude: float = 10.0) -> Float[Array, "..."]:
    """Rastrigin's function ``A dim + sum_i x_i^2 - A cos(2 pi x_i)``; minimum 0 at 0.

    Args:
        x: ``[..., dim]``.
        amplitude: ``A``, the depth of the local minima (10 is the usual choice).
    Returns:
        ``[...]``.
    """
    x = _as_float(x)
    terms = x * x - amplitude * jnp.cos(2.0 * jnp.pi * x)
    return amplitude * x.shape[-1] + jnp.sum(terms, axis=-1)


def _as_float(x: ArrayLike) -> Array:
    x = jnp.asarray(x)
    return x.astype(jnp.promote_types(x.dtype, jnp.float32))


def shifted(function: Objective, shift: Float[ArrayLike, " dim"]) -> Objective:
    """``x -> function(x - shift)``: moves ``function``'s minimiser by ``shift``.

    Args:
        function: any function above (or another ``[..., dim] -> [...]`` function).
        shift: ``[dim]``.
    Returns:
        The shifted function, ``[..., dim] -> [...]``.
    """
    shift = jnp.asarray(shift)

    def shifted_function(x: Float[ArrayLike, "... dim"]) -> Float[Array, "..."]:
        x = _as_float(x)
        return function(x - jnp.broadcast_to(shift, x.shape).astype(x.dtype))

    return shifted_function


def to_fitness(function: Objective) -> Objective:
    """``x -> -function(x)``: a minimisation objective as a fitness to maximise."""

    def fitness(x: Float[Array, "... dim"]) -> Float[Array, "..."]:
        return -function(x)

    return fitness
