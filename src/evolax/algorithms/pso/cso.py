"""The competitive swarm optimizer, CSO (Cheng & Jin, 2015)."""

from __future__ import annotations

from typing import NamedTuple

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import HIGHEST, PopulationAlgorithm
from evolax.algorithms.noise import unit_uniform
from evolax.algorithms.pso.common import SwarmState, initial_swarm
from evolax.types import PRNGKey
from evolax.validation import check_non_negative, check_positive


@chex.dataclass(frozen=True, kw_only=True)
class CSOState(SwarmState):
    """CSO's state: the whole swarm of ``m = 2 pop_size`` particles (``population``,
    ``fitness``, ``velocities``: ``[m, D]``, ``[m]``, ``[m, D]``; the losers already at their
    new positions, their fitness ``-inf`` until told) and the rows the next ``ask`` returns.

    Attributes:
        candidates: the swarm rows :meth:`CSO.ask` returns next, ``i32[pop]``: the losers
            just moved, or a half of the initial swarm.
        pending: the halves of the initial swarm not told yet, ``i32[]`` (2, 1, then 0).
    """

    candidates: Int[Array, " pop"]
    pending: Int[Array, ""]


class CSODraws(NamedTuple):
    """The random numbers of one CSO competition (see :meth:`CSO.draws`).

    Attributes:
        permutation: a random permutation of the swarm (the sorting order of ``m`` random
            32-bit keys); particle ``permutation[k]`` meets ``permutation[k + pop]``,
            ``i32[m]``.
        r1, r2, r3: uniform ``[0, 1)``, the losers' ``R1, R2, R3``, ``[pop, D]`` each.
    """

    permutation: Int[Array, " m"]
    r1: Float[Array, "pop dim"]
    r2: Float[Array, "pop dim"]
    r3: Float[Array, "pop dim"]


class CSO(PopulationAlgorithm[CSOState]):
    """The competitive swarm optimizer (Cheng & Jin, 2015, "A Competitive Swarm Optimizer for
    Large Scale Optimization", IEEE Trans. Cybernetics 45(2)), maximising.

    A swarm of ``m = 2 pop_size`` particles, without personal or global bests. Each
    generation pairs the particles at random; in each pair the fitter (the first of the pair
    on a tie, as the authors' code) wins and passes on unchanged, and the loser ``l`` learns
    from the winner ``w`` and the swarm's mean ``x_bar`` (of all positions before this
    generation's moves): ``v_l <- R1 v_l + R2 (x_w - x_l) + phi R3 (x_bar - x_l)``,
    ``x_l <- x_l + v_l``, with ``R1, R2, R3`` uniform ``[0, 1)`` per coordinate.

    Evaluations. Only the losers move, and the winners' fitness is known, so each ``ask``
    returns just the ``m / 2 = pop_size`` moved losers, and ``tell`` takes their fitness,
    holds the next competition and moves its losers: every evaluation is of a new position,
    the paper's count of ``m / 2`` evaluations per generation. (Returning the whole swarm
    would evaluate each winner again, doubling the cost on a deterministic problem.) The
    initial swarm, ``x0 + init_std * N(0, I)`` with zero velocities as in the authors' code
    (the paper draws positions in the search box, which neural genomes do not have), is
    evaluated by the first two ``ask``s, half each; the first competition follows the second
    ``tell``. :meth:`best` is the best position ever told.

    ``phi = 0`` is the setting of the paper's experiments and the authors' code for
    ``D < 500`` (``m = 100``); for ``D = 500`` to ``5000`` the code uses ``m = 250`` to
    ``1500`` and ``phi`` from 0.05 to 0.2 (set ``phi`` for genomes of that size).

    Args:
        pop_size: the losers moved and evaluated per generation, half the swarm ``m``.
        phi: the weight of the swarm's mean, ``>= 0``.
        init_std: spread of the initial positions around ``x0``, positive.
    """

    pop_size: int = eqx.field(static=True)
    phi: float = 0.0
    init_std: float = 1.0

    def __check_init__(self):
        check_non_negative("phi", self.phi)
        check_positive("init_std", self.init_std)

    @property
    def swarm_size(self) -> int:
        """``m``, twice ``pop_size``."""
        return 2 * self.pop_size

    def draws(self, key: PRNGKey, like: Float[Array, "pop dim"]) -> CSODraws:
        """The random numbers one competition uses for genomes like ``like`` (its dtype and
        ``D``), from one ``jax.random.bits`` call (the permutation sorts ``m`` of them)."""
        dim = like.shape[1]
        bits = jax.random.bits(key, (self.pop_size, 3 * dim + 2), jnp.uint32)
        r = unit_uniform(bits[:, : 3 * dim]).astype(like.dtype)
        return CSODraws(
            permutation=jnp.argsort(bits[:, 3 * dim :].reshape(-1), stable=True),
            r1=r[:, :dim],
            r2=r[:, dim : 2 * dim],
            r3=r[:, 2 * dim :],
        )

    def compete(self, state: CSOState, draws: CSODraws) -> tuple[CSOState, Float[Array, "pop dim"]]:
        """The swarm after one competition (the losers moved, their fitness ``-inf``, and
        ``candidates`` set to them) and the losers' new velocities."""
        x, v, fitness = state.population, state.velocities, state.fitness
        first, second = draws.permutation[: self.pop_size], draws.permutation[self.pop_size :]
        first_wins = fitness[first] >= fitness[second]
        winners = jnp.where(first_wins, first, second)
        losers = jnp.where(first_wins, second, first)
        weights = jnp.full(self.swarm_size, 1.0 / self.swarm_size, x.dtype)
        mean = jnp.dot(weights, x, precision=HIGHEST)
        loser_x = x[losers]
        velocity = (
            draws.r1 * v[losers]
            + draws.r2 * (x[winners] - loser_x)
            + self.phi * draws.r3 * (mean[None] - loser_x)
        )
        state = state.replace(  # type: ignore[attr-defined]
            population=x.at[losers].set(loser_x + velocity),
            velocities=v.at[losers].set(velocity),
            fitness=fitness.at[losers].set(-jnp.inf),
            candidates=losers,
        )
        return state, velocity

    def _init(self, key, x0):
        return CSOState(
            **initial_swarm(key, x0, self.swarm_size, self.init_std),
            candidates=jnp.arange(self.pop_size),
            pending=jnp.asarray(2, jnp.int32),
        )

    def _ask(self, key, state):
        del key
        return state.population[state.candidates], state

    def _tell(self, key, state, x, fitness):
        rows = state.candidates
        told = state.replace(
            population=state.population.at[rows].set(x),
            fitness=state.fitness.at[rows].set(fitness),
            pending=jnp.maximum(state.pending - 1, 0),
        )
        moved, velocity = self.compete(told, self.draws(key, x))
        second_half = told.replace(candidates=jnp.arange(self.pop_size, self.swarm_size))
        compete = told.pending == 0
        new_state = jax.tree.map(lambda a, b: jnp.where(compete, a, b), moved, second_half)
        speed = jnp.sqrt(jnp.sum(velocity**2, axis=1))
        return new_state, {"speed_mean": jnp.where(compete, jnp.mean(speed), 0.0)}
