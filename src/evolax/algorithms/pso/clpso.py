"""The comprehensive learning particle swarm optimizer, CLPSO (Liang, Qin, Suganthan & Baskar,
2006)."""

from __future__ import annotations

from typing import NamedTuple

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import PopulationAlgorithm, check_min_pop_size
from evolax.algorithms.noise import unit_uniform
from evolax.algorithms.pso.common import initial_swarm, update_personal_bests, with_personal_bests
from evolax.algorithms.pso.pso import PSOState
from evolax.types import PRNGKey
from evolax.validation import check_in_interval, check_positive, check_positive_int


@chex.dataclass(frozen=True, kw_only=True)
class CLPSOState(PSOState):
    """CLPSO's state: :class:`~evolax.algorithms.pso.pso.PSOState` (positions, velocities,
    personal bests) plus each particle's exemplars.

    Attributes:
        exemplars: ``f_i(d)``, the particle whose personal best dimension ``d`` of particle
            ``i`` learns from, ``i32[pop, D]``.
        stall: ``flag_i``, the generations since particle ``i``'s personal best last improved
            (from a finite fitness), ``i32[pop]``; at ``refreshing_gap`` its exemplars are
            assigned anew. It starts at ``refreshing_gap``: the first ``tell`` assigns them all.
    """

    exemplars: Int[Array, "pop dim"]
    stall: Int[Array, " pop"]


class CLPSODraws(NamedTuple):
    """The random numbers of one CLPSO ``tell`` (see :meth:`CLPSO.draws`).

    Attributes:
        velocity_u: uniform ``[0, 1)``, the ``rand_i^d`` of the velocity update, ``[pop, D]``.
        learn_u: uniform ``[0, 1)``, dimension ``d`` learns from another particle where
            ``learn_u < Pc_i``, ``[pop, D]``.
        first, second: the two tournament entrants per particle and dimension, uniform over
            the other particles (never ``i``), ``i32[pop, D]`` each.
        forced: the dimension that learns from another particle when no draw chose one,
            ``i32[pop]``.
    """

    velocity_u: Float[Array, "pop dim"]
    learn_u: Float[Array, "pop dim"]
    first: Int[Array, "pop dim"]
    second: Int[Array, "pop dim"]
    forced: Int[Array, " pop"]


def learning_probabilities(
    pop_size: int, low: float | Float[Array, ""], high: float | Float[Array, ""], like: Array
) -> Float[Array, " pop"]:
    """CLPSO's eq. 3 with its ends as parameters: ``Pc_i = low + (high - low) (exp(10 (i - 1)
    / (ps - 1)) - 1) / (exp(10) - 1)`` for particles ``i = 1 .. ps`` (the paper: ``low =
    0.05``, ``high = 0.5``), in ``like``'s dtype."""
    t = jnp.arange(pop_size, dtype=like.dtype) / (pop_size - 1)
    return low + (high - low) * jnp.expm1(10.0 * t) / jnp.expm1(10.0)


def assign_exemplars(
    personal_best_fitness: Float[Array, " pop"],
    draws: CLPSODraws,
    probabilities: Float[Array, " pop"],
) -> Int[Array, "pop dim"]:
    """New exemplars ``f_i`` for every particle (CLPSO, section II-B and Fig. 3): dimension
    ``d`` of particle ``i`` learns from the winner of a tournament between two other
    particles' personal bests (the fitter; the second entrant on a tie, as the authors' code)
    where ``learn_u < Pc_i``, else from ``i``'s own; a particle whose draws chose no dimension
    learns its ``forced`` dimension from that dimension's tournament winner."""
    pop, dim = draws.learn_u.shape
    first_wins = personal_best_fitness[draws.first] > personal_best_fitness[draws.second]
    winners = jnp.where(first_wins, draws.first, draws.second)
    learn = draws.learn_u < probabilities[:, None]
    none = ~jnp.any(learn, axis=1)
    learn = learn | (none[:, None] & (jnp.arange(dim)[None] == draws.forced[:, None]))
    return jnp.where(learn, winners, jnp.arange(pop)[:, None])


