"""NEAT's reproduction bookkeeping: stagnation and the offspring each species gets
(neat-python's ``DefaultStagnation`` and ``DefaultReproduction``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int


def species_fitness(
    fitness: Float[Array, " pop"], member: Int[Array, " pop"], n_slots: int, how: str
) -> Float[Array, " S"]:
    """Each species' fitness: its members' ``max`` or ``mean`` (``-inf`` when empty)."""
    if how == "max":
        return jax.ops.segment_max(fitness, member, n_slots)
    total = jax.ops.segment_sum(fitness, member, n_slots)
    count = jax.ops.segment_sum(jnp.ones_like(fitness), member, n_slots)
    return jnp.where(count > 0, total / jnp.maximum(count, 1), -jnp.inf)


def stagnant(
    fitness: Float[Array, " S"],
    alive: Bool[Array, " S"],
    last_improved: Int[Array, " S"],
    generation: Int[Array, ""],
    max_stagnation: int,
    species_elitism: int,
) -> Bool[Array, " S"]:
    """The species to remove: not improved for ``max_stagnation`` generations, sparing the
    ``species_elitism`` best and never leaving fewer than that (neat-python's order: from the
    least fit up)."""
    order = jnp.argsort(jnp.where(alive, fitness, jnp.inf), stable=True)  # ascending, dead last
    n_alive = jnp.sum(alive)

    def visit(non_stagnant, rank_s):
        rank, s = rank_s
        old = generation - last_improved[s] >= max_stagnation
        is_stagnant = (non_stagnant > species_elitism) & old
        is_stagnant = is_stagnant & (n_alive - rank > species_elitism) & alive[s]
        return non_stagnant - is_stagnant, is_stagnant

    _, flags = jax.lax.scan(visit, n_alive, (jnp.arange(order.shape[0]), order))
    return jnp.zeros_like(alive).at[order].set(flags)


def spawn_amounts(
    adjusted: Float[Array, " S"],
    previous: Int[Array, " S"],
    keep: Bool[Array, " S"],
    pop_size: int,
    min_species_size: int,
) -> Int[Array, " S"]:
    """Offspring per kept species, summing to ``pop_size`` (neat-python's ``compute_spawn``
    and ``_adjust_spawn_exact``): each moves halfway from its size toward its share of the
    adjusted fitness, at least ``min_species_size``."""
    total = jnp.sum(jnp.where(keep, adjusted, 0.0))
    share = jnp.where(
        total > 0, jnp.maximum(min_species_size, adjusted / total * pop_size), min_species_size
    )
    d = (share - previous) * 0.5
    c = jnp.round(d).astype(jnp.int32)
    spawn = previous + jnp.where(c != 0, c, jnp.sign(d).astype(jnp.int32))
    spawn = jnp.where(keep, spawn, 0)
    norm = pop_size / jnp.sum(spawn)
    spawn = jnp.where(
        keep, jnp.maximum(min_species_size, jnp.round(spawn * norm).astype(jnp.int32)), 0
    )
    n_keep = jnp.sum(keep, dtype=jnp.int32)
    diff = (pop_size - jnp.sum(spawn)).astype(jnp.int32)
    # too few: the smallest first, one each in turn
    up = jnp.argsort(jnp.where(keep, spawn, jnp.iinfo(jnp.int32).max), stable=True)
    position = jnp.zeros_like(spawn).at[up].set(jnp.arange(spawn.shape[0]))
    q, r = jnp.divmod(jnp.maximum(diff, 0), jnp.maximum(n_keep, 1))
    spawn = spawn + jnp.where(keep, q + (position < r), 0)
    # too many: the largest first, one each in turn, none below the minimum
    down = jnp.argsort(jnp.where(keep, -spawn, jnp.iinfo(jnp.int32).max), stable=True)

    def remove(carry):
        spawn, i, remaining, stuck = carry
        s = down[i]
        can = keep[s] & (spawn[s] > min_species_size)
        spawn = spawn.at[s].add(-can.astype(spawn.dtype))
        remaining = remaining - can
        stuck = jnp.where(i == 0, 0, stuck) + ~can
        return spawn, (i + 1) % jnp.maximum(n_keep, 1), remaining, stuck

    def more(carry):
        _, _, remaining, stuck = carry
        return (remaining > 0) & (stuck < n_keep)

    spawn, *_ = jax.lax.while_loop(
        more,
        remove,
        (spawn, jnp.zeros([], jnp.int32), jnp.maximum(-diff, 0), jnp.zeros([], jnp.int32)),
    )
    return spawn
