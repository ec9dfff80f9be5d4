"""neat-python 2.0 (installed for tests only) as the reference for evolax's NEAT: its XOR
configuration, random genomes written both ways, its XOR run, and its run on double-pole
balancing (with the cart and poles in plain Python floats)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from evolax.neat.genome import NONE, Genome

CONFIG = Path(__file__).parent / "neat" / "xor-feedforward.ini"
DOUBLE_POLE_CONFIG = Path(__file__).parent / "neat" / "double-pole.ini"
XOR_INPUTS = [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)]
XOR_TARGETS = [0.0, 1.0, 1.0, 0.0]


def config(path: Path = CONFIG):
    import neat

    return neat.Config(
        neat.DefaultGenome,
        neat.DefaultReproduction,
        neat.DefaultSpeciesSet,
        neat.DefaultStagnation,
        str(path),
    )


def random_genome(
    rng: np.random.Generator,
    n_in: int,
    n_out: int,
    n_hidden: int,
    n_conns: int,
    cycles: bool = False,
):
    """A random feed-forward genome as plain lists: hidden ids ``n_in + n_out ..``, connections
    ``(in, out, weight, enabled, innovation)`` from lower to higher topological rank (with
    ``cycles``, from any node into any non-input: loops and cycles too)."""
    hidden = list(range(n_in + n_out, n_in + n_out + n_hidden))
    rank = {i: 0 for i in range(n_in)}
    rank.update({h: 1 + k for k, h in enumerate(rng.permutation(hidden))})
    rank.update({o: n_hidden + 1 for o in range(n_in, n_in + n_out)})
    pairs = [(a, b) for a in rank for b in rank if rank[a] < rank[b] or (cycles and rank[b] > 0)]
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


def double_pole_run(
    policy, max_steps: int = 100_000, velocities: bool = True, start=None
) -> tuple[int, float]:
    """``policy(obs) -> force in [-1, 1]`` on the two poles, Wieland's equations in Python
    floats as :class:`evolax.tasks.DoublePole` defines them: ``(steps balanced, Gruau's
    fitness)``. ``velocities``: observe them (else the three positions); ``start``: the
    physics ``[x, x_dot, theta_1, theta_1_dot, theta_2, theta_2_dot]`` (default: NEAT's)."""
    masses, halves, gravity, friction = (0.1, 0.01), (0.5, 0.05), 9.8, 2e-6

    def derivative(s, force):
        pole_force, pole_mass, thetas = 0.0, 0.0, []
        for i in range(2):
            theta, theta_dot = s[2 + 2 * i], s[3 + 2 * i]
            cos, sin = math.cos(theta), math.sin(theta)
            hinge = friction * theta_dot / (masses[i] * halves[i])
            pole_force += masses[i] * halves[i] * theta_dot**2 * sin
            pole_force -= 0.75 * masses[i] * cos * (gravity * sin - hinge)
            pole_mass += masses[i] * (1.0 - 0.75 * cos * cos)
            thetas.append((cos, sin, hinge))
        x_acc = (force + pole_force) / (1.0 + pole_mass)
        acc = [0.75 * (gravity * sin - x_acc * cos - hinge) / halves[i]
               for i, (cos, sin, hinge) in enumerate(thetas)]  # fmt: skip
        return (s[1], x_acc, s[3], acc[0], s[5], acc[1])

    s = tuple(start) if start is not None else (0.0, 0.0, 0.07, 0.0, 0.0, 0.0)
    jiggle: list[float] = []  # the last 100 balanced steps' |x| + |x_dot| + |theta_1| + ...
    steps = max_steps
    for step in range(max_steps):
        obs = (s[0] / 4.8, s[1] / 2.0, s[2] / 0.52, s[3] / 2.0, s[4] / 0.52, s[5] / 2.0)
        force = 10.0 * min(1.0, max(-1.0, policy(obs if velocities else obs[0::2])))
        for _ in range(2):  # two Runge-Kutta steps of 0.01 s
            k1 = derivative(s, force)
            k2 = derivative([a + 0.005 * b for a, b in zip(s, k1, strict=True)], force)
            k3 = derivative([a + 0.005 * b for a, b in zip(s, k2, strict=True)], force)
            k4 = derivative([a + 0.01 * b for a, b in zip(s, k3, strict=True)], force)
            s = tuple(
                a + 0.01 / 6 * (b1 + 2 * b2 + 2 * b3 + b4)
                for a, b1, b2, b3, b4 in zip(s, k1, k2, k3, k4, strict=True)
            )
        if abs(s[0]) > 2.4 or abs(s[2]) > 0.628329 or abs(s[4]) > 0.628329:
            steps = step
            break
        jiggle = [*jiggle[-99:], abs(s[0]) + abs(s[1]) + abs(s[2]) + abs(s[3])]
    calm = 0.9 * 0.75 / sum(jiggle) if steps > 100 else 0.0
    return steps, 1e-4 * steps + calm


def neat_python_double_pole(
    seed: int, generations: int = 100
) -> tuple[int | None, tuple[int, int]]:
    """neat-python on double-pole balancing with velocities (``tests/neat/double-pole.ini``:
    the XOR example's configuration with 6 inputs and a tanh output) from ``seed``: the
    generation a genome first balances 100,000 steps (``None``: not within ``generations``)
    and the winner's size."""
    import neat

    cfg = config(DOUBLE_POLE_CONFIG)

    def evaluate(genomes, config):
        for _, g in genomes:
            net = neat.nn.FeedForwardNetwork.create(g, config)
            g.fitness = float(double_pole_run(lambda obs, net=net: net.activate(obs)[0])[0])

    random.seed(seed)
    population = neat.Population(cfg)
    winner = population.run(evaluate, generations)
    solved = winner.fitness >= cfg.fitness_threshold
    return (population.generation if solved else None), winner.size()


def neat_python_double_pole_nv(
    seed: int, generations: int, starts, pop_size: int = 1000
) -> tuple[int | None, int | None, tuple[int, int] | None]:
    """neat-python on double-pole balancing without velocities (``tests/neat/double-pole.ini``
    with 3 inputs, recurrent genomes, ``pop_size``; Gruau's fitness over 1,000 steps) from
    ``seed``, tested as NEAT's paper does: each generation's champion from the standard start
    for 100,000 steps and, if it passes, from ``starts``. Returns the generation it solves in
    (200 of the starts; ``None``: not within ``generations``), its generalisation score and
    the winner's size."""
    import neat

    cfg = config(DOUBLE_POLE_CONFIG)
    cfg.pop_size = pop_size
    cfg.genome_config.num_inputs = 3
    cfg.genome_config.input_keys = [-1, -2, -3]
    cfg.genome_config.feed_forward = False
    cfg.fitness_threshold = float("inf")  # stopped by the tests below

    def network(genome):
        net = neat.nn.RecurrentNetwork.create(genome, cfg)
        return lambda obs: net.activate(obs)[0]

    champions = []  # each generation's

    def evaluate(genomes, config):
        for _, g in genomes:
            g.fitness = double_pole_run(network(g), 1000, velocities=False)[1]
        champions.append(max((g for _, g in genomes), key=lambda g: g.fitness))

    random.seed(seed)
    population = neat.Population(cfg)
    tested = set()  # champions already tested (an elite stays champion for generations)
    for generation in range(generations):
        population.run(evaluate, 1)
        champion = champions[-1]
        if champion.key in tested:
            continue
        tested.add(champion.key)
        if double_pole_run(network(champion), 100_000, velocities=False)[0] < 100_000:
            continue
        score = sum(  # a fresh network (no memory) from each start
            double_pole_run(network(champion), 1000, velocities=False, start=s)[0] >= 1000
            for s in starts
        )
        if score >= 200:
            return generation, score, champion.size()
    return None, None, None
