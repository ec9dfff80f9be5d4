"""What the differential-evolution variants share: the first population, distinct member
indices, DE's mutations (rand/1, rand/2, current-to-rand/1), binomial crossover and one-to-one
greedy selection."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, UInt32

from evolax.algorithms.base import normal
from evolax.algorithms.shaping import sanitize_fitness
from evolax.types import PRNGKey


def first_population(
    key: PRNGKey, x0: Float[Array, " dim"], n: int, init_std: float | Float[Array, ""]
) -> dict[str, Array]:
    """The ``population`` and ``fitness`` of a DE state before its first ``tell``: ``n``
    members ``x0 + init_std * N(0, I)`` (``[n, D]``), every fitness ``-inf`` (``[n]``)."""
    noise = normal(key, (n, x0.shape[0]), x0)
    return dict(
        population=x0[None] + init_std * noise,
        fitness=jnp.full(n, -jnp.inf, x0.dtype),
    )


def distinct_indices(bits: UInt32[Array, "pop n"]) -> Int[Array, "pop n"]:
    """For each row ``i``, ``n`` indices drawn without replacement from
    ``{0 .. pop - 1} \\ {i}`` (the ``r1, r2, r3`` of Storn & Price, 1997), from random
    ``bits`` (e.g. ``jax.random.bits(key, (pop, n), jnp.uint32)``).

    Draw ``k`` is ``bits[:, k] mod (pop - 1 - k)``, uniform over the values still allowed (up
    to a modulo bias below ``pop / 2^32``), mapped onto them by stepping over the excluded
    values in increasing order; no rejection loop, no sort, O(pop * n^2).
    """
    pop, n = bits.shape
    if pop < n + 1:
        raise ValueError(f"pop_size must be at least {n + 1} to draw {n} others, got {pop}")
    excluded = [jnp.arange(pop, dtype=jnp.uint32)]  # kept sorted (insertion by min/max)
    chosen = []
    for k in range(n):  # n is small and static
        u = bits[:, k] % jnp.uint32(pop - 1 - k)
        for e in excluded:
            u = u + (u >= e).astype(jnp.uint32)
        chosen.append(u)
        carry, inserted = u, []
        for e in excluded:
            inserted.append(jnp.minimum(e, carry))
            carry = jnp.maximum(e, carry)
        excluded = [*inserted, carry]
    return jnp.stack(chosen, axis=1).astype(jnp.int32)


def binomial_crossover(
    mutant: Float[Array, "pop dim"],
    population: Float[Array, "pop dim"],
    crossover_u: Float[Array, "pop dim"],
    j_rand: Int[Array, " pop"],
    crossover_rate: float | Float[Array, ""] | Float[Array, " pop"],
) -> Float[Array, "pop dim"]:
    """Binomial crossover (Storn & Price, 1997, eq. 2): ``u_ij = v_ij`` if
    ``crossover_u_ij < CR`` or ``j == j_rand_i``, else ``x_ij``. ``crossover_rate`` is one
    ``CR`` for all members or one per member, ``[pop]``."""
    crossover_rate = jnp.asarray(crossover_rate)
    if crossover_rate.ndim == 1:
        crossover_rate = crossover_rate[:, None]
    dims = jnp.arange(population.shape[1])
    from_mutant = (crossover_u < crossover_rate) | (dims[None] == j_rand[:, None])
    return jnp.where(from_mutant, mutant, population)


def greedy_selection(
    population: Float[Array, "pop dim"],
    fitness: Float[Array, " pop"],
    trials: Float[Array, "pop dim"],
    trial_fitness: Float[Array, " pop"],
) -> tuple[Float[Array, "pop dim"], Float[Array, " pop"], Bool[Array, " pop"]]:
    """One-to-one survivor selection (Storn & Price, 1997, section 2): trial ``i`` replaces
    target ``i`` when its fitness is at least as high (non-finite counts as ``-inf``, so such a
    trial never replaces a finite target). Returns the new population, fitness and the accept
    mask."""
    trial_fitness = sanitize_fitness(trial_fitness)
    accept = trial_fitness >= fitness
    return (
        jnp.where(accept[:, None], trials, population),
        jnp.where(accept, trial_fitness, fitness),
        accept,
    )


def rand_1(
    population: Float[Array, "pop dim"], r: Int[Array, "pop n"], F: Float[Array, " pop"]
) -> Float[Array, "pop dim"]:
    """DE/rand/1 mutants ``v_i = x_r1 + F_i (x_r2 - x_r3)`` (``r``: distinct indices other
    than ``i``, the first three used)."""
    x = population
    return x[r[:, 0]] + F[:, None] * (x[r[:, 1]] - x[r[:, 2]])


def rand_2(
    population: Float[Array, "pop dim"], r: Int[Array, "pop n"], F: Float[Array, " pop"]
) -> Float[Array, "pop dim"]:
    """DE/rand/2 mutants ``v_i = x_r1 + F_i (x_r2 - x_r3) + F_i (x_r4 - x_r5)``."""
    x = population
    return x[r[:, 0]] + F[:, None] * (x[r[:, 1]] - x[r[:, 2]] + x[r[:, 3]] - x[r[:, 4]])


def current_to_rand_1(
    population: Float[Array, "pop dim"],
    r: Int[Array, "pop n"],
    K: Float[Array, " pop"],
    F: Float[Array, " pop"],
) -> Float[Array, "pop dim"]:
    """DE/current-to-rand/1 trials ``u_i = x_i + K_i (x_r1 - x_i) + F_i (x_r2 - x_r3)``
    (``K_i`` uniform in ``[0, 1]``; no crossover)."""
    x = population
    return x + K[:, None] * (x[r[:, 0]] - x) + F[:, None] * (x[r[:, 1]] - x[r[:, 2]])
