"""NEAT: NeuroEvolution of Augmenting Topologies (Stanley & Miikkulainen, 2002, "Evolving
Neural Networks through Augmenting Topologies", Evolutionary Computation 10(2))."""

from __future__ import annotations

import dataclasses

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import PopulationAlgorithm, PopulationState
from evolax.algorithms.shaping import sanitize_fitness
from evolax.neat.crossover import crossover
from evolax.neat.genome import NONE, Genome, conn_count, node_count
from evolax.neat.mutation import (
    Attribute,
    apply_connection,
    apply_split,
    delete_connection,
    delete_node,
    enable_connection,
    mutate_attributes,
    number_new_genes,
    propose_connection,
    propose_split,
    structural_choices,
)
from evolax.neat.reproduction import spawn_amounts, species_fitness, stagnant
from evolax.neat.species import Species, empty_species, speciate
from evolax.types import Metrics, PRNGKey
from evolax.validation import check_non_negative_int, check_positive, check_positive_int


@chex.dataclass(frozen=True, kw_only=True)
class NEATState(PopulationState):
    """NEAT's state: ``population`` is the generation to evaluate (a :class:`~evolax.neat.
    Genome` with a leading ``pop`` axis) and ``fitness`` its last fitness.

    Attributes:
        species: the species (:class:`evolax.neat.species.Species`).
        next_node: the id the next new node gets.
        next_innovation: the innovation number the next new connection gets.
        start: the start genome (a population begins again from it if every species
            stagnates).
    """

    species: Species
    next_node: Int[Array, ""]
    next_innovation: Int[Array, ""]
    start: Genome


