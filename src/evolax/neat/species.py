"""NEAT's compatibility distance and speciation over a population of genomes."""

from __future__ import annotations

import dataclasses

import chex
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from evolax.neat.genome import NONE, Genome, is_input


def distance(
    a: Genome, b: Genome, disjoint_coefficient: float, weight_coefficient: float
) -> Float[Array, ""]:
    """neat-python's genomic distance, genes aligned as the paper aligns them.

    Nodes (inputs aside) of the same id and connections of the same innovation number are
    homologous. Each part is ``(weight_coefficient * sum of homologous differences +
    disjoint_coefficient * genes in one genome only) / the larger genome's gene count``; a
    node pair differs by its ``|bias|`` and ``|response|`` differences plus 1 per differing
    activation or aggregation, a connection pair by its ``|weight|`` difference plus 1 if one
    is disabled. The distance is the sum of the two parts.
    """

    def node_diff(slot):
        return (
            jnp.abs(a.bias - b.bias[slot])
            + jnp.abs(a.response - b.response[slot])
            + (a.activation != b.activation[slot])
            + (a.aggregation != b.aggregation[slot])
        )

    def conn_diff(slot):
        return jnp.abs(a.weight - b.weight[slot]) + (a.enabled != b.enabled[slot])

    def nodes(g: Genome) -> tuple[Int[Array, " K"], Bool[Array, " K"]]:
        # the inputs lead the sorted ids: masked out, they keep the order
        return g.node_id, (g.node_id != NONE) & ~is_input(g, g.node_id)

    def conns(g: Genome) -> tuple[Int[Array, " K"], Bool[Array, " K"]]:
        return g.innovation, g.innovation != NONE

    def part(genes, diff) -> Float[Array, ""]:
        """One part: ``genes(g)``, a genome's gene ids (sorted) and which slots hold one;
        ``diff(slot)``: each gene of ``a``'s difference from ``b``'s gene at ``slot``."""
        (ids_a, real_a), (ids_b, real_b) = genes(a), genes(b)
        slot = jnp.searchsorted(ids_b, ids_a).clip(0, ids_b.shape[0] - 1)
        match = real_a & real_b[slot] & (ids_b[slot] == ids_a)
        n_a, n_b, n_match = jnp.sum(real_a), jnp.sum(real_b), jnp.sum(match)
        homologous = jnp.sum(jnp.where(match, diff(slot), 0.0))
        disjoint = n_a + n_b - 2 * n_match
        total = weight_coefficient * homologous + disjoint_coefficient * disjoint
        return total / jnp.maximum(jnp.maximum(n_a, n_b), 1)

    return part(nodes, node_diff) + part(conns, conn_diff)


@chex.dataclass(frozen=True)
class Species:
    """The species of a population, ``S`` slots.

    Attributes:
        representative: a genome per slot (leading axis ``S``).
        alive: ``bool[S]``.
        key: ``i32[S]``, the order species were created in (neat-python's species ids).
        best_fitness: ``f32[S]`` (the genome's float type), the best species fitness so far
            (stagnation).
        last_improved: ``i32[S]``, the generation it last improved.
        member: ``i32[pop]``, each genome's species slot.
        next_key: ``i32[]``.
        threshold: ``f32[]``, the compatibility threshold.
    """

    representative: Genome
    alive: Bool[Array, " S"]
    key: Int[Array, " S"]
    best_fitness: Float[Array, " S"]
    last_improved: Int[Array, " S"]
    member: Int[Array, " pop"]
    next_key: Int[Array, ""]
    threshold: Float[Array, ""]


