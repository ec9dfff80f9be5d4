"""The one piece the evolution strategies that hold their population as seeds share
(:mod:`evolax.seeded`): OpenES, PGPE and SNES with ``seeded=True``, and LowRankES always.

Such an ES's ``ask`` returns a :class:`~evolax.seeded.Seeded` node (the mean, the
generation's key and one index per member) instead of ``[pop, D]`` numbers; its ``tell``
sums each member's noise back from the seeds; its best-ever genome is a member drawn again.
The algorithm template (:mod:`evolax.algorithms.base`) knows none of this: the three hooks
below are where it enters.
"""

from __future__ import annotations

import abc
from typing import Any

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import GradientES, S
from evolax.seeded import Seeded, dense, is_low_rank, is_seeded, member, seeded_population
from evolax.types import Fitness, Metrics, Params, Population, PRNGKey


class SeededES(GradientES[S]):
    """A gradient ES that can hold its population as seeds.

    A subclass says whether it does (:attr:`holds_seeds`, by default its ``seeded`` field),
    the members' form (:meth:`_seed_form`: their rank and whether they come in mirrored
    pairs) and its update from the seeds (:meth:`_tell_seeds`).
    """

    @property
    def holds_seeds(self) -> bool:
        """Whether ``ask`` returns the population as seeds."""
        return bool(self.seeded)  # type: ignore[attr-defined]

    def _seed_form(self) -> tuple[int, bool]:
        """The members' rank (``0``: full rank) and whether they are antithetic pairs."""
        return 0, False

    @abc.abstractmethod
    def _tell_seeds(
        self, state: S, population: Seeded, fitness: Float[Array, " pop"]
    ) -> tuple[S, Metrics]:
        """The update from a population held as seeds and its fitness."""

    def _ask_seeds(self, key: PRNGKey, state: S) -> tuple[Seeded, S]:
        """The population held as seeds around the state's mean with its spread (``[]``, or
        ``[D]``: one per coordinate, full rank only): ``fold_in(key, i)`` draws member
        ``i``'s noise wherever it is needed, so ``ask`` returns ``O(pop)`` numbers besides
        the mean instead of ``pop * D``."""
        _, unravel = ravel_pytree(state.best_genome)
        mean = state.mean if self.pytree_genome else unravel(state.mean)  # type: ignore[attr-defined]
        rank, antithetic = self._seed_form()
        std = self._seed_std(state)
        return seeded_population(mean, key, std, self.pop_size, rank, antithetic), state

    def _seed_std(self, state: S) -> Any:
        """The members' noise scale: the state's ``std`` (``[]``, or ``[D]`` as the genome's
        pytree)."""
        if jnp.ndim(state.std) == 0:  # type: ignore[attr-defined]
            return state.std  # type: ignore[attr-defined]
        _, unravel = ravel_pytree(state.best_genome)
        return unravel(state.std)  # type: ignore[attr-defined]

    def _ask_population(self, key: PRNGKey, state: S) -> tuple[Population, S]:
        if self.holds_seeds:
            return self._ask_seeds(key, state)
        return super()._ask_population(key, state)

    def _tell_population(
        self, key: PRNGKey, state: S, population: Population, fitness: Fitness, **extra: Any
    ) -> tuple[S, Metrics]:
        if is_seeded(population):
            return self._tell_seeds(state, population, fitness)
        return super()._tell_population(key, state, population, fitness, **extra)

    def _member(self, population: Population, index: Int[Array, ""]) -> Params:
        if is_seeded(population):
            return jax.tree.map(dense, member(population, index), is_leaf=is_low_rank)
        return super()._member(population, index)