class NEAT(PopulationAlgorithm[NEATState]):
    """NEAT over fixed-capacity genomes (:mod:`evolax.neat`), with the
    :class:`~evolax.policies.NEATNetwork` policy.

    Each generation, as neat-python 2.0 runs the paper's algorithm: species that have not
    improved for ``max_stagnation`` generations are removed (the ``species_elitism`` best
    are spared); each remaining species gets offspring in proportion to its adjusted fitness
    (its members' mean fitness, normalised over the population: explicit fitness sharing),
    keeps its ``elitism`` best unchanged, and breeds the rest from its best
    ``survival_threshold`` fraction: crossover aligned by innovation number, then add node,
    delete node, add connection and delete connection (each with its probability), then
    mutation of every weight, bias, response, activation, aggregation and enabled flag. The
    new population is divided into species by compatibility distance (:func:`evolax.neat.
    species.distance`). Structural mutations repeated in one generation share their numbers.

    Deviations from the paper, and why:

    - **Capacity.** A genome holds at most the policy's ``max_nodes`` and ``max_conns``; a
      structural mutation with no free slot does not happen (static shapes for ``jit``).
    - **Distance, deletions, node attributes.** As neat-python (the reference the tests
      compare with): the distance normalises nodes and connections separately and counts
      excess genes as disjoint; genes can be deleted; nodes carry a bias, a response, an
      activation and an aggregation that mutate. The paper's settings are reachable:
      ``node_delete_prob = conn_delete_prob = 0``.
    - **Representatives.** A species' new representative is the genome closest to its old
      one (neat-python's rule; the paper draws a random member).
    - **New species.** Genomes that fit no existing species form new ones in population
      order: the first starts a species that every later genome within the threshold joins
      (neat-python compares each with every representative so far); with no free species
      slot (``max_species``), a genome joins the closest species.
    - **Dynamic threshold.** With ``target_species`` set, the threshold moves by
      ``threshold_step`` after each generation toward that many species (the paper's
      suggestion for fixed-size populations; neat-python's threshold is fixed).
    - **Extinction.** If every species stagnates, the population starts again from the start
      genome (neat-python's ``reset_on_extinction``).

    Args:
        pop_size: genomes per generation.
        max_species: species slots (static).
        compatibility_threshold: the distance within which genomes share a species.
        target_species: species count the threshold steers to (0: fixed threshold).
        threshold_step: the threshold's step when steering.
        compatibility_disjoint_coefficient, compatibility_weight_coefficient: the distance's
            coefficients.
        feed_forward: refuse connections that close a cycle (pair with a feed-forward
            policy; ``False`` for ``NEATNetwork(recurrent=True)``).
        node_add_prob, node_delete_prob, conn_add_prob, conn_delete_prob: structural
            mutation probabilities per child.
        single_structural_mutation: at most one structural mutation per child, drawn with
            the four probabilities divided by ``max(1, their sum)`` (neat-python's option).
        structural_mutation_surer: an added connection already there is enabled instead,
            and add node in a genome without connections adds a connection (neat-python's
            option; neat-python 2.0 turns both on when its configuration omits them, since
            it reads their default as the string ``'false'``, which Python takes as true).
        weight_*, bias_*, response_*: neat-python's float attributes (``init_mean``,
            ``init_stdev``, ``mutate_power``, ``mutate_rate``, ``replace_rate``,
            ``min_value``, ``max_value``).
        enabled_mutate_rate: probability a connection's flag is redrawn.
        activation_mutate_rate, aggregation_mutate_rate: probability a node's activation or
            aggregation is redrawn from the policy's options.
        species_fitness: ``"max"`` or ``"mean"`` of the members, for stagnation.
        max_stagnation: generations without improvement before a species is removed.
        species_elitism: species never removed as stagnant.
        elitism: members of each species copied unchanged.
        survival_threshold: fraction of each species that breeds.
        min_species_size: the fewest offspring a species gets.
    """

    pytree_genome = True
    genome_kind = "neat"

    pop_size: int = eqx.field(static=True, default=150)
    max_species: int = eqx.field(static=True, default=32)
    compatibility_threshold: float = 3.0
    target_species: int = eqx.field(static=True, default=0)
    threshold_step: float = 0.3
    compatibility_disjoint_coefficient: float = 1.0
    compatibility_weight_coefficient: float = 0.5
    feed_forward: bool = eqx.field(static=True, default=True)
    node_add_prob: float = 0.2
    node_delete_prob: float = 0.2
    conn_add_prob: float = 0.5
    conn_delete_prob: float = 0.5
    single_structural_mutation: bool = eqx.field(static=True, default=False)
    structural_mutation_surer: bool = eqx.field(static=True, default=False)
    weight_init_mean: float = 0.0
    weight_init_stdev: float = 1.0
    weight_mutate_power: float = 0.5
    weight_mutate_rate: float = 0.8
    weight_replace_rate: float = 0.1
    weight_min_value: float = -30.0
    weight_max_value: float = 30.0
    bias_init_mean: float = 0.0
    bias_init_stdev: float = 1.0
    bias_mutate_power: float = 0.5
    bias_mutate_rate: float = 0.7
    bias_replace_rate: float = 0.1
    bias_min_value: float = -30.0
    bias_max_value: float = 30.0
    response_init_mean: float = 1.0
    response_init_stdev: float = 0.0
    response_mutate_power: float = 0.0
    response_mutate_rate: float = 0.0
    response_replace_rate: float = 0.0
    response_min_value: float = -30.0
    response_max_value: float = 30.0
    enabled_mutate_rate: float = 0.01
    activation_mutate_rate: float = 0.0
    aggregation_mutate_rate: float = 0.0
    species_fitness: str = eqx.field(static=True, default="max")
    max_stagnation: int = eqx.field(static=True, default=20)
    species_elitism: int = eqx.field(static=True, default=2)
    elitism: int = eqx.field(static=True, default=2)
    survival_threshold: float = eqx.field(static=True, default=0.2)
    min_species_size: int = eqx.field(static=True, default=1)

    def __check_init__(self):
        check_positive_int("max_species", self.max_species)
        check_positive("compatibility_threshold", self.compatibility_threshold)
        for name in ("max_stagnation", "min_species_size"):
            check_positive_int(name, getattr(self, name))
        for name in ("target_species", "species_elitism", "elitism"):
            check_non_negative_int(name, getattr(self, name))
        for name in (
            "node_add_prob",
            "node_delete_prob",
            "conn_add_prob",
            "conn_delete_prob",
            "enabled_mutate_rate",
            "activation_mutate_rate",
            "aggregation_mutate_rate",
        ):
            value = getattr(self, name)
            if isinstance(value, int | float) and not 0 <= value <= 1:
                raise ValueError(f"{name} must be a probability in [0, 1], got {value}")
        if not 0 < self.survival_threshold <= 1:
            raise ValueError(f"survival_threshold must be in (0, 1], got {self.survival_threshold}")
        if self.species_fitness not in ("max", "mean"):
            raise ValueError(
                f"species_fitness must be 'max' or 'mean', got {self.species_fitness!r}"
            )
        if isinstance(self.pop_size, int) and self.pop_size < 2:
            raise ValueError(f"pop_size must be at least 2 for crossover, got {self.pop_size}")

    def _attribute(self, name: str) -> Attribute:
        return Attribute(
            **{
                field: getattr(self, f"{name}_{field}")
                for field in (
                    "init_mean",
                    "init_stdev",
                    "mutate_power",
                    "mutate_rate",
                    "replace_rate",
                    "min_value",
                    "max_value",
                )
            }
        )

    def _new_genomes(self, key: PRNGKey, start: Genome) -> Genome:
        """``pop_size`` copies of ``start`` with new weights, biases and responses."""
        keys = jax.random.split(key, 3)
        pop = (self.pop_size,)
        tile = jax.tree.map(lambda x: jnp.broadcast_to(x, pop + x.shape), start)
        return dataclasses.replace(
            tile,
            weight=self._attribute("weight").new(keys[0], pop + start.weight.shape),
            bias=self._attribute("bias").new(keys[1], pop + start.bias.shape),
            response=self._attribute("response").new(keys[2], pop + start.response.shape),
        )

    def _speciate(self, species: Species, population: Genome, generation) -> Species:
        return speciate(
            species,
            population,
            generation,
            self.compatibility_disjoint_coefficient,
            self.compatibility_weight_coefficient,
        )

    def _init(self, key: PRNGKey, x0) -> NEATState:  # x0: a Genome
        if not isinstance(x0, Genome):
            raise ValueError(
                f"NEAT evolves evolax.neat.Genome genomes (the NEATNetwork policy's), got "
                f"{type(x0).__name__}"
            )
        population = self._new_genomes(key, x0)
        slots = min(self.max_species, self.pop_size)
        species = empty_species(x0, slots, self.pop_size, self.compatibility_threshold)
        species = self._speciate(species, population, jnp.zeros([], jnp.int32))
        real_nodes = jnp.where(x0.node_id != NONE, x0.node_id, -1)
        real_conns = jnp.where(x0.innovation != NONE, x0.innovation, -1)
        return NEATState(
            population=population,  # type: ignore[arg-type]  # a Genome pytree
            fitness=jnp.full(self.pop_size, -jnp.inf),
            species=species,
            next_node=jnp.max(real_nodes) + 1,
            next_innovation=jnp.max(real_conns) + 1,
            start=x0,
        )

    def _ask(self, key: PRNGKey, state: NEATState):
        del key
        return state.population, state

    def _tell(
        self, key: PRNGKey, state: NEATState, population: Genome, fitness: Float[Array, " pop"]
    ) -> tuple[NEATState, Metrics]:
        k_parents, k_cross, k_reset, k_mutate = jax.random.split(key, 4)
        generation = state.generation
        sp = state.species
        slots = sp.alive.shape[0]
        fitness = sanitize_fitness(fitness)
        finite = jnp.isfinite(fitness)
        fitness = jnp.where(finite, fitness, jnp.min(jnp.where(finite, fitness, jnp.inf)))
        member = sp.member

        # stagnation
        sf = species_fitness(fitness, member, slots, self.species_fitness)
        improved = sp.alive & (sf > sp.best_fitness)
        last_improved = jnp.where(improved, generation, sp.last_improved)
        best = jnp.where(improved, sf, sp.best_fitness).astype(sp.best_fitness.dtype)
        gone = stagnant(
            sf, sp.alive, last_improved, generation, self.max_stagnation, self.species_elitism
        )
        keep = sp.alive & ~gone

        # offspring per species (adjusted fitness over the kept species' members)
        kept_member = keep[member]
        low = jnp.min(jnp.where(kept_member, fitness, jnp.inf))
        high = jnp.max(jnp.where(kept_member, fitness, -jnp.inf))
        spread = jnp.maximum(1.0, high - low)
        sizes = jax.ops.segment_sum(jnp.ones(self.pop_size, jnp.int32), member, slots)
        mean = species_fitness(fitness, member, slots, "mean")  # a kept species has members
        adjusted = jnp.where(keep, (mean - low) / spread, 0.0)
        smallest = max(self.min_species_size, self.elitism)
        spawn = spawn_amounts(adjusted, sizes, keep, self.pop_size, smallest)

        # each offspring slot's species, rank in it, and parents
        ends = jnp.cumsum(spawn)
        index = jnp.arange(self.pop_size)  # offspring slots; members (ties: later first)
        s = jnp.searchsorted(ends, index, side="right").clip(0, slots - 1)
        rank = index - (ends[s] - spawn[s])
        order = jnp.lexsort((-index, -fitness, member))  # by species, best first
        start = jnp.searchsorted(member[order], s)
        size = sizes[s]
        elite = rank < jnp.minimum(self.elitism, size)
        cutoff = jnp.minimum(
            jnp.maximum(jnp.ceil(self.survival_threshold * size).astype(jnp.int32), 2), size
        )
        picks = jax.random.randint(k_parents, (2, self.pop_size), 0, jnp.maximum(cutoff, 1)[None])
        p1, p2 = order[start + picks[0]], order[start + picks[1]]
        first_fitter = fitness[p1] > fitness[p2]
        fitter = jnp.where(elite, order[start + rank], jnp.where(first_fitter, p1, p2))
        other = jnp.where(first_fitter, p2, p1)

        def take(i):
            return jax.tree.map(lambda x: x[i], population)

        first = take(fitter)
        children = jax.vmap(crossover)(jax.random.split(k_cross, self.pop_size), first, take(other))
        children = _where(elite, first, children)
        children, next_node, next_innovation = self._mutate(
            jax.random.split(k_mutate, 6),
            children,
            ~elite,
            state.next_node,
            state.next_innovation,
        )

        # every species stagnant: start again
        extinct = ~jnp.any(keep)
        fresh = self._new_genomes(k_reset, state.start)
        children = jax.tree.map(lambda f, c: jnp.where(extinct, f, c), fresh, children)

        sp = dataclasses.replace(sp, alive=keep, best_fitness=best, last_improved=last_improved)
        sp = self._speciate(sp, children, generation)
        if self.target_species:
            n = jnp.sum(sp.alive)
            step = self.threshold_step * jnp.sign(n - self.target_species)
            sp = dataclasses.replace(
                sp, threshold=jnp.maximum(sp.threshold + step, self.threshold_step)
            )
        new = dataclasses.replace(
            state,
            population=children,
            fitness=jnp.full(self.pop_size, -jnp.inf),
            species=sp,
            next_node=next_node,
            next_innovation=next_innovation,
        )
        top = jax.tree.map(lambda x: x[jnp.argmax(fitness)], population)
        metrics = {
            "species": jnp.sum(sp.alive).astype(jnp.float32),
            # the size of this generation's best network (neat-python's genome.size())
            "best_nodes": node_count(top).astype(jnp.float32),
            "best_connections": conn_count(top, enabled_only=True).astype(jnp.float32),
            "threshold": sp.threshold,
            "nodes": jnp.mean(jax.vmap(node_count)(children).astype(jnp.float32)),
            "connections": jnp.mean(
                jax.vmap(lambda g: conn_count(g, enabled_only=True))(children).astype(jnp.float32)
            ),
        }
        return new, metrics

    def _mutate(self, keys, children: Genome, mutable, next_node, next_innovation):
        """Add node, delete node, add connection, delete connection, then attributes, for the
        ``mutable`` children (elites are not)."""
        k_choice, k_split, k_delnode, k_conn, k_delconn, k_attr = keys
        n = self.pop_size
        none = jnp.full(n, NONE, jnp.int32)
        no = jnp.zeros(n, bool)
        probs = (
            self.node_add_prob,
            self.node_delete_prob,
            self.conn_add_prob,
            self.conn_delete_prob,
        )
        wants = jax.vmap(structural_choices, in_axes=(0, None, None))(
            jax.random.split(k_choice, n), probs, self.single_structural_mutation
        )
        wants = wants & mutable[:, None]
        split, split_innovation = jax.vmap(propose_split)(
            jax.random.split(k_split, n), children, wants[:, 0]
        )
        node_id, base, _, next_node, next_innovation = number_new_genes(
            split, split_innovation, no, none, none, next_node, next_innovation
        )
        # surer: a child with no connection to split adds one instead
        no_conns = jax.vmap(conn_count)(children) == 0
        want_conn = wants[:, 2] | (self.structural_mutation_surer & wants[:, 0] & no_conns)
        children = jax.vmap(apply_split)(children, split, split_innovation, node_id, base)
        children = jax.vmap(delete_node)(jax.random.split(k_delnode, n), children, wants[:, 1])
        k_propose, k_weight = jax.random.split(k_conn)
        connect, exists, source, target = jax.vmap(propose_connection, in_axes=(0, 0, 0, None))(
            jax.random.split(k_propose, n), children, want_conn, self.feed_forward
        )
        _, _, innovation, next_node, next_innovation = number_new_genes(
            no, none, connect, source, target, next_node, next_innovation
        )
        weight = self._attribute("weight")
        children = jax.vmap(apply_connection, in_axes=(0, 0, 0, 0, 0, 0, None))(
            jax.random.split(k_weight, n), children, connect, source, target, innovation, weight
        )
        if self.structural_mutation_surer:
            children = jax.vmap(enable_connection)(children, exists, source, target)
        children = jax.vmap(delete_connection)(
            jax.random.split(k_delconn, n), children, wants[:, 3]
        )
        mutated = jax.vmap(mutate_attributes, in_axes=(0, 0, None, None, None, None, None, None))(
            jax.random.split(k_attr, n),
            children,
            weight,
            self._attribute("bias"),
            self._attribute("response"),
            self.enabled_mutate_rate,
            self.activation_mutate_rate,
            self.aggregation_mutate_rate,
        )
        return _where(mutable, mutated, children), next_node, next_innovation


def _where(mask, a: Genome, b: Genome) -> Genome:
    """``a`` for the children where ``mask``, else ``b``."""
    return jax.tree.map(
        lambda x, y: jnp.where(mask.reshape((-1,) + (1,) * (x.ndim - 1)), x, y), a, b
    )