def empty_species(genome: Genome, n_slots: int, pop_size: int, threshold: float) -> Species:
    """No species yet, ``n_slots`` slots (representatives: copies of ``genome``)."""
    return Species(
        representative=jax.tree.map(lambda x: jnp.broadcast_to(x, (n_slots, *x.shape)), genome),
        alive=jnp.zeros(n_slots, bool),
        key=jnp.full(n_slots, NONE, jnp.int32),
        best_fitness=jnp.full(n_slots, -jnp.inf, genome.weight.dtype),
        last_improved=jnp.zeros(n_slots, jnp.int32),
        member=jnp.zeros(pop_size, jnp.int32),
        next_key=jnp.zeros([], jnp.int32),
        threshold=jnp.asarray(threshold, jnp.float32),
    )


def speciate(
    species: Species,
    population: Genome,
    generation: Int[Array, ""],
    disjoint_coefficient: float,
    weight_coefficient: float,
) -> Species:
    """Place ``population`` (leading axis ``pop``) into species (neat-python's order).

    Each living species, oldest first, takes as its new representative the genome closest to
    its old one among those not yet taken. Every other genome joins the species of the
    closest representative within ``threshold``. The genomes left start new species: the
    first of them (in population order) represents a new species that every remaining genome
    within ``threshold`` of it joins, and so on. When the slots run out, the genomes left join
    the species of their closest representative.
    """
    pop = population.node_id.shape[0]

    def dist_to(rep):
        return jax.vmap(lambda g: distance(rep, g, disjoint_coefficient, weight_coefficient))(
            population
        )

    n_slots = species.alive.shape[0]
    # 1. the living species, oldest first, each take their closest untaken genome; the
    # distances to each new representative fill a row of `d` ([S, pop], inf where no species)
    order = jnp.argsort(jnp.where(species.alive, species.key, NONE), stable=True)

    def represent(carry):
        k, member, reps, d = carry
        s = order[k]
        old = jax.tree.map(lambda x: x[s], species.representative)
        pick = jnp.argmin(jnp.where(member < 0, dist_to(old), jnp.inf))
        new = jax.tree.map(lambda x: x[pick], population)
        reps = jax.tree.map(lambda r, n: r.at[s].set(n), reps, new)
        return k + 1, member.at[pick].set(s), reps, d.at[s].set(dist_to(new))

    carry = (
        jnp.zeros([], jnp.int32),
        jnp.full(pop, -1, jnp.int32),
        species.representative,
        jnp.full((n_slots, pop), jnp.inf),
    )
    n_alive = jnp.sum(species.alive, dtype=jnp.int32)
    _, member, reps, d = jax.lax.while_loop(lambda c: c[0] < n_alive, represent, carry)
    # 2. the others join the closest compatible representative
    closest, nearest = jnp.argmin(d, axis=0), jnp.min(d, axis=0)
    member = jnp.where(member >= 0, member, jnp.where(nearest < species.threshold, closest, -1))

    # 3. new species, one representative at a time
    def new_species(carry):
        new, d = carry
        g = jnp.argmax(new.member < 0)
        s = jnp.argmax(~new.alive)
        rep = jax.tree.map(lambda x: x[g], population)
        row = dist_to(rep)
        joins = (new.member < 0) & (row < species.threshold)
        new = dataclasses.replace(
            new,
            representative=jax.tree.map(lambda r, n: r.at[s].set(n), new.representative, rep),
            alive=new.alive.at[s].set(True),
            key=new.key.at[s].set(new.next_key),
            best_fitness=new.best_fitness.at[s].set(-jnp.inf),
            last_improved=new.last_improved.at[s].set(generation),
            member=jnp.where(joins, s, new.member).at[g].set(s),
            next_key=new.next_key + 1,
        )
        return new, d.at[s].set(row)

    def more(carry):
        new, _ = carry
        return jnp.any(new.member < 0) & jnp.any(~new.alive)

    start = dataclasses.replace(species, representative=reps, member=member)
    new, d = jax.lax.while_loop(more, new_species, (start, d))
    # 4. out of slots: the closest living species
    return dataclasses.replace(
        new, member=jnp.where(new.member < 0, jnp.argmin(d, axis=0), new.member)
    )
