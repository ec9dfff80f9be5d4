"""NEAT (evolax.neat, evolax.algorithms.NEAT, evolax.policies.NEATNetwork) against neat-python
2.0: networks, exports, distances, offspring counts, mutation statistics, XOR over 20 seeds,
and the trainer's scan with a checkpoint. The comparisons with neat-python and the compiled
runs are in `nox -s slow`; the default suite checks the numbering, crossover and add node."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import evolax
from evolax.algorithms import NEAT
from evolax.checkpoint import CheckpointStore
from evolax.neat.crossover import crossover
from evolax.neat.genome import NONE, conn_count, node_count
from evolax.neat.mutation import apply_split, number_new_genes, propose_connection
from evolax.neat.reproduction import spawn_amounts
from evolax.neat.species import distance
from evolax.policies import CPPNGenome, HyperNEAT, NEATNetwork
from evolax.tasks import XOR
from helpers import state_leaves
from neat_reference import (
    as_evolax,
    as_neat_python,
    config,
    neat_python_xor,
    random_genome,
)

neat = pytest.importorskip("neat")
N_IN, N_OUT, MAX_NODES, MAX_CONNS = 3, 2, 12, 40


def small_config():
    """neat-python's XOR configuration with ``N_IN`` inputs and ``N_OUT`` outputs."""
    cfg = config()
    cfg.genome_config.input_keys = [-(i + 1) for i in range(N_IN)]
    cfg.genome_config.output_keys = list(range(N_OUT))
    return cfg


def random_pairs(n: int, seed: int = 0, cycles: bool = False):
    rng = np.random.default_rng(seed)
    return [
        random_genome(rng, N_IN, N_OUT, int(rng.integers(0, 6)), int(rng.integers(1, 30)), cycles)
        for _ in range(n)
    ]


def stack(genomes):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *genomes)


@pytest.mark.slow
def test_feed_forward_networks_compute_what_neat_python_s_compute():
    cfg = small_config()
    genomes = random_pairs(40)
    ours = stack([as_evolax(n, c, N_IN, N_OUT, MAX_NODES, MAX_CONNS) for n, c in genomes])
    policy = NEATNetwork(max_nodes=MAX_NODES, max_conns=MAX_CONNS)
    x = np.random.default_rng(1).normal(size=(5, N_IN)).astype(np.float32)

    @jax.jit
    def outputs(genome):
        net = policy.prepare(genome)
        return jax.vmap(lambda o: policy.apply(net, o, policy.reset(None), None)[0])(x)

    got = np.asarray(jax.vmap(outputs)(ours))
    for k, (nodes, conns) in enumerate(genomes):
        net = neat.nn.FeedForwardNetwork.create(as_neat_python(nodes, conns, N_IN, N_OUT), cfg)
        want = np.array([net.activate(list(row)) for row in x.astype(float)])
        np.testing.assert_allclose(got[k], want, rtol=1e-4, atol=1e-5, err_msg=f"genome {k}")


@pytest.mark.slow
def test_recurrent_networks_compute_what_neat_python_s_compute():
    """Networks with loops and cycles, two activation steps per observation, over a sequence
    of observations (the node values carried between them)."""
    cfg = small_config()
    genomes = random_pairs(40, seed=2, cycles=True)
    ours = stack([as_evolax(n, c, N_IN, N_OUT, MAX_NODES, MAX_CONNS) for n, c in genomes])
    policy = NEATNetwork(MAX_NODES, MAX_CONNS, recurrent=True, activation_steps=2)
    x = np.random.default_rng(3).normal(size=(6, N_IN)).astype(np.float32)

    @jax.jit
    def outputs(genome):
        net = policy.prepare(genome)

        def step(values, obs):
            action, values = policy.apply(net, obs, values, None)
            return values, action

        return jax.lax.scan(step, policy.reset(None), x)[1]

    got = np.asarray(jax.vmap(outputs)(ours))
    for k, (nodes, conns) in enumerate(genomes):
        net = neat.nn.RecurrentNetwork.create(as_neat_python(nodes, conns, N_IN, N_OUT), cfg)
        want = [[net.activate(list(row)) for _ in range(2)][-1] for row in x.astype(float)]
        np.testing.assert_allclose(got[k], want, rtol=1e-4, atol=1e-5, err_msg=f"genome {k}")


