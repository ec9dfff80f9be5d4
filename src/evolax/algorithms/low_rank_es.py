"""Low-rank evolution strategies: EGGROLL's perturbations, drawn from seeds inside the forward
pass."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from evolax.algorithms.open_es import OpenES
from evolax.seeded import (
    dense,
    is_low_rank,
    is_seeded,
    member,
    seeded_population,
    weighted_noise_sum,
)
from evolax.validation import check_positive_int


class LowRankES(OpenES):
    """EGGROLL (Sarkar et al., 2025, "Evolution Strategies at the Hyperscale",
    arXiv:2511.16652): OpenES whose members perturb every matrix of the genome by a rank-``r``
    product and exist only as seeds.

    Member ``i`` perturbs each matrix leaf ``W`` (``[m, n]``; a leaf of more axes is a
    matrix over all but its last) by ``std * a_i b_i^T / sqrt(r)`` with ``a_i ~ N(0, I_{m x
    r})`` and ``b_i ~ N(0, I_{n x r})``, and each vector leaf by full-rank noise ``std *
    eps_i``, drawn from ``fold_in(key, i)`` (:mod:`evolax.seeded`). :meth:`ask` returns the
    population as seeds (``O(pop)`` numbers besides the shared mean); the rollout draws each
    member's factors for the members it evaluates, and the policy applies them inside its
    forward pass (``x @ W + std (x @ a) b^T / sqrt(r)``: :class:`~evolax.seeded.LowRank`).
    The update is OpenES's, ``g = sum_i u_i E_i / (pop_size * std)`` with ``E_i`` the
    perturbation's direction, summed as ``A^T diag(u) B`` from the factors redrawn from the
    same seeds, so no ``[pop, m, n]`` array, and no population-sized array but the fitness,
    is ever formed or crosses devices. With ``r = min(m, n)`` the directions span every
    matrix but are not Gaussian: the estimate is that of a different search distribution
    of the same covariance (EGGROLL's analysis: it converges to the full-rank gradient as
    ``r`` grows, at ``O(1/r)``).

    ``rank = 0`` perturbs every leaf at full rank: OpenES's population held as seeds, its
    memory ``O(D)`` instead of ``O(pop D)``.

    Deviations from the paper: the utilities are any of evolax's shapings (centred ranks by
    default, as OpenES); a shaping that reads the population (``weight_decay``) is refused
    (decay the weights in the optimizer instead, ``optax.adamw``).

    Args:
        pop_size: number of members (even when ``antithetic``).
        rank: the perturbations' rank ``r`` (``0``: full-rank members held as seeds).
        optimizer, init_std, std_decay, std_min, antithetic, fitness_shaping: as
            :class:`~evolax.algorithms.OpenES`.
        update_block: members whose noise the update draws at once (``None``: all; it must
            divide ``pop_size``, or half of it when ``antithetic``): bounds the update's memory
            at full rank.
    """

    rank: int = eqx.field(static=True, default=1)
    update_block: int | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        if not (isinstance(self.rank, int) and self.rank >= 0):
            raise ValueError(f"rank must be a non-negative integer, got {self.rank!r}")
        if self.update_block is not None:
            check_positive_int("update_block", self.update_block)
            n = self.pop_size // 2 if self.antithetic else self.pop_size
            if n % self.update_block:
                raise ValueError(
                    f"update_block must divide the {n} noise draws of a generation, got "
                    f"{self.update_block}"
                )

    def ask(self, key, state):
        """The population as seeds: a :class:`~evolax.seeded.Seeded` node."""
        _, unravel = ravel_pytree(state.best_genome)
        population = seeded_population(
            unravel(state.mean), key, state.std, self.pop_size, self.rank, self.antithetic
        )
        return population, state

    def _tell_population(self, key, state, population, fitness, **extra):
        if not is_seeded(population):  # a dense population: OpenES's update from its members
            return super()._tell_population(key, state, population, fitness, **extra)
        utility = self.fitness_shaping(fitness, None)
        if self.antithetic:
            half = self.pop_size // 2
            utility = utility[:half] - utility[half:]
        total = weighted_noise_sum(population, utility, self.update_block)
        grad = total / (self.pop_size * state.std)
        std = jnp.maximum(state.std * self.std_decay, self.std_min)
        new_state = state.replace(std=std, **self._ascend(state, grad))
        return new_state, {"std": std, "grad_norm": jnp.linalg.norm(grad)}

    def _member(self, population, index):
        if not is_seeded(population):
            return super()._member(population, index)
        genome = jax.tree.map(dense, member(population, index), is_leaf=is_low_rank)
        return ravel_pytree(genome)[0]
