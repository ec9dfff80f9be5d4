"""What the genetic algorithms share: SimpleGA's generation (Such et al., 2017, algorithm 1:
truncation selection, Gaussian mutation, elitism) and its first population around ``x0``, the
checks of their sizes, and the mutation-std pieces of SAMR-GA, GESMR-GA and MR15-GA (Kumar,
Liu, Miikkulainen & Stone, 2022; Rechenberg, 1973)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, TypeVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from evolax.algorithms.base import PopulationAlgorithm, PopulationState, normal
from evolax.algorithms.shaping import sanitize_fitness
from evolax.types import PRNGKey
from evolax.validation import (
    check_in_interval,
    check_non_negative,
    check_positive,
    check_positive_int,
)

# ---- SimpleGA's generation ----------------------------------------------------------------


def next_generation(
    population: Float[Array, "pop dim"],
    fitness: Float[Array, " pop"],
    parent_choice: Int[Array, " children"],
    noise: Float[Array, "children dim"],
    n_parents: int,
    n_elites: int,
    mutation_std: float | Float[Array, ""],
) -> Float[Array, "pop dim"]:
    """One generation of Such et al. (2017), algorithm 1, on a flat population.

    Ranks ``population`` by ``fitness`` (best first; non-finite counts as ``-inf``; ties by
    position), keeps the top ``n_elites`` unmutated in rows ``0 .. n_elites - 1`` and fills the
    other rows with ``parents[parent_choice] + mutation_std * noise``, where ``parents`` are the
    top ``n_parents`` (truncation selection).

    Args:
        population: ``[pop, D]``.
        fitness: ``[pop]``, maximised.
        parent_choice: index into the ranked parents of each child, ``i32[pop - n_elites]``
            with values in ``[0, n_parents)``.
        noise: standard-normal mutation directions, ``[pop - n_elites, D]``.
        n_parents: truncation size ``T``.
        n_elites: number of elites copied unchanged.
        mutation_std: the mutation power ``sigma``.

    Returns:
        The next population, ``[pop, D]``.
    """
    order = jnp.argsort(-sanitize_fitness(fitness), stable=True)  # best first
    parents = population[order[:n_parents]]
    children = parents[parent_choice] + mutation_std * noise
    return jnp.concatenate([population[order[:n_elites]], children])


def unevaluated(x0: Float[Array, " dim"], pop_size: int) -> dict[str, Array]:
    """The ``population`` and ``fitness`` of a GA's state before its first ``tell``: every
    row ``x0`` (``[pop, D]``), every fitness ``-inf`` (``[pop]``)."""
    return dict(
        population=jnp.broadcast_to(x0[None], (pop_size, x0.shape[0])),
        fitness=jnp.full(pop_size, -jnp.inf, x0.dtype),
    )


def evaluated(fitness: Float[Array, " pop"]) -> Bool[Array, ""]:
    """Whether a generation with a finite fitness has been told (before it, every fitness is
    ``-inf`` and every row of the population is ``x0``)."""
    return jnp.any(fitness > -jnp.inf)


S = TypeVar("S", bound=PopulationState)


class TruncationGA(PopulationAlgorithm[S]):
    """A GA on SimpleGA's generation (:func:`next_generation`): the ``n_elites`` best members
    kept unmutated, every other row a parent drawn uniformly from the ``n_parents`` best plus a
    Gaussian mutation; until a generation has been told, ``x0 + init_std * N(0, I)`` around
    the start point. A member adds its fields and says which mutation std each child gets.

    Args:
        pop_size: number of members, including the elites.
        n_parents: truncation size ``T``, in ``[1, pop_size]``; ``None`` uses
            ``max(1, pop_size // 2)``.
        n_elites: members copied unmutated, in ``[0, n_parents]`` and below ``pop_size``.
    """

    if TYPE_CHECKING:  # a member's field, after its own (an AbstractVar would move it first)
        init_std: float
    pop_size: int = eqx.field(static=True)
    n_parents: int = eqx.field(static=True, default=None)
    n_elites: int = eqx.field(static=True, default=1)
    parents_divisor: ClassVar[int] = 2

    def __post_init__(self):
        """Resolve ``n_parents`` and check the sizes, before any member's own checks."""
        self.n_parents = default_n_parents(self.n_parents, self.pop_size, self.parents_divisor)
        check_ga_sizes(self.pop_size, self.n_parents, self.n_elites)

    def _generation_draws(
        self, key: PRNGKey, like: Float[Array, " dim"]
    ) -> tuple[Int[Array, " children"], Float[Array, "pop dim"]]:
        """The random numbers of one generation for genomes like ``like`` (a flat genome,
        ``[D]``: its size and dtype): each child's parent rank (``i32[pop - n_elites]``,
        uniform in ``[0, n_parents)`` as random bits modulo ``n_parents``) and standard-normal
        noise (``[pop, D]``; rows ``n_elites:`` mutate children, all rows perturb ``x0`` in
        the first generation)."""
        choice_key, noise_key = jax.random.split(key)
        bits = jax.random.bits(choice_key, (self.pop_size - self.n_elites,), jnp.uint32)
        choice = (bits % jnp.uint32(self.n_parents)).astype(jnp.int32)
        return choice, normal(noise_key, (self.pop_size, like.shape[0]), like)

    def _generation(
        self,
        state: S,
        parent_choice: Int[Array, " children"],
        noise: Float[Array, "pop dim"],
        mutation_std: float | Float[Array, ""] | Float[Array, "children 1"],
    ) -> Float[Array, "pop dim"]:
        """What ``ask`` returns: :func:`next_generation` of the last evaluated population
        (the children mutated by ``mutation_std * noise[n_elites:]``), or, until a generation
        has been told (:func:`evaluated`), the first generation ``x0 + init_std * noise``
        around ``x0 = population[0]``, whose row 0 is ``x0`` itself with elitism (``n_elites
        >= 1``), so the start point is never lost."""
        x0 = state.population[0]  # every row is x0 until a generation has been told
        children = next_generation(
            state.population,
            state.fitness,
            parent_choice,
            noise[self.n_elites :],
            self.n_parents,
            self.n_elites,
            mutation_std,
        )
        first = x0[None] + self.init_std * noise
        if self.n_elites:
            first = first.at[0].set(x0)
        return jnp.where(evaluated(state.fitness), children, first)


def inherit(
    values: Float[Array, "pop k"],
    fitness: Float[Array, " pop"],
    parent_choice: Int[Array, " children"],
    n_parents: int,
    n_elites: int,
) -> Float[Array, "pop k"]:
    """Each next-generation row's parent's ``values`` (an elite's own): the selection of
    :func:`next_generation` applied, without mutation, to values the members carry (their own
    mutation std, their fitness)."""
    unmoved = jnp.zeros((parent_choice.shape[0], values.shape[1]), values.dtype)
    return next_generation(values, fitness, parent_choice, unmoved, n_parents, n_elites, 0.0)


# ---- sizes --------------------------------------------------------------------------------


def default_n_parents(n_parents: int | None, pop_size: int, divisor: int) -> int:
    """``n_parents``, or when it is ``None`` (and ``pop_size`` an integer) the default
    truncation size ``max(1, pop_size // divisor)``; ``None`` is returned as it is when
    ``pop_size`` is not an integer, for the size checks to reject."""
    if n_parents is None and isinstance(pop_size, int):
        return max(1, pop_size // divisor)
    return n_parents  # None only with a bad pop_size, which the size checks reject


def check_ga_sizes(pop_size: int, n_parents: int, n_elites: int) -> None:
    """Raise unless ``n_parents`` and ``n_elites`` fit ``pop_size`` (``1 <= n_parents <=
    pop_size``, ``0 <= n_elites <= n_parents``, ``n_elites < pop_size``) and ``pop_size`` is
    a positive integer."""
    sized = isinstance(pop_size, int) and pop_size >= 1
    check_positive_int("n_parents", n_parents)
    if sized and n_parents > pop_size:
        raise ValueError(f"n_parents must be in [1, pop_size] = [1, {pop_size}], got {n_parents}")
    if (
        isinstance(n_elites, bool)
        or not isinstance(n_elites, int)
        or not 0 <= n_elites <= n_parents
    ):
        raise ValueError(
            f"n_elites must be an integer in [0, n_parents] = [0, {n_parents}], got {n_elites!r}"
        )
    if sized and n_elites >= pop_size:
        raise ValueError(
            f"n_elites must be below pop_size ({pop_size}) to leave room for children, "
            f"got {n_elites}"
        )
    check_positive_int("pop_size", pop_size)


# ---- mutation stds ------------------------------------------------------------------------


def check_std_bounds(std_min: float, std_max: float | None) -> None:
    """Raise unless ``std_min >= 0`` and ``std_max`` is ``None`` or a number ``>= std_min``."""
    check_non_negative("std_min", std_min)
    if std_max is not None:
        check_positive("std_max", std_max)
        if isinstance(std_min, (int, float)) and isinstance(std_max, (int, float)):
            if std_max < std_min:
                raise ValueError(f"std_max must be >= std_min = {std_min}, got {std_max}")


def check_initial_stds(low: float, high: float) -> None:
    """Raise unless ``0 < mutation_std_low <= mutation_std_high``."""
    check_positive("mutation_std_low", low)
    check_positive("mutation_std_high", high)
    if isinstance(low, (int, float)) and isinstance(high, (int, float)) and high < low:
        raise ValueError(f"mutation_std_high must be >= mutation_std_low = {low}, got {high}")


def check_std_evolution(
    low: float,
    high: float,
    std_meta: float,
    std_min: float,
    std_max: float | None,
    init_std: float,
) -> None:
    """Raise unless the settings of evolving mutation stds (SAMR, GESMR) hold: the initial
    stds (:func:`check_initial_stds`), ``std_meta >= 1``, the bounds
    (:func:`check_std_bounds`) and a positive ``init_std``."""
    check_initial_stds(low, high)
    check_in_interval("std_meta", std_meta, 1, float("inf"), high_open=True)
    check_std_bounds(std_min, std_max)
    check_positive("init_std", init_std)


class EvolvingStdGA(TruncationGA[S]):
    """A :class:`TruncationGA` whose mutation stds evolve with the genomes (SAMR-GA, GESMR-GA):
    the initial stds log-spaced from ``mutation_std_low`` to ``mutation_std_high``, mutated by
    ``std_meta ** U(-1, 1)`` and clipped to ``[std_min, std_max]``. Kumar et al.'s defaults.

    Args:
        mutation_std_low: the smallest initial mutation std, positive.
        mutation_std_high: the largest initial mutation std, ``>= mutation_std_low``; the
            initial stds are log-spaced between the two (equal bounds give one std).
        std_meta: the factor ``beta`` of the std mutation ``sigma * beta ** U(-1, 1)``, >= 1.
        std_min: lower bound of every mutated std, ``>= 0``.
        std_max: upper bound of every mutated std, ``>= std_min``; ``None`` for none.
        init_std: spread of the first generation around ``x0``, positive.
    """

    mutation_std_low: float = 1e-3
    mutation_std_high: float = 1e3
    std_meta: float = 2.0
    std_min: float = 0.0
    std_max: float | None = None
    init_std: float = 1.0

    def __check_init__(self):
        check_std_evolution(
            self.mutation_std_low,
            self.mutation_std_high,
            self.std_meta,
            self.std_min,
            self.std_max,
            self.init_std,
        )

    def _healthy(self, state):
        """Finite, non-negative mutation stds."""
        return sound_stds(state.mutation_std)


def log_spaced(low, high, n: int, like: Array) -> Float[Array, " n"]:
    """``n`` values from ``low`` to ``high`` in geometric progression (``low`` if ``n == 1``),
    in ``like``'s dtype: ``low * (high / low) ** linspace(0, 1, n)``."""
    steps = jnp.linspace(0.0, 1.0, n, dtype=like.dtype)
    return jnp.asarray(low, like.dtype) * (jnp.asarray(high, like.dtype) / low) ** steps


def geometric_mean(values: Float[Array, " n"]) -> Float[Array, ""]:
    """``exp(mean(log(values)))`` of positive values (0 if one of them is 0): the summary of a
    population of mutation stds that Kumar et al. plot."""
    return jnp.exp(jnp.mean(jnp.log(values)))


def sound_stds(std: Float[Array, "..."]) -> Bool[Array, ""]:
    """Whether every mutation std is finite and non-negative (a GA's ``_healthy``)."""
    return jnp.all(jnp.isfinite(std) & (std >= 0))
