"""The social learning particle swarm optimizer, SL-PSO (Cheng & Jin, 2015)."""

from __future__ import annotations

from typing import NamedTuple

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from evolax.algorithms.base import HIGHEST, PopulationAlgorithm, check_min_pop_size
from evolax.algorithms.pso.common import SwarmState, initial_swarm
from evolax.types import PRNGKey
from evolax.validation import check_non_negative, check_positive


@chex.dataclass(frozen=True, kw_only=True)
class SLPSOState(SwarmState):
    """SL-PSO's state: the swarm (:class:`~evolax.algorithms.pso.common.SwarmState`; ``population``
    holds the positions :meth:`SLPSO.ask` returns next, ``fitness`` is always ``-inf``:
    ``tell`` moves the particles to positions not evaluated yet)."""


class SLPSODraws(NamedTuple):
    """The random numbers of one SL-PSO ``tell`` (see :meth:`SLPSO.draws`).

    Attributes:
        r1, r2, r3: uniform ``[0, 1)``, ``[m, D]`` each.
        demonstrator_u: uniform ``[0, 1)``, picks each dimension's demonstrator, ``[m, D]``.
        learn_u: uniform ``[0, 1)``, a particle learns where ``learn_u < P_L``, ``[m]``.
    """

    r1: Float[Array, "m dim"]
    r2: Float[Array, "m dim"]
    r3: Float[Array, "m dim"]
    demonstrator_u: Float[Array, "m dim"]
    learn_u: Float[Array, " m"]


def learning_probabilities(
    m: int, dim: int, base_swarm_size: float | Float[Array, ""], alpha: float | Float[Array, ""]
) -> Float[Array, " m"]:
    """SL-PSO's eq. 9: ``P_L`` of the particle ranked ``i = 1 .. m`` from the worst,
    ``(1 - (i - 1) / m) ^ (alpha log(ceil(D / M)))`` (natural log, as the authors' code's
    ``log(sqrt(ceil(d / M)))`` with ``alpha = 0.5``); all 1 while ``D <= M``."""
    exponent = alpha * jnp.log(jnp.ceil(dim / base_swarm_size))
    return (1.0 - jnp.arange(m) / m) ** exponent


def social_learning(
    x: Float[Array, "m dim"],
    v: Float[Array, "m dim"],
    fitness: Float[Array, " m"],
    draws: SLPSODraws,
    probabilities: Float[Array, " m"],
    epsilon: float | Float[Array, ""],
) -> tuple[Float[Array, "m dim"], Float[Array, "m dim"], Bool[Array, " m"]]:
    """One SL-PSO generation (Cheng & Jin, 2015, Algorithm 1) on a swarm evaluated at ``x``:
    rank the particles (stable: among equal fitness the earlier row ranks lower; non-finite
    is the worst); every particle but the best learns with probability ``P_L`` of its rank:
    ``dx_ij <- r1 dx_ij + r2 (x_kj - x_ij) + epsilon r3 (x_bar_j - x_ij)``,
    ``x_ij <- x_ij + dx_ij``, each dimension's demonstrator ``k`` uniform among the particles
    ranked above ``i``, ``x_bar`` the swarm's mean. Returns positions, velocities and the mask
    of the particles that learned."""
    m = x.shape[0]
    order = jnp.argsort(fitness, stable=True)  # worst first
    rank = jnp.zeros(m, jnp.int32).at[order].set(jnp.arange(m, dtype=jnp.int32))
    above = (m - 1 - rank)[:, None]  # the number of better particles
    offset = jnp.minimum(jnp.floor(draws.demonstrator_u * above).astype(jnp.int32), above - 1)
    demonstrators = order[jnp.minimum(rank[:, None] + 1 + offset, m - 1)]
    x_k = jnp.take_along_axis(x, demonstrators, axis=0)
    mean = jnp.dot(jnp.full(m, 1.0 / m, x.dtype), x, precision=HIGHEST)
    velocity = draws.r1 * v + draws.r2 * (x_k - x) + epsilon * draws.r3 * (mean[None] - x)
    learn = (draws.learn_u < probabilities[rank]) & (rank < m - 1)
    learning = learn[:, None]
    return jnp.where(learning, x + velocity, x), jnp.where(learning, velocity, v), learn


