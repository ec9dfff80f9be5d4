"""Particle swarm optimisation (Kennedy & Eberhart, 1995) with the constriction factor (Clerc &
Kennedy, 2002) or an inertia weight (Shi & Eberhart, 1998)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import (
    PopulationAlgorithm,
    check_min_pop_size,
)
from evolax.algorithms.noise import uniform
from evolax.algorithms.pso.common import (
    SwarmState,
    initial_swarm,
    update_personal_bests,
    with_personal_bests,
)
from evolax.algorithms.shaping import sanitize_fitness
from evolax.types import PRNGKey
from evolax.validation import check_positive

VELOCITY_RULES = ("constriction", "inertia")
TOPOLOGIES = ("global", "ring")


@chex.dataclass(frozen=True, kw_only=True)
class PSOState(SwarmState):
    """PSO state: the swarm. ``population`` holds the particles' positions (``[pop, D]``: the
    ones the last ``ask`` returned, or the initial swarm), ``fitness`` their fitness (``[pop]``,
    ``-inf`` until they are told) and ``velocities`` the velocities that moved them there
    (``[pop, D]``, zero at the start).

    Attributes:
        personal_best: each particle's best position so far, ``[pop, D]``.
        personal_best_fitness: its fitness, ``[pop]`` (``-inf`` before the first ``tell``).
    """

    personal_best: Float[Array, "pop dim"]
    personal_best_fitness: Float[Array, " pop"]


def constriction_coefficient(
    cognitive: float | Float[Array, ""], social: float | Float[Array, ""]
) -> Float[Array, ""]:
    """The constriction coefficient of Clerc & Kennedy (2002) with ``kappa = 1``:
    ``chi = 2 / |2 - phi - sqrt(phi^2 - 4 phi)|`` with ``phi = c1 + c2 > 4``
    (``c1 = c2 = 2.05`` gives ``chi = 0.72984``)."""
    phi = cognitive + social
    return 2.0 / jnp.abs(2.0 - phi - jnp.sqrt(phi**2 - 4.0 * phi))


def ring_neighbour_best(personal_best_fitness: Float[Array, " pop"]) -> Int[Array, " pop"]:
    """The ring ("lbest", k = 2) neighbourhood best of each particle: the index of the
    fittest personal best among particles ``i - 1, i, i + 1`` (cyclic; ties prefer ``i``,
    then ``i - 1``; non-finite counts as ``-inf``)."""
    fitness = sanitize_fitness(personal_best_fitness)
    n = fitness.shape[0]
    # column k holds the fitness of particle i + offset[k]
    candidates = jnp.stack([fitness, jnp.roll(fitness, 1), jnp.roll(fitness, -1)], axis=1)
    offset = jnp.array([0, -1, 1])[jnp.argmax(candidates, axis=1)]
    return (jnp.arange(n) + offset) % n


def pso_velocity(
    velocities: Float[Array, "pop dim"],
    positions: Float[Array, "pop dim"],
    personal_best: Float[Array, "pop dim"],
    neighbour_best: Float[Array, "pop dim"],
    r1: Float[Array, "pop dim"],
    r2: Float[Array, "pop dim"],
    inertia: float | Float[Array, ""],
    cognitive: float | Float[Array, ""],
    social: float | Float[Array, ""],
    constriction: float | Float[Array, ""],
    max_velocity: float | Float[Array, ""] | None,
) -> Float[Array, "pop dim"]:
    """The PSO velocity update, per coordinate:
    ``v' = chi * (w v + c1 r1 (p - x) + c2 r2 (g - x))``, then clipped to
    ``[-max_velocity, max_velocity]`` if ``max_velocity`` is given (Eberhart's ``V_max``).

    With ``chi = 1`` this is Shi & Eberhart's (1998) inertia-weight rule; with ``w = 1`` and
    ``chi`` from :func:`constriction_coefficient` it is Clerc & Kennedy's (2002) constricted
    rule; ``w = chi = 1`` is the original of Kennedy & Eberhart (1995).

    Args:
        velocities, positions, personal_best: ``v``, ``x``, ``p``, each ``[pop, D]``.
        neighbour_best: each particle's neighbourhood best ``g``, ``[pop, D]``.
        r1, r2: uniform ``[0, 1)`` draws, ``[pop, D]`` (or ``[pop, 1]``: one per particle).
        inertia, cognitive, social, constriction: ``w``, ``c1``, ``c2``, ``chi``.
        max_velocity: the clamp, or ``None``.
    """
    velocities = constriction * (
        inertia * velocities
        + cognitive * r1 * (personal_best - positions)
        + social * r2 * (neighbour_best - positions)
    )
    if max_velocity is not None:
        velocities = jnp.clip(velocities, -max_velocity, max_velocity)
    return velocities


class PSO(PopulationAlgorithm[PSOState]):
    """Particle swarm optimisation (Kennedy & Eberhart, 1995), maximising.

    Each particle keeps a position ``x``, a velocity ``v`` and its personal best ``p``; ``g``
    is the best personal best of the swarm (``topology="global"``) or of the particle and its
    two ring neighbours (``topology="ring"``, :func:`ring_neighbour_best`). The velocity rule
    (:func:`pso_velocity`) is Clerc & Kennedy's (2002) constriction
    (``velocity_rule="constriction"``: ``chi`` from ``c1 + c2``, defaults ``c1 = c2 = 2.05``,
    ``chi = 0.7298``) or Shi & Eberhart's (1998) inertia weight (``"inertia"``: defaults
    ``w = 0.7298``, ``c1 = c2 = 1.49618``, Eberhart & Shi's (2000) equivalent of the
    constriction defaults). ``r1, r2`` are drawn per particle and coordinate, or with
    ``per_particle_draws`` once per particle and shared by its coordinates (as evosax's
    ``PSO`` draws them: ``2 pop`` numbers instead of ``2 pop D``).

    Ordering. ``tell`` takes the evaluated positions with their fitness and updates the
    personal bests (a strictly better fitness replaces ``p``). The next ``ask`` moves the swarm
    with its key, ``v <- velocity rule`` (``g`` from the personal bests, ``r1, r2`` drawn from
    the key), ``x <- x + v``, and returns the moved positions; the first ``ask`` returns the
    initial swarm unmoved. So evaluate -> update bests -> move -> evaluate runs in the classical
    order, and as evosax orders it. Moving in ``ask``, from the carried state, rather than at
    the end of ``tell``, from the bests just updated, keeps XLA from copying the ``[pop, D]``
    arrays; ``tell`` takes the positions ``ask`` returned (those in the state) and writes only
    the personal bests.

    The swarm starts at ``x0 + init_std * N(0, I)`` (drawn in :meth:`init`; PSO papers draw
    uniformly in a box, which a neural genome does not have), with zero velocities
    (Engelbrecht, 2012, "Particle swarm optimization: velocity initialization"). :meth:`best`
    is the best position ever told. A non-finite fitness counts as ``-inf``: it never becomes a
    personal best.

    Args:
        pop_size: number of particles.
        velocity_rule: ``"constriction"`` (default) or ``"inertia"``.
        cognitive: ``c1``, positive; ``None`` uses the rule's default.
        social: ``c2``, positive; ``None`` uses the rule's default. With constriction,
            ``c1 + c2`` must exceed 4.
        inertia: ``w``, only with ``velocity_rule="inertia"``; ``None`` uses 0.7298.
        topology: ``"global"`` (default) or ``"ring"``.
        max_velocity: clamp on each velocity coordinate, positive, or ``None`` (no clamp).
        init_std: spread of the initial positions around ``x0``, positive.
        per_particle_draws: draw ``r1, r2`` once per particle instead of per coordinate.
    """

    tells_in_place = True

    pop_size: int = eqx.field(static=True)
    velocity_rule: str = eqx.field(static=True)
    topology: str = eqx.field(static=True)
    per_particle_draws: bool = eqx.field(static=True)
    cognitive: float
    social: float
    inertia: float
    max_velocity: float | None
    init_std: float

    def __init__(
        self,
        pop_size: int,
        velocity_rule: str = "constriction",
        cognitive: float | None = None,
        social: float | None = None,
        inertia: float | None = None,
        topology: str = "global",
        max_velocity: float | None = None,
        init_std: float = 1.0,
        per_particle_draws: bool = False,
    ):
        if velocity_rule not in VELOCITY_RULES:
            raise ValueError(
                f"velocity_rule must be one of {VELOCITY_RULES}, got {velocity_rule!r}"
            )
        constriction = velocity_rule == "constriction"
        if constriction and inertia is not None:
            raise ValueError(
                "inertia is only used with velocity_rule='inertia' (the constriction rule "
                "has no inertia weight)"
            )
        default_c = 2.05 if constriction else 1.49618
        self.pop_size = pop_size
        self.velocity_rule = velocity_rule
        self.topology = topology
        self.cognitive = default_c if cognitive is None else cognitive
        self.social = default_c if social is None else social
        self.inertia = 1.0 if constriction else (0.7298 if inertia is None else inertia)
        self.max_velocity = max_velocity
        self.init_std = init_std
        self.per_particle_draws = per_particle_draws

    def __check_init__(self):
        if self.topology not in TOPOLOGIES:
            raise ValueError(f"topology must be one of {TOPOLOGIES}, got {self.topology!r}")
        if self.topology == "ring":
            check_min_pop_size(self.pop_size, 3, "for a ring topology")
        check_positive("cognitive", self.cognitive)
        check_positive("social", self.social)
        check_positive("inertia", self.inertia)
        if self.max_velocity is not None:
            check_positive("max_velocity", self.max_velocity)
        check_positive("init_std", self.init_std)
        c1, c2 = self.cognitive, self.social
        if (
            self.velocity_rule == "constriction"
            and isinstance(c1, (int, float))
            and isinstance(c2, (int, float))
            and not c1 + c2 > 4
        ):
            raise ValueError(
                f"cognitive + social must exceed 4 for the constriction rule (Clerc & Kennedy, "
                f"2002), got {c1} + {c2} = {c1 + c2}"
            )

    @property
    def constriction(self) -> float | Float[Array, ""]:
        """``chi``: :func:`constriction_coefficient` of ``c1, c2``, or 1 for the inertia rule."""
        if self.velocity_rule == "constriction":
            return constriction_coefficient(self.cognitive, self.social)
        return 1.0

    def draws(
        self, key: PRNGKey, like: Float[Array, "pop dim"]
    ) -> tuple[Float[Array, "pop dim"], Float[Array, "pop dim"]]:
        """The random numbers one :meth:`ask` uses to move a swarm like ``like`` (its shape
        and dtype): ``r1, r2``, uniform ``[0, 1)``, ``[pop, D]`` each (the two halves of one
        ``[pop, 2 D]`` draw), or ``[pop, 1]`` with ``per_particle_draws``."""
        n = 1 if self.per_particle_draws else like.shape[1]
        r = uniform(key, (self.pop_size, 2 * n), like.dtype)
        return r[:, :n], r[:, n:]

    def neighbour_best(self, state: PSOState) -> Float[Array, "pop dim"]:
        """Each particle's attractor ``g``: the swarm's best personal best, or its ring
        neighbourhood's."""
        if self.topology == "ring":
            return state.personal_best[ring_neighbour_best(state.personal_best_fitness)]
        best = state.personal_best[jnp.argmax(sanitize_fitness(state.personal_best_fitness))]
        return jnp.broadcast_to(best[None], state.personal_best.shape)

    def _init(self, key, x0):
        swarm = initial_swarm(key, x0, self.pop_size, self.init_std)
        return PSOState(**with_personal_bests(swarm))

    def _ask(self, key, state):
        x = state.population
        r1, r2 = self.draws(key, x)
        velocities = pso_velocity(
            state.velocities,
            x,
            state.personal_best,
            self.neighbour_best(state),
            r1,
            r2,
            self.inertia,
            self.cognitive,
            self.social,
            self.constriction,
            self.max_velocity,
        )
        moved = state.generation > 0  # the first ask returns the initial swarm
        velocities = jnp.where(moved, velocities, state.velocities)
        x = jnp.where(moved, x + velocities, x)
        fitness = jnp.where(moved, -jnp.inf, state.fitness)
        return x, state.replace(population=x, fitness=fitness, velocities=velocities)

    def _tell(self, key, state, x, fitness):
        # x is state.population, as ask left it: tell writes no [pop, D] array but the
        # personal bests (so the template's keep-or-skip select costs nothing)
        del key
        state, _ = update_personal_bests(state, x, fitness)
        speed = jnp.sqrt(jnp.sum(state.velocities**2, axis=1))
        return state.replace(fitness=fitness), {"speed_mean": jnp.mean(speed)}