class CLPSO(PopulationAlgorithm[CLPSOState]):
    """The comprehensive learning particle swarm optimizer (Liang, Qin, Suganthan & Baskar,
    2006, "Comprehensive Learning Particle Swarm Optimizer for Global Optimization of
    Multimodal Functions", IEEE TEVC 10(3)), maximising.

    Each particle ``i`` learns every dimension ``d`` from one personal best, its exemplar
    ``f_i(d)``: ``v_i^d <- w v_i^d + c rand_i^d (p_{f_i(d)}^d - x_i^d)`` (clipped to
    ``max_velocity`` if given), ``x_i <- x_i + v_i``. Exemplars (:func:`assign_exemplars`):
    with probability ``Pc_i`` (:func:`learning_probabilities`, 0.05 for the first particle
    to 0.5 for the last) a dimension learns from the fitter personal best of two other
    particles drawn at random, else from ``i``'s own; at least one dimension learns from
    another particle. A particle keeps its exemplars until its personal best has failed to
    improve for ``refreshing_gap`` (``m``) generations. The inertia weight falls linearly,
    ``w_k = w_0 - (w_0 - w_1) k / generations`` at move ``k = 1, 2, ...``, and stays at
    ``w_1`` after ``generations`` moves. There is no global best.

    Ordering, as :class:`~evolax.algorithms.pso.pso.PSO`: ``ask`` returns the current positions;
    ``tell`` updates the personal bests and ``flag_i``, assigns the stalled particles' exemplars
    and moves the swarm, all particles at once (the paper's Fig. 4 moves and evaluates one
    particle after the other, so later particles may see this generation's personal bests of
    earlier ones; evaluating a whole population per ``ask`` needs the synchronous order).
    The swarm starts at ``x0 + init_std * N(0, I)`` with zero velocities (the paper draws
    both in the search box, which neural genomes do not have; for the same reason there is no
    ``V_max = 0.2 range`` unless ``max_velocity`` is given and no "update ``p_i`` only inside
    the box" rule). Defaults are the paper's (``c = 1.49445``, ``w`` from 0.9 to 0.4,
    ``m = 7``, ``Pc`` from 0.05 to 0.5).

    Args:
        pop_size: ``ps``, the number of particles, at least 2.
        generations: the number of moves over which ``w`` falls from ``inertia_start`` to
            ``inertia_end`` (the paper: the run's length, ``max_FEs / ps``), a positive integer.
        refreshing_gap: ``m``, the generations without improvement after which a particle's
            exemplars are assigned anew, a positive integer.
        inertia_start: ``w_0``, positive.
        inertia_end: ``w_1``, positive.
        acceleration: ``c``, positive.
        learning_low: ``Pc`` of the first particle, in ``[0, 1]``.
        learning_high: ``Pc`` of the last particle, in ``[0, 1]``.
        max_velocity: clamp on each velocity coordinate, positive, or ``None`` (no clamp).
        init_std: spread of the initial positions around ``x0``, positive.
    """

    pop_size: int = eqx.field(static=True)
    generations: int = eqx.field(static=True, default=1000)
    refreshing_gap: int = eqx.field(static=True, default=7)
    inertia_start: float = 0.9
    inertia_end: float = 0.4
    acceleration: float = 1.49445
    learning_low: float = 0.05
    learning_high: float = 0.5
    max_velocity: float | None = None
    init_std: float = 1.0

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 2, "for CLPSO (exemplars come from other particles)")
        check_positive_int("generations", self.generations)
        check_positive_int("refreshing_gap", self.refreshing_gap)
        check_positive("inertia_start", self.inertia_start)
        check_positive("inertia_end", self.inertia_end)
        check_positive("acceleration", self.acceleration)
        check_in_interval("learning_low", self.learning_low, 0, 1)
        check_in_interval("learning_high", self.learning_high, 0, 1)
        if self.max_velocity is not None:
            check_positive("max_velocity", self.max_velocity)
        check_positive("init_std", self.init_std)

    def draws(self, key: PRNGKey, like: Float[Array, "pop dim"]) -> CLPSODraws:
        """The random numbers one :meth:`tell` uses for a swarm like ``like`` (its shape and
        dtype), from one ``jax.random.bits`` call (indices by ``bits % n``: a bias below
        ``n / 2^32``)."""
        pop, dim = self.pop_size, like.shape[1]
        bits = jax.random.bits(key, (pop, 4 * dim + 1), jnp.uint32)
        u = unit_uniform(bits[:, : 2 * dim]).astype(like.dtype)
        offsets = 1 + bits[:, 2 * dim : 4 * dim] % jnp.uint32(pop - 1)  # 1 .. ps - 1
        others = (jnp.arange(pop)[:, None] + offsets.astype(jnp.int32)) % pop
        return CLPSODraws(
            velocity_u=u[:, :dim],
            learn_u=u[:, dim:],
            first=others[:, :dim],
            second=others[:, dim:],
            forced=(bits[:, 4 * dim] % jnp.uint32(dim)).astype(jnp.int32),
        )

    def inertia(self, move: Int[Array, ""]) -> Float[Array, ""]:
        """``w_k`` for move ``k`` (1 for the first ``tell``'s move)."""
        progress = jnp.minimum(move, self.generations) / self.generations
        return self.inertia_start - (self.inertia_start - self.inertia_end) * progress

    def _init(self, key, x0):
        swarm = initial_swarm(key, x0, self.pop_size, self.init_std)
        shape = swarm["population"].shape
        return CLPSOState(
            **with_personal_bests(swarm),
            exemplars=jnp.broadcast_to(jnp.arange(self.pop_size)[:, None], shape),
            stall=jnp.full(self.pop_size, self.refreshing_gap, jnp.int32),
        )

    def _ask(self, key, state):
        del key
        return state.population, state

    def _tell(self, key, state, x, fitness):
        evaluated = jnp.isfinite(state.personal_best_fitness)
        state, improved = update_personal_bests(state, x, fitness)
        stall = jnp.where(improved & evaluated, 0, state.stall + 1)
        draws = self.draws(key, x)
        refresh = stall >= self.refreshing_gap
        probabilities = learning_probabilities(
            self.pop_size, self.learning_low, self.learning_high, x
        )
        fresh = assign_exemplars(state.personal_best_fitness, draws, probabilities)
        exemplars = jnp.where(refresh[:, None], fresh, state.exemplars)
        target = jnp.take_along_axis(state.personal_best, exemplars, axis=0)
        w = self.inertia(state.generation + 1).astype(x.dtype)
        velocities = w * state.velocities + self.acceleration * draws.velocity_u * (target - x)
        if self.max_velocity is not None:
            velocities = jnp.clip(velocities, -self.max_velocity, self.max_velocity)
        new_state = state.replace(
            population=x + velocities,
            velocities=velocities,
            exemplars=exemplars,
            stall=jnp.where(refresh, 0, stall),
        )
        speed = jnp.sqrt(jnp.sum(velocities**2, axis=1))
        metrics = {
            "speed_mean": jnp.mean(speed),
            "inertia": w,
            "refreshed": jnp.mean(refresh.astype(jnp.float32)),
        }
        return new_state, metrics