@pytest.mark.parametrize(("recurrent", "n_hidden"), [(False, 0), (True, 0), (False, 3), (True, 2)])
def test_the_start_genome_has_neat_python_s_full_connections(recurrent, n_hidden):
    """A recurrent genome starts with each output (and hidden node) looping on itself; hidden
    nodes sit between the inputs and outputs (``full_nodirect``), as neat-python's."""
    cfg = config()
    cfg.genome_config.feed_forward = not recurrent
    cfg.genome_config.num_hidden = n_hidden
    cfg.genome_config.initial_connection = "full_nodirect"
    cfg.genome_config.innovation_tracker = neat.innovation.InnovationTracker()
    genome = neat.DefaultGenome(0)
    genome.configure_new(cfg.genome_config)
    n_in = cfg.genome_config.num_inputs
    key = {k: -(k + 1) for k in range(n_in)}  # evolax's ids as neat-python's
    key |= {n_in + k: k for k in range(1 + n_hidden)}  # the output, then the hidden nodes
    ours = NEATNetwork(recurrent=recurrent, n_hidden=n_hidden).init(None, (n_in,), (1,))
    assert int(np.sum(np.asarray(ours.node_id) != NONE)) == n_in + 1 + n_hidden
    real = np.asarray(ours.innovation) != NONE
    pairs = zip(np.asarray(ours.conn_in)[real], np.asarray(ours.conn_out)[real], strict=True)
    assert sorted((key[int(a)], key[int(b)]) for a, b in pairs) == sorted(genome.connections)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(n_hidden=-1), r"^n_hidden must be a non-negative integer, got -1$"),
        (dict(initial_connection="partial"), r"^initial_connection must be 'full' or 'none'"),
        (dict(max_nodes=7, n_hidden=4), r"^max_nodes must hold the 3 inputs, 1 outputs and 4 "),
        (dict(max_conns=10, n_hidden=4), r"^max_conns must hold the 16 first connections, got 10$"),
    ],
)
def test_bad_network_settings_raise_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        NEATNetwork(**kwargs).init(None, (3,), (1,))


@pytest.mark.slow
def test_exported_source_and_expressions_compute_what_neat_python_s_networks_compute(tmp_path):
    import sympy

    from evolax.neat.export import to_python, to_sympy
    from evolax.render import plot_network

    cfg = small_config()
    policy = NEATNetwork(max_nodes=MAX_NODES, max_conns=MAX_CONNS)
    x = np.random.default_rng(7).normal(size=(4, N_IN))
    for k, (nodes, conns) in enumerate(random_pairs(15, seed=8)):
        network = policy.export(as_evolax(nodes, conns, N_IN, N_OUT, MAX_NODES, MAX_CONNS))
        reference = neat.nn.FeedForwardNetwork.create(
            as_neat_python(nodes, conns, N_IN, N_OUT), cfg
        )
        want = np.array([reference.activate(list(row)) for row in x])
        scope: dict = {}
        exec(to_python(network), scope)  # the code under test
        np.testing.assert_allclose([scope["network"](list(row)) for row in x], want, rtol=1e-6)
        symbols = sympy.symbols(f"x0:{N_IN}")
        f = sympy.lambdify(symbols, to_sympy(network), "math")
        np.testing.assert_allclose([f(*row) for row in x], want, rtol=1e-6, err_msg=f"{k}")
    assert plot_network(network, tmp_path / "network.png").stat().st_size > 0


@pytest.mark.slow
def test_the_distance_is_neat_python_s():
    cfg = small_config()
    rng = np.random.default_rng(2)
    pairs = []
    for _ in range(30):
        nodes, conns = random_genome(rng, N_IN, N_OUT, 4, 20)
        # a relative: some genes dropped, some attributes moved (innovations stay per key)
        keep = rng.random(len(conns)) < 0.7
        other = [
            (a, b, w + rng.normal() * keep[j], e, i)
            for j, (a, b, w, e, i) in enumerate(conns)
            if keep[j] or rng.random() < 0.5
        ]
        other_nodes = {
            n: (b + rng.normal(), r)
            for n, (b, r) in nodes.items()
            if rng.random() < 0.8 or n < N_IN + N_OUT
        }
        other = [c for c in other if (c[0] < N_IN or c[0] in other_nodes) and c[1] in other_nodes]
        pairs.append(((nodes, conns), (other_nodes, other)))
    d = jax.jit(jax.vmap(lambda a, b: distance(a, b, 1.0, 0.5)))
    a = stack([as_evolax(*p[0], N_IN, N_OUT, MAX_NODES, MAX_CONNS) for p in pairs])
    b = stack([as_evolax(*p[1], N_IN, N_OUT, MAX_NODES, MAX_CONNS) for p in pairs])
    got = np.asarray(d(a, b))
    for k, (p, q) in enumerate(pairs):
        ga, gb = (as_neat_python(*g, N_IN, N_OUT) for g in (p, q))
        want = ga.distance(gb, cfg.genome_config)
        np.testing.assert_allclose(got[k], want, rtol=1e-5, err_msg=f"pair {k}")