class SLPSO(PopulationAlgorithm[SLPSOState]):
    """The social learning particle swarm optimizer (Cheng & Jin, 2015, "A social learning
    particle swarm optimization algorithm for scalable optimization", Information Sciences
    291), maximising.

    No personal or global bests: each generation ranks the swarm by fitness, and every
    particle but the best, with a learning probability ``P_L`` that falls with its rank
    (:func:`learning_probabilities`; all 1 while ``D <= M``), imitates better ones
    (:func:`social_learning`): ``dx_ij <- r1 dx_ij + r2 (x_kj - x_ij) + epsilon r3
    (x_bar_j - x_ij)``, ``x_ij <- x_ij + dx_ij``, where dimension ``j``'s demonstrator ``k``
    is drawn uniformly among the particles fitter than ``i`` and ``x_bar`` is the swarm's
    mean; the social influence is ``epsilon = beta D / M``.

    Ordering, as :class:`~evolax.algorithms.pso.pso.PSO`: ``ask`` returns the whole swarm and
    ``tell`` ranks it and moves it. Particles that did not learn (the best among them) are
    returned again, as the paper's code evaluates all ``m`` particles every generation (its
    budget counts ``m`` per generation). The swarm starts at ``x0 + init_std * N(0, I)`` with
    zero velocities, as the authors' code (the paper draws positions in the search box, which
    neural genomes do not have). :meth:`best` is the best position ever told. Defaults are
    the paper's (``M = 100``, ``alpha = 0.5``, ``beta = 0.01``); its swarm size is
    ``m = M + floor(D / 10)``.

    Args:
        pop_size: ``m``, the swarm size, at least 2.
        base_swarm_size: ``M``, positive.
        alpha: ``P_L``'s exponent factor, ``>= 0``.
        beta: ``epsilon``'s factor, ``>= 0``.
        init_std: spread of the initial positions around ``x0``, positive.
    """

    pop_size: int = eqx.field(static=True)
    base_swarm_size: float = 100.0
    alpha: float = 0.5
    beta: float = 0.01
    init_std: float = 1.0

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 2, "for SL-PSO (the best particle does not learn)")
        check_positive("base_swarm_size", self.base_swarm_size)
        check_non_negative("alpha", self.alpha)
        check_non_negative("beta", self.beta)
        check_positive("init_std", self.init_std)

    def draws(self, key: PRNGKey, like: Float[Array, "m dim"]) -> SLPSODraws:
        """The random numbers one :meth:`tell` uses for a swarm like ``like`` (its shape and
        dtype): one ``[m, 4 D + 1]`` uniform draw."""
        m, dim = self.pop_size, like.shape[1]
        u = jax.random.uniform(key, (m, 4 * dim + 1), like.dtype)
        return SLPSODraws(
            r1=u[:, :dim],
            r2=u[:, dim : 2 * dim],
            r3=u[:, 2 * dim : 3 * dim],
            demonstrator_u=u[:, 3 * dim : 4 * dim],
            learn_u=u[:, 4 * dim],
        )

    def epsilon(self, dim: int) -> Float[Array, ""]:
        """The social influence ``beta D / M``."""
        return jnp.asarray(self.beta * dim / self.base_swarm_size)

    def _init(self, key, x0):
        return SLPSOState(**initial_swarm(key, x0, self.pop_size, self.init_std))

    def _ask(self, key, state):
        del key
        return state.population, state

    def _tell(self, key, state, x, fitness):
        dim = x.shape[1]
        probabilities = learning_probabilities(
            self.pop_size, dim, self.base_swarm_size, self.alpha
        ).astype(x.dtype)
        positions, velocities, learn = social_learning(
            x,
            state.velocities,
            fitness,
            self.draws(key, x),
            probabilities,
            self.epsilon(dim).astype(x.dtype),
        )
        new_state = state.replace(population=positions, velocities=velocities)
        speed = jnp.sqrt(jnp.sum(velocities**2, axis=1))
        metrics = {
            "speed_mean": jnp.mean(speed),
            "learning_rate": jnp.mean(learn.astype(jnp.float32)),
        }
        return new_state, metrics
