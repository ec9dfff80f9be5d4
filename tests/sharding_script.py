"""Run by test_sharding.py in a subprocess with 8 fake CPU devices; prints JSON results.

``python sharding_script.py`` checks the population split (the default test);
``python sharding_script.py more`` vmaps and composes on the mesh, splits episodes where the
population cannot be split, and splits tests (the slow test); ``python sharding_script.py
seeded`` trains a population held as seeds (LowRankES) and lists the collectives of its step.
"""

import json
import os
import re
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from evolax import MLP, PGPE, CartPoleSwingUp, Trainer, train
from evolax.algorithms import LowRankES, SimpleGA
from evolax.runner import _Chunks, initial_states
from evolax.sharding import POP_AXIS, default_mesh, population_mesh
from evolax.tasks import MultiAgentWaterWorld


def trainer(mesh, std_lr=0.1):
    return Trainer(
        algorithm=PGPE(pop_size=16, std_lr=std_lr),
        policy=MLP(hidden_sizes=(16,)),
        task=CartPoleSwingUp(max_steps=60),
        n_repeats=3,
        normalize_obs=True,
        mesh=mesh,
    )


def population_split(out, mesh, t):
    """The default test's checks: the population split over 1, 2 and 8 devices."""
    out.update(history={}, obs_count={})
    for n in (1, 2, 8):
        each = trainer(population_mesh(jax.devices()[:n]))
        state, history = jax.jit(each.run, static_argnums=1)(each.init(jax.random.key(0)), 3)
        out["history"][n] = np.asarray(history["fitness_mean"]).tolist()
        out["obs_count"][n] = float(state.obs_stats.count)

    population, _ = t.algorithm.ask(jax.random.key(1), t.init(jax.random.key(0)).algo_state)
    fitness, info = jax.jit(t._evaluate)(population, jax.random.key(2), None)
    out["fitness_spec"] = list(fitness.sharding.spec)
    out["shard_shapes"] = [list(s.data.shape) for s in info.returns.addressable_shards]

    # the state a step returns is placed as the one it took: calling a jitted run again on it
    # does not trace (and compile) again
    traces = []

    def counted(state):
        traces.append(None)
        return t.run(state, 2)

    run = jax.jit(counted)
    run(run(t.init(jax.random.key(0)))[0])
    out["run_traces"] = len(traces)
    # also a population algorithm's, whose loop carries the population split over the devices
    ga = Trainer(
        algorithm=SimpleGA(pop_size=16),
        policy=MLP(hidden_sizes=(16,)),
        task=CartPoleSwingUp(max_steps=60),
        n_repeats=3,
        mesh=mesh,
    )
    traces.clear()

    def ga_counted(state):
        traces.append(None)
        return ga.run(state, 2)

    ga_run = jax.jit(ga_counted)
    start = ga.init(jax.random.key(0))
    after = ga_run(ga_run(start)[0])[0]
    out["population_run_traces"] = len(traces)
    out["population_placed"] = [
        str(state.algo_state.population.sharding.spec) for state in (start, after)
    ]
    # so a run of chunks reuses its compiled chunk (it crashed on the second chunk)
    options = dict(log_interval=1, test_interval=2, n_test_episodes=8, progress=False)
    out["chunked_run"] = int(np.max(train(ga, 2, seed=[0, 1], **options).state.generation))
    # a chunk takes the state however it is laid out: XLA may return a chunk's state otherwise
    # than the chunk took it (a NEAT run of seeds got its genomes back replicated, split in)
    chunks = _Chunks(ga, batched=True)
    seeds = initial_states(ga, [0, 1])
    state = chunks(seeds, 1)[0]
    split = NamedSharding(mesh, P(None, POP_AXIS))
    moved = jax.tree.map(
        lambda leaf: jax.device_put(leaf, split if leaf.ndim > 1 and leaf.shape[1] == 16 else None),
        state.algo_state,
    )
    out["relaid_chunk"] = int(np.max(chunks(state.replace(algo_state=moved), 1)[0].generation))

    try:
        Trainer(algorithm=PGPE(pop_size=18), policy=MLP(), task=CartPoleSwingUp(), mesh=mesh)
    except ValueError as error:
        out["error"] = str(error)

    # the default mesh: the most devices that split the population, or else the episodes
    out["default_mesh"] = [
        default_mesh(pop, repeats, group).size
        for pop, repeats, group in [(16, 64, 16), (16, 3, 16), (18, 3, 1), (16, 1, 1)]
    ]