@pytest.mark.slow
def test_offspring_counts_are_neat_python_s():
    from neat.reproduction import DefaultReproduction

    rng = np.random.default_rng(3)
    spawn = jax.jit(spawn_amounts)
    for _ in range(200):
        n, pop, smallest = (
            int(rng.integers(1, 9)),
            int(rng.integers(40, 200)),
            int(rng.integers(1, 4)),
        )
        previous = rng.multinomial(pop - n, np.ones(n) / n) + 1
        adjusted = rng.random(n) * (rng.random() < 0.9)
        want = DefaultReproduction.compute_spawn(list(adjusted), list(previous), pop, smallest)
        want = DefaultReproduction._adjust_spawn_exact(None, want, pop, smallest)
        slots = 10  # padded: the dead slots get none
        got = spawn(
            jnp.zeros(slots).at[:n].set(adjusted),
            jnp.zeros(slots, jnp.int32).at[:n].set(previous),
            jnp.arange(slots) < n,
            pop,
            smallest,
        )
        assert list(np.asarray(got[:n])) == want and int(got[n:].sum()) == 0


def test_a_connection_split_twice_in_a_generation_gets_the_same_numbers():
    split = jnp.array([True, True, False, True])
    innovation = jnp.array([7, 3, 7, 7], jnp.int32)
    connect = jnp.array([True, False, True, True])
    source, target = jnp.array([0, 0, 0, 1], jnp.int32), jnp.array([5, 0, 5, 5], jnp.int32)
    node, base, conn, next_node, next_inn = number_new_genes(
        split, innovation, connect, source, target, jnp.int32(10), jnp.int32(100)
    )
    assert node.tolist() == [11, 10, NONE, 11]  # innovation 3 is split first, then 7
    assert base.tolist() == [102, 100, NONE, 102]
    assert conn.tolist() == [104, NONE, 104, 105]  # after the 4 split connections
    assert (int(next_node), int(next_inn)) == (12, 106)


def test_crossover_takes_the_fitter_parent_s_genes_and_disables_three_quarters():
    rng = np.random.default_rng(4)
    (n1, c1) = random_genome(rng, N_IN, N_OUT, 3, 15)
    c1 = [(a, b, w, i % 2 == 0, i) for i, (a, b, w, _, _) in enumerate(c1)]
    c2 = [(a, b, w + 10, True, i) for (a, b, w, e, i) in c1[::3]] + [(0, N_IN, 0.0, True, 500)]
    fitter = as_evolax(n1, c1, N_IN, N_OUT, MAX_NODES, MAX_CONNS)
    other = as_evolax(n1, c2, N_IN, N_OUT, MAX_NODES, MAX_CONNS)
    keys = jax.random.split(jax.random.key(0), 4000)
    kids = jax.jit(jax.vmap(crossover, in_axes=(0, None, None)))(keys, fitter, other)
    assert np.all(np.asarray(kids.innovation) == np.asarray(fitter.innovation))  # no 500
    matching = np.isin(np.asarray(fitter.innovation), [c[4] for c in c2])
    w = np.asarray(kids.weight)
    from_other = np.isclose(w, np.asarray(fitter.weight) + 10)
    assert abs(from_other[:, matching].mean() - 0.5) < 0.03
    assert not from_other[:, ~matching].any()
    # a matching gene disabled in the fitter only: its flag comes from the other parent half
    # the time, and is then turned off 3/4 of the time: enabled with probability 1/8
    disabled_in_fitter = matching & ~np.asarray(fitter.enabled)
    assert abs(np.asarray(kids.enabled)[:, disabled_in_fitter].mean() - 0.25 * 0.5) < 0.03


def test_add_node_splits_a_connection_as_the_paper_says():
    rng = np.random.default_rng(5)
    nodes, conns = random_genome(rng, N_IN, N_OUT, 0, 4)
    g = as_evolax(nodes, conns, N_IN, N_OUT, MAX_NODES, MAX_CONNS)
    k = int(g.innovation[0])
    new = apply_split(g, jnp.asarray(True), jnp.int32(k), jnp.int32(40), jnp.int32(2000))
    old = {
        int(i): (int(a), int(b), float(w))
        for a, b, w, i in zip(g.conn_in, g.conn_out, g.weight, g.innovation, strict=True)
        if i != NONE
    }
    a, b, w = old[k]
    got = {
        int(i): (int(x), int(y), float(v), bool(e))
        for x, y, v, e, i in zip(
            new.conn_in, new.conn_out, new.weight, new.enabled, new.innovation, strict=True
        )
        if i != NONE
    }
    assert got[k][3] is False
    assert got[2000] == (a, 40, 1.0, True) and got[2001] == (40, b, w, True)
    assert 40 in np.asarray(new.node_id).tolist()
    innovation = np.asarray(new.innovation)
    assert np.all(np.diff(innovation[innovation != NONE]) > 0)  # still sorted, empty last
    assert np.all(innovation[6:] == NONE)


