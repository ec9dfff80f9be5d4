"""NSGA-III (Deb & Jain, 2014)."""

from __future__ import annotations

import math

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from evolax.algorithms.base import HIGHEST, PopulationAlgorithm
from evolax.algorithms.multiobjective.common import FrontState, RealCoded
from evolax.algorithms.unbatched import one_at_a_time
from evolax.pareto.reference_directions import simplex_lattice
from evolax.types import PRNGKey
from evolax.validation import check_positive_int

# vmapped over seeds, one system per LAPACK call (see evolax.algorithms.unbatched)
_solve = one_at_a_time(jnp.linalg.solve)


@chex.dataclass(frozen=True, kw_only=True)
class NSGA3State(FrontState):
    """A :class:`~evolax.algorithms.multiobjective.common.FrontState` with the normalisation
    NSGA-III carries from one generation to the next. Objective vectors here are in fitness
    units (maximised): the ideal point is the largest value seen in each objective.

    Attributes:
        niche: the reference direction each member is associated with, ``int32[pop]``.
        ideal: the best value of each objective seen so far, ``[m]`` (``-inf`` at first).
        worst: the worst finite value of each objective seen so far, ``[m]`` (``inf`` at
            first).
        extremes: row ``i`` is the extreme point of objective ``i`` (the point nearest its
            axis through the ideal point), kept across generations, ``[m, m]`` (``-inf`` rows
            at first).
        nadir: the nadir point of the last normalisation, ``[m]``: objectives are scaled by
            ``ideal - nadir``.
    """

    niche: Int[Array, " pop"]
    ideal: Float[Array, " m"]
    worst: Float[Array, " m"]
    extremes: Float[Array, "m m"]
    nadir: Float[Array, " m"]


class NSGA3(RealCoded, PopulationAlgorithm[NSGA3State]):
    """NSGA-III (Deb & Jain, 2014): non-dominated sorting, then niching around reference
    directions for the last front that fits.

    ``ask`` picks parents at random (binary tournaments between members drawn from random
    permutations, won at random: pymoo's unconstrained rule) and makes ``pop_size`` children
    by simulated binary crossover and mutation
    (:class:`~evolax.algorithms.multiobjective.common.RealCoded`; NSGA-III's defaults: crossover
    probability 1, SBX index 30). ``tell`` sorts parents and children into fronts and keeps
    the whole fronts that fit. It normalises the objectives by the ideal point (best seen so
    far) and the intercepts of the hyperplane through the extreme points, associates every
    member with the nearest reference direction (perpendicular distance) and fills the
    remaining places from the last front, one member at a time, in the niche with the fewest
    members kept so far (ties at random): the member nearest the direction if the niche is
    still empty, else a random one. Before the first ``tell``, ``ask`` returns the first
    population. The fitness is ``[pop, n_objectives]``, every objective maximised;
    :meth:`best` is the genome with the largest sum of objectives ever told.

    The normalisation is pymoo's, as studied by Blank, Deb & Roy (2019), where the paper
    leaves details open: the ideal point is the best seen in any generation; extreme points
    come from the first front together with the previous extreme points (translated
    objectives below 1e-3 count as 0); the nadir point falls back to the worst of the first
    front when the hyperplane is degenerate (singular, or an intercept at most 1e-6), is
    capped at the worst point ever seen, and takes the worst of the population in objectives
    whose range is at most 1e-6.

    Args:
        divisions: Das and Dennis's reference directions (:func:`~evolax.pareto.
            reference_directions.simplex_lattice`) have this many steps along each edge of
            the simplex; ``None``: the most whose ``C(divisions + m - 1, m - 1)`` directions
            do not outnumber ``pop_size`` (12 directions per edge, 91 in all, for 3
            objectives and 92 members, as in the paper).
        block_size: points compared at once by the non-dominated sort (memory
            ``O(block_size^2)``), and associated with the directions at once (memory
            ``O(block_size k)`` for ``k`` directions).
    """

    crossover_prob: float = 1.0
    crossover_eta: float = 30.0
    divisions: int | None = eqx.field(default=None, static=True)

    def __check_init__(self):
        if self.divisions is not None:
            check_positive_int("divisions", self.divisions)

    @property
    def reference_directions(self) -> Float[np.ndarray, "k m"]:
        """The reference directions, ``[k, m]`` (NumPy; each row sums to 1)."""
        divisions = self.divisions
        if divisions is None:
            m, divisions = self.n_objectives, 1
            while math.comb(divisions + m, m - 1) <= self.pop_size:
                divisions += 1
        return simplex_lattice(self.n_objectives, divisions)

    def _init(self, key, x0):
        n, m = self.pop_size, self.n_objectives
        return NSGA3State(
            **self.front_fields(key, x0),
            niche=jnp.zeros(n, jnp.int32),
            ideal=jnp.full(m, -jnp.inf, x0.dtype),
            worst=jnp.full(m, jnp.inf, x0.dtype),
            extremes=jnp.full((m, m), -jnp.inf, x0.dtype),
            nadir=jnp.full(m, -jnp.inf, x0.dtype),
        )

    def _ask(self, key, state):
        pick_key, child_key = jax.random.split(key)
        parents = random_parents(pick_key, self.pop_size)
        return self.next_population(child_key, state, parents), state

    def _tell(self, key, state, x, fitness):
        population, objectives, rank = self.merged(state, x, fitness)
        # NSGA-III's maths is written for minimised objectives
        f = -objectives
        finite = jnp.all(jnp.isfinite(f), axis=1)
        ideal, worst, extremes, nadir = hyperplane_normalisation(
            f, finite, finite & (rank == 0), -state.ideal, -state.worst, -state.extremes
        )
        directions = jnp.asarray(self.reference_directions, f.dtype)
        normalised = jnp.where(finite[:, None], normalise(f, ideal, nadir), 0.0)
        niche, distance = associate(normalised, directions, self.block_size)
        distance = jnp.where(finite, distance, jnp.inf)
        niche_key, hypervolume_key = jax.random.split(key)
        keep = niching_survivors(
            niche_key, rank, niche, distance, directions.shape[0], self.pop_size
        )
        new = state.replace(
            population=population[keep],
            fitness=objectives[keep],
            rank=rank[keep],
            niche=niche[keep],
            ideal=-ideal,
            worst=-worst,
            extremes=-extremes,
            nadir=-nadir,
        )
        return new, self.front_metrics(new, hypervolume_key)


