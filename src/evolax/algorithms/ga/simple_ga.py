"""A simple genetic algorithm: truncation selection, Gaussian mutation, elitism (Such et al.,
2017, "Deep Neuroevolution: Genetic Algorithms are a Competitive Alternative for Training Deep
Neural Networks for Reinforcement Learning")."""

from __future__ import annotations

from typing import ClassVar

import chex
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import PopulationState
from evolax.algorithms.ga.common import TruncationGA, unevaluated
from evolax.algorithms.ga.common import next_generation as next_generation  # its old home
from evolax.types import PRNGKey
from evolax.validation import check_positive


@chex.dataclass(frozen=True, kw_only=True)
class SimpleGAState(PopulationState):
    """SimpleGA state: ``population`` is the last evaluated generation (``[pop, D]``, every
    row ``x0`` before the first ``tell``) and ``fitness`` its fitness (``[pop]``, non-finite
    values as ``-inf``; all ``-inf`` before the first ``tell``)."""


class SimpleGA(TruncationGA[SimpleGAState]):
    """The deep-neuroevolution GA of Such et al. (2017), algorithm 1.

    Each generation, the top ``n_parents`` (``T``) of the last evaluated population become
    parents; every child is a uniformly chosen parent plus ``mutation_std * N(0, I)``, and the
    best ``n_elites`` members are copied unmutated into the first rows (the paper keeps one
    elite). There is no crossover. (evosax's ``SimpleGA`` is this GA with ``n_elites = 0``
    and ``n_parents = pop_size // 2``: it mutates every child, elites included.)

    Elite fitness is re-measured: the elites are part of the population ``ask`` returns, so
    (through the trainer) they are evaluated again every generation, and selection uses that
    fresh fitness, never a stored one. On a noisy task a lucky evaluation cannot keep a member
    elite forever; this is the role of the paper's extra elite evaluations (it re-evaluates the
    top-10 candidates on 30 episodes), which this ask/tell version leaves to the trainer's
    ``n_repeats``.

    Until a generation with a finite fitness has been told, ``ask`` returns ``x0 + init_std *
    N(0, I)`` for every row, except that with elitism (``n_elites >= 1``) row 0 is ``x0``
    itself, so the start point is never lost.

    :meth:`best` is the best genome ever told, with its single evaluation (on a noisy task,
    re-test it). A non-finite fitness counts as ``-inf``: such a member is never a parent or
    elite ahead of a finite one.

    Args:
        n_parents: truncation size ``T``, in ``[1, pop_size]``; ``None`` uses
            ``max(1, pop_size // 5)``.
        mutation_std: the mutation power ``sigma``, positive.
        init_std: spread of the first generation around ``x0``; ``None`` uses
            ``mutation_std``.
    """

    mutation_std: float = 0.1
    init_std: float = None  # type: ignore[assignment]  # None: mutation_std
    parents_divisor: ClassVar[int] = 5

    def __post_init__(self):
        super().__post_init__()
        if self.init_std is None:
            self.init_std = self.mutation_std

    def __check_init__(self):
        check_positive("mutation_std", self.mutation_std)
        check_positive("init_std", self.init_std)

    def draws(
        self, key: PRNGKey, like: Float[Array, " dim"]
    ) -> tuple[Int[Array, " children"], Float[Array, "pop dim"]]:
        """The random numbers one :meth:`ask` uses for genomes like ``like`` (a flat genome,
        ``[D]``): each child's parent rank and the standard-normal noise
        (:meth:`~evolax.algorithms.ga.common.TruncationGA._generation_draws`)."""
        return self._generation_draws(key, like)

    def _init(self, key, x0):
        del key
        return SimpleGAState(**unevaluated(x0, self.pop_size))

    def _ask(self, key, state):
        choice, noise = self.draws(key, state.population[0])
        return self._generation(state, choice, noise, self.mutation_std), state

    def _tell(self, key, state, x, fitness):
        del key
        return state.replace(population=x, fitness=fitness), {}