@pytest.mark.slow
def test_add_connection_never_closes_a_cycle_in_a_feed_forward_genome():
    from neat.graphs import creates_cycle

    propose = jax.jit(jax.vmap(propose_connection, in_axes=(0, None, None, None)), static_argnums=3)
    for seed, (nodes, conns) in enumerate(random_pairs(20, seed=6)):
        g = as_evolax(nodes, conns, N_IN, N_OUT, MAX_NODES, MAX_CONNS)
        keys = jax.random.split(jax.random.key(seed), 64)
        do, exists, source, target = propose(keys, g, jnp.asarray(True), True)
        assert not np.any(np.asarray(do) & np.asarray(exists))
        existing = [(a, b) for a, b, *_ in conns]
        for d, s, t in zip(np.asarray(do), np.asarray(source), np.asarray(target), strict=True):
            if d:
                assert not creates_cycle(existing, (int(s), int(t))) and (s, t) not in existing


@pytest.mark.slow
def test_neat_trains_xor_inside_the_jitted_scan_and_keeps_its_genomes_valid(tmp_path):
    trainer = evolax.Trainer(
        algorithm=NEAT(pop_size=40, max_species=8),
        policy=NEATNetwork(max_nodes=10, max_conns=24),
        task=XOR(),
        n_repeats=1,
    )

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(state):
        return trainer.run(state, 15)

    state = trainer.init(jax.random.key(0))
    state, metrics = run(state)
    state, metrics = run(state)  # the same program again
    assert np.all(np.diff(np.asarray(metrics["best_fitness"])) >= 0)
    pop = state.algo_state.population
    assert np.all(np.diff(np.asarray(pop.innovation), axis=1) >= 0)  # sorted, empty last
    for g in range(40):
        real = np.asarray(pop.innovation[g]) != NONE
        ids = set(np.asarray(pop.node_id[g]).tolist()) - {NONE}
        ends = set(np.asarray(pop.conn_in[g])[real]) | set(np.asarray(pop.conn_out[g])[real])
        assert ends <= ids and len(set(np.asarray(pop.innovation[g])[real])) == real.sum()
    assert int(jnp.max(jax.vmap(conn_count)(pop))) > 0
    assert int(state.algo_state.next_innovation) > 2  # new genes were numbered

    # the whole state, species included, survives a checkpoint exactly
    store = CheckpointStore(tmp_path, keep=1)
    store.save(state, {})
    restored, _ = store.restore(trainer.init(jax.random.key(5)))
    store.close()
    for x, y in zip(state_leaves(state), state_leaves(restored), strict=True):
        np.testing.assert_array_equal(x, y)


