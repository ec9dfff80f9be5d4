"""Particle swarm optimisation (Kennedy & Eberhart, 1995) with the constriction factor (Clerc &
Kennedy, 2002) or an inertia weight (Shi & Eberhart, 1998)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import (
    Algorithm,
    check_fitness,
    flatten_population,
    unflatten_population,
    update_best,
)
from evolax.algorithms.shaping import sanitize_fitness
from evolax.types import Fitness, Metrics, Params, Population, PRNGKey
from evolax.validation import check_positive, check_positive_int

VELOCITY_RULES = ("constriction", "inertia")
TOPOLOGIES = ("global", "ring")


@chex.dataclass(frozen=True)
class PSOState:
    """PSO state: the swarm.

    Attributes:
        positions: ``f32[pop, D]`` (those :meth:`PSO.ask` last returned).
        velocities: ``f32[pop, D]`` (zero at the start).
        personal_best: each particle's best position so far, ``f32[pop, D]``.
        personal_best_fitness: its fitness, ``f32[pop]`` (``-inf`` before the first ``tell``).
        best_genome: the global best position ever told, a pytree (``x0`` before the first
            ``tell``); what :meth:`PSO.best` returns.
        best_fitness: its fitness, ``f32[]``.
        generation: number of ``tell`` calls so far, ``i32[]``.
    """

    positions: Float[Array, "pop dim"]
    velocities: Float[Array, "pop dim"]
    personal_best: Float[Array, "pop dim"]
    personal_best_fitness: Float[Array, " pop"]
    best_genome: Params
    best_fitness: Float[Array, ""]
    generation: Int[Array, ""]


def constriction_coefficient(
    cognitive: float | Float[Array, ""], social: float | Float[Array, ""]
) -> Float[Array, ""]:
    """The constriction coefficient of Clerc & Kennedy (2002) with ``kappa = 1``:
    ``chi = 2 / |2 - phi - sqrt(phi^2 - 4 phi)|`` with ``phi = c1 + c2 > 4``
    (``c1 = c2 = 2.05`` gives ``chi = 0.72984``)."""
    phi = jnp.asarray(cognitive + social, jnp.float32)
    return 2.0 / jnp.abs(2.0 - phi - jnp.sqrt(phi**2 - 4.0 * phi))


def ring_neighbour_best(personal_best_fitness: Float[Array, " pop"]) -> Int[Array, " pop"]:
    """The ring ("lbest", k = 2) neighbourhood best of each particle: the index of the
    fittest personal best among particles ``i - 1, i, i + 1`` (cyclic; ties prefer ``i``,
    then ``i - 1``; NaN counts as ``-inf``)."""
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
        velocities, positions, personal_best: ``v``, ``x``, ``p``, each ``f32[pop, D]``.
        neighbour_best: each particle's neighbourhood best ``g``, ``f32[pop, D]``.
        r1, r2: uniform ``[0, 1)`` draws, ``f32[pop, D]``.
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


class PSO(Algorithm):
    """Particle swarm optimisation (Kennedy & Eberhart, 1995), maximising.

    Each particle keeps a position ``x``, a velocity ``v`` and its personal best ``p``; ``g``
    is the global best (``topology="global"``) or the best personal best among the particle
    and its two ring neighbours (``topology="ring"``, :func:`ring_neighbour_best`). The
    velocity rule (:func:`pso_velocity`) is Clerc & Kennedy's (2002) constriction
    (``velocity_rule="constriction"``: ``chi`` from ``c1 + c2``, defaults ``c1 = c2 = 2.05``,
    ``chi = 0.7298``) or Shi & Eberhart's (1998) inertia weight (``"inertia"``: defaults
    ``w = 0.7298``, ``c1 = c2 = 1.49618``, Eberhart & Shi's (2000) equivalent of the
    constriction defaults).

    Ordering. ``tell`` takes the evaluated positions and updates the personal bests (strictly
    better fitness replaces ``p``) and the global best. The move itself,
    ``v <- velocity rule; x <- x + v``, needs random numbers and ``tell`` gets no key, so it
    happens at the start of the next ``ask`` (with that call's key), before the positions are
    returned. The sequence evaluate -> update bests -> move -> evaluate is the classical one.
    The first ``ask`` returns the initial positions unmoved.

    The swarm starts at ``x0 + init_std * N(0, I)`` (drawn in :meth:`init`; PSO papers draw
    uniformly in a box, which a neural genome does not have), with zero velocities
    (Engelbrecht, 2012, "Particle swarm optimization: velocity initialization"). :meth:`best`
    is the global best position ever told. NaN fitness counts as ``-inf``: it never becomes a
    personal or global best.

    Args:
        pop_size: number of particles.
        velocity_rule: ``"constriction"`` (default) or ``"inertia"``.
        cognitive: ``c1``, positive; ``None`` uses the rule's default.
        social: ``c2``, positive; ``None`` uses the rule's default. With constriction,
            ``c1 + c2`` must exceed 4.
        inertia: ``w``, only with ``velocity_rule="inertia"``; ``None`` uses 0.7298.
        topology: ``"global"`` (default) or ``"ring"``.
        max_velocity: clamp on each velocity coordinate, positive, or ``None`` (no clamp).
        init_std: std of the initial positions around ``x0``, positive.
    """

    pop_size: int = eqx.field(static=True)
    velocity_rule: str = eqx.field(static=True)
    topology: str = eqx.field(static=True)
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

    def __check_init__(self):
        check_positive_int("pop_size", self.pop_size)
        if self.topology not in TOPOLOGIES:
            raise ValueError(f"topology must be one of {TOPOLOGIES}, got {self.topology!r}")
        if self.topology == "ring" and self.pop_size < 3:
            raise ValueError(
                f"pop_size must be at least 3 for a ring topology, got {self.pop_size}"
            )
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

    def init(self, key: PRNGKey, x0: Params) -> PSOState:
        x0 = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), x0)
        flat, _ = ravel_pytree(x0)
        positions = flat[None] + self.init_std * jax.random.normal(
            key, (self.pop_size, flat.shape[0])
        )
        return PSOState(
            positions=positions,
            velocities=jnp.zeros_like(positions),
            personal_best=positions,
            personal_best_fitness=jnp.full(self.pop_size, -jnp.inf, jnp.float32),
            best_genome=x0,
            best_fitness=jnp.array(-jnp.inf, jnp.float32),
            generation=jnp.zeros([], jnp.int32),
        )

    def draws(
        self, key: PRNGKey, dim: int
    ) -> tuple[Float[Array, "pop dim"], Float[Array, "pop dim"]]:
        """The random numbers one :meth:`ask` uses: ``r1, r2``, uniform ``[0, 1)``,
        ``f32[pop, D]`` each (the two halves of one ``f32[pop, 2 D]`` draw)."""
        r = jax.random.uniform(key, (self.pop_size, 2 * dim))
        return r[:, :dim], r[:, dim:]

    def neighbour_best(self, state: PSOState) -> Float[Array, "pop dim"]:
        """Each particle's attractor ``g``: the global best, or its ring neighbourhood's best."""
        if self.topology == "ring":
            return state.personal_best[ring_neighbour_best(state.personal_best_fitness)]
        best, _ = ravel_pytree(state.best_genome)
        return jnp.broadcast_to(best[None], state.positions.shape)

    def ask(self, key: PRNGKey, state: PSOState) -> tuple[Population, PSOState]:
        r1, r2 = self.draws(key, state.positions.shape[1])
        velocities = pso_velocity(
            state.velocities,
            state.positions,
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
        moved = state.generation > 0  # the first ask evaluates the initial swarm
        velocities = jnp.where(moved, velocities, state.velocities)
        positions = jnp.where(moved, state.positions + velocities, state.positions)
        new_state = state.replace(positions=positions, velocities=velocities)  # type: ignore[attr-defined]
        return unflatten_population(positions, state.best_genome), new_state

    def tell(
        self, state: PSOState, population: Population, fitness: Fitness
    ) -> tuple[PSOState, Metrics]:
        fitness = sanitize_fitness(check_fitness(fitness, self.pop_size))
        positions = flatten_population(population)
        improved = fitness > state.personal_best_fitness
        best_genome, best_fitness = update_best(
            state.best_genome, state.best_fitness, positions, fitness
        )
        new_state = state.replace(  # type: ignore[attr-defined]
            positions=positions,
            personal_best=jnp.where(improved[:, None], positions, state.personal_best),
            personal_best_fitness=jnp.where(improved, fitness, state.personal_best_fitness),
            best_genome=best_genome,
            best_fitness=best_fitness,
            generation=state.generation + 1,
        )
        speed = jnp.sqrt(jnp.sum(state.velocities**2, axis=1))
        return new_state, {"best_fitness": best_fitness, "speed_mean": jnp.mean(speed)}

    def best(self, state: PSOState) -> Params:
        return state.best_genome
