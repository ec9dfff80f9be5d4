"""What the particle swarms share: the swarm's state (positions, fitness, velocities), its
start around ``x0``, and the personal bests of PSO and CLPSO."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import chex
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from evolax.algorithms.base import PopulationState, normal
from evolax.types import PRNGKey

if TYPE_CHECKING:
    from evolax.algorithms.pso.pso import PSOState

P = TypeVar("P", bound="PSOState")


@chex.dataclass(frozen=True, kw_only=True)
class SwarmState(PopulationState):
    """A particle swarm: ``population`` holds the particles' positions and ``fitness`` their
    fitness (``-inf`` where not evaluated yet); the base of PSO's and its variants' states.

    Attributes:
        velocities: one per particle, ``[particles, D]`` (zero at the start).
    """

    velocities: Float[Array, "pop dim"]


def update_personal_bests(
    state: P, x: Float[Array, "pop dim"], fitness: Float[Array, " pop"]
) -> tuple[P, Bool[Array, " pop"]]:
    """``state`` with ``p_i <- x_i`` where ``fitness_i`` beats ``p_i``'s fitness strictly (a
    ``-inf`` fitness never does), and the mask of those improved particles."""
    improved = fitness > state.personal_best_fitness
    state = state.replace(  # type: ignore[attr-defined]
        personal_best=jnp.where(improved[:, None], x, state.personal_best),
        personal_best_fitness=jnp.where(improved, fitness, state.personal_best_fitness),
    )
    return state, improved


def initial_swarm(
    key: PRNGKey, x0: Float[Array, " dim"], n: int, init_std: float | Float[Array, ""]
) -> dict[str, Array]:
    """The fields of a swarm of ``n`` particles before its first ``tell``: positions ``x0 +
    init_std * N(0, I)`` (``population``, ``[n, D]``), their ``fitness`` all ``-inf`` and zero
    ``velocities``."""
    positions = x0[None] + init_std * normal(key, (n, x0.shape[0]), x0)
    return dict(
        population=positions,
        fitness=jnp.full(n, -jnp.inf, x0.dtype),
        velocities=jnp.zeros_like(positions),
    )


def with_personal_bests(swarm: dict[str, Array]) -> dict[str, Array]:
    """A swarm's fields (:func:`initial_swarm`) with each particle's personal best, its start
    (``personal_best``, ``personal_best_fitness``)."""
    return {
        **swarm,
        "personal_best": swarm["population"],
        "personal_best_fitness": swarm["fitness"],
    }
