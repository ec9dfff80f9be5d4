"""Random search: independent samples from a fixed distribution, keeping the best (Bergstra &
Bengio, 2012)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.algorithms.base import PopulationAlgorithm, PopulationState, normal
from evolax.types import PRNGKey
from evolax.validation import check_positive

DISTRIBUTIONS = ("uniform", "normal")


@chex.dataclass(frozen=True, kw_only=True)
class RandomSearchState(PopulationState):
    """RandomSearch state: a one-member population, the incumbent. ``population`` holds the
    fittest sample told so far (``[1, D]``, ``x0`` until a finite fitness is told) and
    ``fitness`` its fitness (``[1]``, ``-inf`` until then).

    Attributes:
        center: the centre of the sampling distribution, ``x0`` (``[D]``).
    """

    center: Float[Array, " dim"]


def sample(
    key: PRNGKey,
    center: Float[Array, " dim"],
    scale: Float[Array, ""] | float,
    pop_size: int,
    distribution: str,
) -> Float[Array, "pop dim"]:
    """``pop_size`` independent samples around ``center``: uniform in the box
    ``center +- scale`` (``"uniform"``) or ``center + scale * N(0, I)`` (``"normal"``)."""
    shape = (pop_size, center.shape[0])
    if distribution == "uniform":
        noise = jax.random.uniform(key, shape, center.dtype, -1.0, 1.0)
    else:
        noise = normal(key, shape, center)
    return center[None] + scale * noise


class RandomSearch(PopulationAlgorithm[RandomSearchState]):
    """Random search (Bergstra & Bengio, 2012, "Random Search for Hyper-Parameter
    Optimization", JMLR 13, 281-305); evosax's ``RandomSearch``.

    Every generation draws ``pop_size`` independent samples from one fixed distribution
    around ``x0`` (:func:`sample`): uniform in the box ``x0 +- init_std`` (the paper's
    uniform draws over a box of hyper-parameters, the default) or ``x0 + init_std * N(0, I)``.
    Nothing is learned from the fitness except which sample is the best: the incumbent is
    replaced by a strictly fitter sample. (evosax takes any ``sampling_fn(key) -> solution``.)

    A :class:`~evolax.algorithms.base.PopulationAlgorithm`: the sampling distribution never
    moves, so its centre ``x0`` is not the solution to deploy; :meth:`best` is the best
    genome ever told (the incumbent).

    Args:
        pop_size: samples per generation.
        distribution: ``"uniform"`` (a box) or ``"normal"``.
        init_std: the spread around ``x0``, positive: the box's half-width (``"uniform"``)
            or the standard deviation (``"normal"``); fixed.
    """

    pop_size: int = eqx.field(static=True)
    distribution: str = eqx.field(static=True, default="uniform")
    init_std: float = 1.0

    def __check_init__(self):
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(
                f"distribution must be one of {DISTRIBUTIONS}, got {self.distribution!r}"
            )
        check_positive("init_std", self.init_std)

    def _init(self, key, x0):
        del key
        return RandomSearchState(
            population=x0[None], fitness=jnp.full(1, -jnp.inf, x0.dtype), center=x0
        )

    def _ask(self, key, state):
        return sample(key, state.center, self.init_std, self.pop_size, self.distribution), state

    def _tell(self, key, state, x, fitness):
        del key
        top = jnp.argmax(fitness)
        improved = fitness[top] > state.fitness[0]
        new_state = state.replace(
            population=jnp.where(improved, x[top][None], state.population),
            fitness=jnp.where(improved, fitness[top][None], state.fitness),
        )
        return new_state, {"improved": improved.astype(jnp.float32)}
