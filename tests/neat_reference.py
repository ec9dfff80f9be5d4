"""neat-python 2.0 (installed for tests only) as the reference for evolax's NEAT: its XOR
configuration, random genomes written both ways, and its XOR run."""

from __future__ import annotations

import random
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from evolax.neat.genome import NONE, Genome

CONFIG = Path(__file__).parent / "neat" / "xor-feedforward.ini"
XOR_INPUTS = [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)]
XOR_TARGETS = [0.0, 1.0, 1.0, 0.0]


def config():
    import neat

    return neat.Config(
        neat.DefaultGenome,
        neat.DefaultReproduction,
        neat.DefaultSpeciesSet,
        neat.DefaultStagnation,
        str(CONFIG),
    )


def random_genome(rng: np.random.Generator, n_in: int, n_out: int, n_hidden: int, n_conns: int):
    """A random feed-forward genome as plain lists: hidden ids ``n_in + n_out ..``, connections
    ``(in, out, weight, enabled, innovation)`` from lower to higher topological rank."""
    hidden = list(range(n_in + n_out, n_in + n_out + n_hidden))
    rank = {i: 0 for i in range(n_in)}
    rank.update({h: 1 + k for k, h in enumerate(rng.permutation(hidden))})
    rank.update({o: n_hidden + 1 for o in range(n_in, n_in + n_out)})
    pairs = [(a, b) for a in rank for b in rank if rank[a] < rank[b]]
    chosen = rng.choice(len(pairs), size=min(n_conns, len(pairs)), replace=False)
    innovations = rng.choice(1000, size=len(chosen), replace=False)
    conns = [
        (pairs[c][0], pairs[c][1], float(rng.normal()), bool(rng.random() < 0.85), int(i))
        for c, i in zip(chosen, innovations, strict=True)
    ]
    nodes = {
        n: (float(rng.normal()), float(rng.normal())) for n in [*range(n_in, n_in + n_out), *hidden]
    }
    return nodes, conns


def as_evolax(nodes, conns, n_in: int, n_out: int, max_nodes: int, max_conns: int) -> Genome:
    """The genome of :func:`random_genome` in evolax's arrays (sorted, empty slots last)."""
    ids = sorted([*range(n_in), *nodes])
    node_id = np.full(max_nodes, NONE, np.int32)
    bias, response = np.zeros(max_nodes), np.ones(max_nodes)
    node_id[: len(ids)] = ids
    for slot, n in enumerate(ids):
        if n in nodes:
            bias[slot], response[slot] = nodes[n]
    conns = sorted(conns, key=lambda c: c[4])
    field = np.full((5, max_conns), NONE, np.float64)
    enabled = np.zeros(max_conns, bool)
    for slot, (a, b, w, e, i) in enumerate(conns):
        field[:, slot] = (a, b, w, 0, i)
        enabled[slot] = e
    return Genome(
        node_id=jnp.asarray(node_id),
        bias=jnp.asarray(bias, jnp.float32),
        response=jnp.asarray(response, jnp.float32),
        activation=jnp.zeros(max_nodes, jnp.int32),
        aggregation=jnp.zeros(max_nodes, jnp.int32),
        conn_in=jnp.asarray(field[0].astype(np.int32)),
        conn_out=jnp.asarray(field[1].astype(np.int32)),
        weight=jnp.asarray(np.where(field[4] == NONE, 0.0, field[2]), jnp.float32),
        enabled=jnp.asarray(enabled),
        innovation=jnp.asarray(field[4].astype(np.int32)),
        output_ids=jnp.arange(n_in, n_in + n_out, dtype=jnp.int32),
        n_activations=jnp.asarray(1, jnp.int32),
        n_aggregations=jnp.asarray(1, jnp.int32),
    )


def as_neat_python(nodes, conns, n_in: int, n_out: int):
    """The same genome as a neat-python ``DefaultGenome`` (inputs ``-1 .. -n_in``, outputs
    ``0 .. n_out - 1``, hidden nodes keep their ids)."""
    from neat.genes import DefaultConnectionGene, DefaultNodeGene

    import neat

    def key(n):
        return -(n + 1) if n < n_in else n - n_in if n < n_in + n_out else n

    genome = neat.DefaultGenome(0)
    for n, (b, r) in nodes.items():
        gene = DefaultNodeGene(key(n))
        gene.bias, gene.response = b, r
        gene.activation, gene.aggregation, gene.time_constant = "sigmoid", "sum", 1.0
        genome.nodes[key(n)] = gene
    for a, b, w, e, i in conns:
        gene = DefaultConnectionGene((key(a), key(b)), innovation=i)
        gene.weight, gene.enabled = w, e
        genome.connections[gene.key] = gene
    return genome


def neat_python_xor(
    seed: int, generations: int = 300, single: bool = False
) -> tuple[int | None, tuple[int, int]]:
    """neat-python's XOR example run from ``seed``: the generation it solves XOR in (``None``:
    not within ``generations``) and the winner's size ``(nodes, enabled connections)``.
    ``single``: ``single_structural_mutation`` and ``structural_mutation_surer`` on (what
    neat-python 2.0 does when the file omits them)."""
    import neat

    cfg = config()
    cfg.genome_config.single_structural_mutation = single
    cfg.genome_config.structural_mutation_surer = str(single).lower()

    def evaluate(genomes, config):
        for _, g in genomes:
            net = neat.nn.FeedForwardNetwork.create(g, config)
            outputs = [net.activate(x)[0] for x in XOR_INPUTS]
            g.fitness = 4.0 - sum((o - y) ** 2 for o, y in zip(outputs, XOR_TARGETS, strict=True))

    random.seed(seed)
    population = neat.Population(cfg)
    winner = population.run(evaluate, generations)
    solved = winner.fitness >= cfg.fitness_threshold
    return (population.generation if solved else None), winner.size()