def test_hyperneat_paints_what_its_cppn_outputs_through_the_expression_threshold():
    """A CPPN whose output is ``x1`` (identity node, one connection): every weight from a node
    at ``x`` is ``sign(x) (|x| - 0.2) / 0.8 * 3``, or none where ``|x| < 0.2``."""
    policy = HyperNEAT(hidden_sizes=(4,), activation_options=("identity",))
    genome = policy.init(None, (3,), (2,))
    genome = genome.replace(weight=jnp.where(genome.innovation == 0, 1.0, 0.0))  # x1 -> out
    weights = jax.jit(policy.prepare)(genome)

    def painted(x):
        return np.where(np.abs(x) < 0.2, 0.0, np.sign(x) * (np.abs(x) - 0.2) / 0.8 * 3.0)

    inputs, hidden = np.linspace(-1, 1, 3), np.linspace(-1, 1, 4)
    np.testing.assert_allclose(weights[0], np.repeat(painted(inputs)[:, None], 4, 1), atol=1e-6)
    np.testing.assert_allclose(weights[1], np.repeat(painted(hidden)[:, None], 2, 1), atol=1e-6)
    action, _ = policy.apply(weights, jnp.array([0.5, -1.0, 2.0]), policy.reset(None), None)
    want = np.tanh(np.tanh(np.array([0.5, -1.0, 2.0]) @ weights[0]) @ weights[1])
    np.testing.assert_allclose(action, want, rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_neat_evolves_hyperneat_cppns_in_the_trainer():
    trainer = evolax.Trainer(
        algorithm=NEAT(pop_size=30, max_species=8, activation_mutate_rate=0.1),
        policy=HyperNEAT(hidden_sizes=(4,), max_nodes=10, max_conns=20),
        task=XOR(),
        n_repeats=1,
    )
    state, metrics = jax.jit(trainer.run, static_argnums=1)(trainer.init(jax.random.key(0)), 20)
    assert np.all(np.isfinite(np.asarray(metrics["fitness_max"])))
    assert float(metrics["best_fitness"][-1]) > float(metrics["fitness_mean"][0])
    assert isinstance(trainer.algorithm.best(state.algo_state), CPPNGenome)


def test_other_algorithms_refuse_neat_genomes_in_one_line():
    genome = NEATNetwork().init(None, (2,), (1,))
    with pytest.raises(ValueError, match=r"^PGPE searches real vectors; a NEAT genome"):
        evolax.algorithms.PGPE(pop_size=4).init(jax.random.key(0), genome)


@pytest.mark.slow
@pytest.mark.parametrize("single", [False, True])
def test_mutations_change_genome_sizes_as_neat_python_s_do(single):
    """Three generations of mutation alone (no selection) from the XOR start: the mean node and
    connection counts match neat-python's ``genome.mutate`` within 4 standard errors."""
    import random

    from neat.innovation import InnovationTracker

    n = 3000
    cfg = config()
    gc = cfg.genome_config
    gc.single_structural_mutation = single
    gc.structural_mutation_surer = str(single).lower()
    gc.innovation_tracker = InnovationTracker()
    random.seed(0)
    theirs = []
    for i in range(n):
        genome = neat.DefaultGenome(i)
        genome.configure_new(gc)
        theirs.append(genome)
    algorithm = NEAT(
        pop_size=n, single_structural_mutation=single, structural_mutation_surer=single
    )
    state = algorithm.init(
        jax.random.key(0), NEATNetwork(max_nodes=12, max_conns=24).init(None, (2,), (1,))
    )
    mutate = jax.jit(
        lambda key, p, a, b: algorithm._mutate(jax.random.split(key, 6), p, jnp.ones(n, bool), a, b)
    )
    ours, a, b = state.population, state.next_node, state.next_innovation
    for generation in range(3):
        gc.innovation_tracker.reset_generation()
        for genome in theirs:
            genome.mutate(gc)
        ours, a, b = mutate(jax.random.key(generation), ours, a, b)
        for mine, their in (
            (jax.vmap(node_count)(ours), [len(g.nodes) for g in theirs]),
            (jax.vmap(conn_count)(ours), [len(g.connections) for g in theirs]),
        ):
            mine, their = np.asarray(mine, float), np.asarray(their, float)
            error = np.sqrt(mine.var() / n + their.var() / n)
            assert abs(mine.mean() - their.mean()) < 4 * error, (
                generation,
                mine.mean(),
                their.mean(),
            )


@pytest.mark.slow
def test_xor_takes_as_many_generations_as_neat_python_over_20_seeds():
    """The issue's measure: median generations to solve (threshold 3.9, 300 generations; a
    seed that never solves counts as later than all) and mean winner size within 1.5x."""
    theirs = [neat_python_xor(seed) for seed in range(20)]
    trainer = evolax.Trainer(
        algorithm=NEAT(pop_size=150),
        policy=NEATNetwork(max_nodes=16, max_conns=48),
        task=XOR(),
        n_repeats=1,
    )

    def one(key):
        return trainer.run(trainer.init(key), 300)[1]

    m = jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(0), 20))
    solved = np.asarray(m["fitness_max"]) >= 3.9
    first = np.where(solved.any(1), solved.argmax(1), 10**6)
    ours_size = [
        (m["best_nodes"][i, f], m["best_connections"][i, f])
        for i, f in enumerate(first)
        if f < 10**6
    ]
    theirs_first = [g if g is not None else 10**6 for g, _ in theirs]
    ratio = np.median(first) / np.median(theirs_first)
    assert 1 / 1.5 <= ratio <= 1.5, (np.median(first), np.median(theirs_first))
    for k in (0, 1):
        ours_mean = np.mean([s[k] for s in ours_size])
        theirs_mean = np.mean([s[k] for g, s in theirs if g is not None])
        assert 1 / 1.5 <= ours_mean / theirs_mean <= 1.5, (k, ours_mean, theirs_mean)
