"""What the baselines share: a current point with its fitness (hill climbing and gradientless
descent), its start at ``x0``, and the elitist step :func:`climb`; the decaying step size of
hill climbing and simulated annealing (:class:`DecayingStep`)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.algorithms.base import DistributionState, check_std_decay
from evolax.validation import check_positive


class DecayingStep(eqx.Module):
    """The leading fields of a Gaussian search whose step size ``std`` starts at ``init_std``
    and decays geometrically to ``std_min`` (:func:`~evolax.algorithms.base.decayed_std`),
    and their checks (:meth:`check_step`, for the algorithm's ``__check_init__`` to call
    before its own); mixed in before the algorithm's base class, which documents them."""

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0
    std_decay: float = 1.0
    std_min: float = 0.0

    def check_step(self) -> None:
        """Raise unless ``init_std`` is positive, ``std_decay`` in ``(0, 1]`` and
        ``std_min >= 0``."""
        check_positive("init_std", self.init_std)
        check_std_decay(self.std_decay, self.std_min)


@chex.dataclass(frozen=True, kw_only=True)
class ClimbState(DistributionState):
    """The state of an elitist climb: the current point ``mean`` (``[D]``) and a step size or
    search radius ``std`` (``[]``).

    Attributes:
        fitness: the current point's fitness, ``[]`` (``-inf`` until a generation is told:
            ``x0`` itself is never evaluated).
    """

    fitness: Float[Array, ""]


def climb_start(x0: Float[Array, " dim"], init_std: float | Float[Array, ""]) -> dict[str, Array]:
    """The fields of a :class:`ClimbState` before its first ``tell``: ``mean = x0``, ``std =
    init_std`` and ``fitness = -inf``."""
    return dict(
        mean=x0,
        std=jnp.asarray(init_std, x0.dtype),
        fitness=jnp.asarray(-jnp.inf, x0.dtype),
    )


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