def random_parents(key: PRNGKey, n: int) -> Int[Array, " pairs2"]:
    """``2 * ceil(n / 2)`` parent indices (the first half pairs with the second): each the
    random winner of a binary tournament between consecutive entries of random permutations
    of ``range(n)``, as pymoo's NSGA-III selects without constraints."""
    pairs = -(-n // 2)
    draws = 4 * pairs  # pairs x 2 parents x 2 contestants
    n_perms = -(-draws // n)
    u = jax.random.uniform(key, (n_perms * n + 2 * pairs,))  # one draw: a quick compile
    perms = jnp.argsort(u[: n_perms * n].reshape(n_perms, n), axis=1)
    contestants = perms.reshape(-1)[:draws].reshape(2 * pairs, 2)
    won = (u[n_perms * n :] < 0.5).astype(jnp.int32)
    winners = jnp.take_along_axis(contestants, won[:, None], axis=1)[:, 0]
    return winners.reshape(pairs, 2).T.reshape(-1)


def hyperplane_normalisation(
    f: Float[Array, "n m"],
    finite: Bool[Array, " n"],
    first_front: Bool[Array, " n"],
    ideal: Float[Array, " m"],
    worst: Float[Array, " m"],
    extremes: Float[Array, "m m"],
) -> tuple[Float[Array, " m"], Float[Array, " m"], Float[Array, "m m"], Float[Array, " m"]]:
    """NSGA-III's normalisation update for minimised objectives ``f`` (pymoo's
    ``HyperplaneNormalization``): the ideal and worst points over the finite rows and the
    previous ones, the extreme points (:func:`extreme_points`) among the previous ones and
    the ``first_front`` rows, and the nadir point (:func:`hyperplane_nadir`).

    Args:
        f: ``[n, m]``, minimised.
        finite: the rows to count, ``bool[n]``.
        first_front: the non-dominated finite rows, ``bool[n]``.
        ideal, worst: the previous ideal and worst points, ``[m]`` (``inf`` and ``-inf`` for
            none).
        extremes: the previous extreme points, ``[m, m]`` (``inf`` rows for none).
    Returns:
        ``(ideal, worst, extremes, nadir)``.
    """
    rows = finite[:, None]
    ideal = jnp.minimum(ideal, jnp.min(jnp.where(rows, f, jnp.inf), axis=0))
    worst = jnp.maximum(worst, jnp.max(jnp.where(rows, f, -jnp.inf), axis=0))
    extremes = extreme_points(f, first_front, ideal, extremes)
    worst_of_front = jnp.max(jnp.where(first_front[:, None], f, -jnp.inf), axis=0)
    worst_of_population = jnp.max(jnp.where(rows, f, -jnp.inf), axis=0)
    nadir = hyperplane_nadir(extremes, ideal, worst, worst_of_front, worst_of_population)
    return ideal, worst, extremes, nadir


def extreme_points(
    f: Float[Array, "n m"],
    candidates: Bool[Array, " n"],
    ideal: Float[Array, " m"],
    previous: Float[Array, "m m"],
) -> Float[Array, "m m"]:
    """For each objective ``i``, the point among ``previous`` and the ``candidates`` rows of
    ``f`` (minimised) that minimises the achievement scalarising function
    ``max_j (f_j - ideal_j) / w_j`` with ``w = e_i`` (zeros as ``1e-6``); translated
    objectives below ``1e-3`` count as 0, and ``previous`` wins ties (pymoo).

    Returns:
        ``[m, m]``, row ``i`` the extreme point of objective ``i``.
    """
    m = f.shape[1]
    pool = jnp.concatenate([previous, jnp.where(candidates[:, None], f, jnp.inf)])
    shifted = pool - ideal[None]
    shifted = jnp.where(shifted < 1e-3, 0.0, shifted)
    weights = jnp.where(jnp.eye(m, dtype=bool), 1.0, 1e6).astype(f.dtype)
    asf = jnp.max(shifted[None, :, :] * weights[:, None, :], axis=2)  # [m, m + n]
    return pool[jnp.argmin(asf, axis=1)]


def hyperplane_nadir(
    extremes: Float[Array, "m m"],
    ideal: Float[Array, " m"],
    worst: Float[Array, " m"],
    worst_of_front: Float[Array, " m"],
    worst_of_population: Float[Array, " m"],
) -> Float[Array, " m"]:
    """The nadir point for minimised objectives: ``ideal`` plus the intercepts of the
    hyperplane through the ``extremes`` (translated by ``ideal``), each capped at ``worst``;
    ``worst_of_front`` instead when the system is singular, does not solve to a relative
    ``max(1e-5, 100 eps)`` or gives an intercept at most ``1e-6``; and
    ``worst_of_population`` in objectives whose range is still at most ``1e-6``.

    Returns:
        ``[m]``.
    """
    m = extremes.shape[0]
    translated = extremes - ideal[None]
    ones = jnp.ones(m, extremes.dtype)
    safe = jnp.where(jnp.all(jnp.isfinite(translated)), translated, jnp.eye(m, dtype=ones.dtype))
    plane = _solve(safe, ones)
    intercepts = 1.0 / plane
    tolerance = max(1e-5, 100 * float(jnp.finfo(extremes.dtype).eps))
    residual = jnp.abs(jnp.matmul(safe, plane, precision=HIGHEST) - ones)
    sound = (
        jnp.all(jnp.isfinite(translated))
        & jnp.all(jnp.isfinite(plane))
        & jnp.all(residual <= 1e-8 + tolerance)
        & jnp.all(intercepts > 1e-6)
    )
    nadir = jnp.where(sound, jnp.minimum(ideal + intercepts, worst), worst_of_front)
    return jnp.where(nadir - ideal <= 1e-6, worst_of_population, nadir)


def normalise(
    f: Float[Array, "n m"], ideal: Float[Array, " m"], nadir: Float[Array, " m"]
) -> Float[Array, "n m"]:
    """``(f - ideal) / (nadir - ideal)``, a zero range counting as ``1e-12`` (pymoo)."""
    span = nadir - ideal
    return (f - ideal[None]) / jnp.where(span == 0, 1e-12, span)[None]


def perpendicular_distance(
    points: Float[Array, "n m"], directions: Float[Array, "k m"]
) -> Float[Array, "n k"]:
    """The distance from each point to each line through the origin along a direction
    (``|p - (p . u) u|`` with ``u`` the unit direction, as pymoo computes it, not
    ``sqrt(|p|^2 - (p . u)^2)``, which cancels near the line)."""
    unit = directions / jnp.linalg.norm(directions, axis=1, keepdims=True)
    along = jnp.matmul(points, unit.T, precision=HIGHEST)  # [n, k]
    squared = jnp.zeros(along.shape, along.dtype)
    for j in range(points.shape[1]):  # one objective at a time: no [n, k, m] array
        gap = points[:, j : j + 1] - along * unit[None, :, j]
        squared = squared + gap * gap
    return jnp.sqrt(squared)


def associate(
    points: Float[Array, "n m"], directions: Float[Array, "k m"], batch_size: int = 512
) -> tuple[Int[Array, " n"], Float[Array, " n"]]:
    """Each point's nearest direction (:func:`perpendicular_distance`; the first on ties)
    and its distance to it, ``batch_size`` points at once (memory ``O(batch_size k)``).

    Returns:
        ``(int32[n], [n])``.
    """

    def nearest(rows):
        distance = perpendicular_distance(rows, directions)
        return jnp.argmin(distance, axis=1).astype(jnp.int32), jnp.min(distance, axis=1)

    if points.shape[0] <= batch_size:
        return nearest(points)
    niche, distance = jax.lax.map(lambda row: nearest(row[None]), points, batch_size=batch_size)
    return niche[:, 0], distance[:, 0]


def niching_survivors(
    key: PRNGKey,
    rank: Int[Array, " n"],
    niche: Int[Array, " n"],
    distance: Float[Array, " n"],
    n_niches: int,
    n_survive: int,
) -> Int[Array, " n_survive"]:
    """The indices of NSGA-III's ``n_survive`` survivors: every front below the last one
    that fits, then members of that last front chosen one at a time from the niche (a
    reference direction) with the fewest members kept so far, ties at random: its member
    nearest the direction (``distance``) if it has none yet, else a random one.

    Done at once: the ``t``-th member (0-based) a niche gives up is taken when the niche
    holds ``count + t`` members, ``count`` those from earlier fronts, so the sequential rule
    takes the last front's members in increasing order of ``count + t`` with random ties;
    within a niche the nearest member goes first when ``count = 0``, the rest in random
    order.

    Args:
        key: PRNG key for the ties.
        rank: each member's front, ``int[n]``.
        niche: each member's reference direction, ``int[n]``.
        distance: each member's distance to its direction, ``[n]``.
        n_niches: the number of reference directions.
        n_survive: how many survive, at most ``n``.
    Returns:
        ``int32[n_survive]``, the earlier fronts first.
    """
    last = jnp.sort(rank)[n_survive - 1]
    before, in_last = rank < last, rank == last
    count = jax.ops.segment_sum(before.astype(jnp.int32), niche, n_niches)[niche]
    # each last-front niche's nearest member (ties at random) goes first if the niche is empty
    shuffle, ties = jax.random.uniform(key, (2, *rank.shape))
    nearest = jax.ops.segment_min(jnp.where(in_last, distance, jnp.inf), niche, n_niches)
    tied = in_last & (distance == nearest[niche])
    first_tied = jax.ops.segment_min(jnp.where(tied, shuffle, jnp.inf), niche, n_niches)
    goes_first = tied & (shuffle == first_tied[niche]) & (count == 0)
    # t: the member's place in its niche's queue
    queue = jnp.lexsort((jnp.where(goes_first, -1.0, shuffle), niche, ~in_last))
    sorted_niche = niche[queue]
    index = jnp.arange(rank.shape[0])
    starts = (index == 0) | (sorted_niche != jnp.roll(sorted_niche, 1))
    place = index - jax.lax.cummax(jnp.where(starts, index, 0))
    place = jnp.zeros_like(place).at[queue].set(place)
    level = jnp.where(in_last, count + place, 0)
    group = jnp.where(before, 0, jnp.where(in_last, 1, 2))
    return jnp.lexsort((ties, level, group))[:n_survive]