def more(out, mesh, t):
    """The slow test's checks: vmaps and compositions on the mesh, episode and test splits."""
    # vmap over seeds and over a hyperparameter, on the 8-device mesh, against separate runs
    keys = jax.random.split(jax.random.key(3), 2)
    one_seed = jax.jit(lambda k: t.run(t.init(k), 2)[1]["fitness_mean"])
    batched = jax.jit(jax.vmap(one_seed))(keys)
    single = [one_seed(k) for k in keys]
    out["vmap_seeds_error"] = float(np.max(np.abs(np.asarray(batched) - np.stack(single))))
    lrs = jnp.array([0.0, 0.3])
    stds = jax.jit(
        jax.vmap(lambda lr: jnp.mean(trainer(mesh, lr).run(t.init(keys[0]), 2)[0].algo_state.std))
    )(lrs)
    out["vmap_std_lr"] = np.asarray(stds).tolist()

    # composed with a user's own computation sharded on the same mesh, in one jit
    @jax.jit
    def user_program(state, features):
        state, history = t.run(state, 2)
        features = jax.lax.with_sharding_constraint(features, NamedSharding(mesh, P(POP_AXIS)))
        return state, history["fitness_max"], jnp.sum(jnp.tanh(features) ** 2)

    features = jax.device_put(jnp.ones((16, 4)), NamedSharding(mesh, P(POP_AXIS)))
    _, best, total = user_program(t.init(jax.random.key(0)), features)
    out["composed"] = [np.asarray(best).tolist(), float(total)]

    # a population too small to split (one 4-agent world; 6 cart-poles on 8 devices): the
    # devices split the episodes instead, with the results of one device
    def small(task, pop_size, mesh):
        return Trainer(
            algorithm=PGPE(pop_size=pop_size),
            policy=MLP(hidden_sizes=(8,)),
            task=task,
            n_repeats=8,
            normalize_obs=True,
            mesh=mesh,
        )

    out["split_repeats"] = {}
    for name, task, pop_size in [
        ("waterworld_ma", MultiAgentWaterWorld(n_agents=4, max_steps=20), 4),
        ("cartpole", CartPoleSwingUp(max_steps=40), 6),
    ]:
        rows = out["split_repeats"][name] = {}
        for n in (1, 2, 8):
            t = small(task, pop_size, population_mesh(jax.devices()[:n]))
            state, history = jax.jit(t.run, static_argnums=1)(t.init(jax.random.key(0)), 2)
            rows[n] = {
                "split": t.split,
                "fitness": np.asarray(history["fitness_mean"]).tolist(),
                "obs_count": float(state.obs_stats.count),
                "obs_mean": np.asarray(state.obs_stats.mean).tolist(),
            }
    t = small(MultiAgentWaterWorld(n_agents=4, max_steps=20), 4, mesh)
    start = t.init(jax.random.key(0))
    population, _ = t.algorithm.ask(jax.random.key(1), start.algo_state)
    _, info = jax.jit(t._evaluate)(population, jax.random.key(2), start.obs_stats)
    out["split_repeats_returns"] = [list(s.data.shape) for s in info.returns.addressable_shards]
    # Trainer.test: the devices split the test episodes where they divide evenly (8 episodes), with
    # the returns of one device; else one device runs them all (3 episodes)
    task = CartPoleSwingUp(max_steps=40)
    start = small(task, 6, None).init(jax.random.key(0))
    returns = {
        name: jax.jit(small(task, 6, m).test, static_argnums=2)(start, jax.random.key(4), n)
        for name, m, n in [("one", None, 8), ("split", mesh, 8), ("uneven", mesh, 3)]
    }
    out["test_returns"] = [np.asarray(returns[name]).tolist() for name in ("one", "split")]
    out["test_devices"] = [len(returns[name].sharding.device_set) for name in ("split", "uneven")]
    try:
        Trainer(
            algorithm=PGPE(pop_size=4),
            policy=MLP(),
            task=MultiAgentWaterWorld(n_agents=4),
            n_repeats=12,
            mesh=mesh,
        )
    except ValueError as error:
        out["split_error"] = str(error)


def seeded(out, mesh, t):
    """LowRankES on 1, 2 and 8 devices, and the collectives of its step on 8."""

    def low_rank(mesh):
        return Trainer(
            algorithm=LowRankES(pop_size=16, rank=2, init_std=0.1),
            policy=MLP(hidden_sizes=(32,)),
            task=CartPoleSwingUp(max_steps=60),
            n_repeats=3,
            mesh=mesh,
        )

    out["history"] = {}
    for n in (1, 2, 8):
        each = low_rank(population_mesh(jax.devices()[:n]))
        _, history = jax.jit(each.run, static_argnums=1)(each.init(jax.random.key(0)), 3)
        out["history"][n] = np.asarray(history["fitness_mean"]).tolist()
    each = low_rank(mesh)
    text = jax.jit(each.step).lower(each.init(jax.random.key(0))).compile().as_text()
    ops = "all-gather|all-reduce|reduce-scatter|collective-permute|all-to-all"
    sizes = []
    for line in text.splitlines():
        op = re.search(rf"\s({ops})(-start)?\(", line)
        if op is None or "=" not in line:
            continue
        result = line.split("=", 1)[1][: op.start() - line.index("=")]
        sizes += [
            int(np.prod([int(d) for d in dims.split(",") if d] or [1]))
            for dims in re.findall(r"\[([\d,]*)\]", result)
        ]
    out["collective_sizes"] = sizes
    mean = each.algorithm.init(  # LowRankES keeps its mean as the genome's pytree
        jax.random.key(0),
        each.policy.init(jax.random.key(0), each.task.obs_shape, each.task.action_shape),
    ).mean
    out["genome_size"] = sum(int(leaf.size) for leaf in jax.tree.leaves(mean))


out = {"n_devices": len(jax.devices())}
mesh = population_mesh()
modes = {"more": more, "seeded": seeded}
modes.get(sys.argv[1] if sys.argv[1:] else "", population_split)(out, mesh, trainer(mesh))
print(json.dumps(out))
