"""Stochastic hill climbing: the elitist (1 + lambda) evolution strategy with a fixed step size
(Beyer & Schwefel, 2002)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.algorithms.base import DistributionAlgorithm, DistributionState, normal
from evolax.validation import check_in_interval, check_non_negative, check_positive


@chex.dataclass(frozen=True, kw_only=True)
class HillClimbingState(DistributionState):
    """HillClimbing state: the current point ``mean`` (``[D]``) and the step size ``std``
    (``[]``).

    Attributes:
        fitness: the current point's fitness, ``[]`` (``-inf`` until a generation is told:
            ``x0`` itself is never evaluated).
    """

    fitness: Float[Array, ""]


def climb(
    mean: Float[Array, " dim"],
    fitness: Float[Array, ""],
    x: Float[Array, "pop dim"],
    x_fitness: Float[Array, " pop"],
) -> tuple[Float[Array, " dim"], Float[Array, ""], Float[Array, ""]]:
    """The elitist step: the fittest of ``x`` (the first on ties) replaces the current point
    ``mean`` if its fitness is strictly higher; returns the new point, its fitness and whether
    it moved (``bool[]``)."""
    top = jnp.argmax(x_fitness)
    moved = x_fitness[top] > fitness
    return jnp.where(moved, x[top], mean), jnp.where(moved, x_fitness[top], fitness), moved


class HillClimbing(DistributionAlgorithm[HillClimbingState]):
    """Stochastic (Gaussian) hill climbing: the (1 + lambda)-ES of Rechenberg and Schwefel
    without step-size adaptation (Beyer & Schwefel, 2002, "Evolution strategies - A
    comprehensive introduction", Natural Computing 1, 3-52); evosax's ``HillClimbing``.

    Each generation samples ``x_k = mean + std * N(0, I)``, ``k = 1..pop_size``, around the
    current point and moves to the fittest sample if it is strictly fitter than the current
    point (:func:`climb`); ``std`` then decays geometrically to ``std_min``. ``x0`` is not
    evaluated, so the first generation always moves to its best sample.

    A :class:`~evolax.algorithms.base.DistributionAlgorithm`: the state is a current point and
    a positive step size, and since the climb is elitist the current point is the fittest
    genome told so far, the solution to deploy (:meth:`best` returns it). The defaults are
    evosax's (``std = 1``, constant).

    Args:
        pop_size: samples per generation (``lambda``).
        init_std: the initial step size, positive.
        std_decay: factor applied to ``std`` after each generation, in ``(0, 1]``.
        std_min: floor of ``std``, ``>= 0``.
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0
    std_decay: float = 1.0
    std_min: float = 0.0

    def __check_init__(self):
        check_positive("init_std", self.init_std)
        check_in_interval("std_decay", self.std_decay, 0, 1, low_open=True)
        check_non_negative("std_min", self.std_min)

    def _init(self, key, x0):
        del key
        return HillClimbingState(
            mean=x0,
            std=jnp.asarray(self.init_std, x0.dtype),
            fitness=jnp.asarray(-jnp.inf, x0.dtype),
        )

    def _ask(self, key, state):
        z = normal(key, (self.pop_size, state.mean.shape[0]), state.mean)
        return state.mean[None] + state.std * z, state

    def _tell(self, key, state, x, fitness):
        del key
        mean, current, moved = climb(state.mean, state.fitness, x, fitness)
        std = jnp.maximum(state.std * self.std_decay, self.std_min)
        new_state = state.replace(mean=mean, std=std, fitness=current)
        return new_state, {"std": std, "moved": moved.astype(jnp.float32)}
