"""NEAT on double-pole balancing without velocities against neat-python 2.0 with the same
configuration, and against the NEAT paper's figures.

Both run neat-python's XOR settings with 3 inputs, a tanh output, recurrent genomes (started
with each output looping on itself, as neat-python starts them) and a population of 1,000
(the paper's for this task): ``tests/neat/double-pole.ini`` so changed for neat-python, the
``double_pole_nv`` preset for evolax. Fitness is Gruau et al.'s over 1,000-step episodes. As
in the paper (Stanley & Miikkulainen 2002, section 4.2), each generation's champion (its best
fitness) is tested from the standard start for 100,000 steps and, if it passes, on Gruau's
625 starts for 1,000 steps each; a seed is solved when a champion balances at least 200 of
them. Over ``--seeds`` seeds each way (0 and the next), each stopped at its solve or after
``--generations``: the evaluations to solve (generations times the population, the paper's
measure; median and IQR), the solutions' generalisation scores and sizes, and the paper's
averages (table 2: 33,184 evaluations, 286 of 625). Writes
``benchmarks/results/neat_double_pole_nv.json`` and ``docs/results/neat_double_pole_nv.md``.

    python benchmarks/neat_double_pole_nv.py                 # 10 seeds, up to 150 generations
    python benchmarks/neat_double_pole_nv.py --seeds 1 --generations 20 --no-neat-python
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import evolax
from cartpole_seeds import quartiles
from evolax.config import build_trainer, resolve
from evolax.rollout import evaluate
from evolax.tasks.double_pole import failed, generalisation_starts
from results_table import RESULTS, write_results

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
from neat_reference import neat_python_double_pole_nv

LONG, SHORT, GENERALISES = 100_000, 1_000, 200
PAPER = {"evaluations": 33_184, "generalisation": 286}


def balanced_steps(policy, task, genome, physics, max_steps: int):
    """Steps ``genome`` balances the poles from ``physics`` (at most ``max_steps``)."""
    net, key = policy.prepare(genome), jax.random.key(0)  # both deterministic

    def cond(carry):
        return carry[3] & (carry[2] < max_steps)

    def body(carry):
        env, memory, steps, _ = carry
        action, memory = policy.apply(net, env.obs, memory, key)
        env, _, _ = task.step(env, action, key)
        up = ~failed(env.physics)
        return env, memory, steps + up, up

    start = (task.start(physics), policy.reset(key), jnp.zeros([], jnp.int32), jnp.array(True))
    return jax.lax.while_loop(cond, body, start)[2]


def evolax_solver(overrides: list[str]):
    """``solve(seed, generations) -> (generation, generalisation score, size)``."""
    trainer = build_trainer(resolve("double_pole_nv", overrides))
    algorithm, policy, task = trainer.algorithm, trainer.policy, trainer.task
    standard, starts = task.reset(jax.random.key(0)).physics, generalisation_starts()

    @jax.jit
    def generation(algo_state, key):
        k_ask, k_eval, k_tell = jax.random.split(key, 3)
        population, algo_state = algorithm.ask(k_ask, algo_state)
        fitness, _ = evaluate(policy, task, population, k_eval)
        champion = jax.tree.map(lambda x: x[jnp.argmax(fitness)], population)
        algo_state, metrics = algorithm.tell(k_tell, algo_state, population, fitness)
        size = (metrics["best_nodes"], metrics["best_connections"])
        return algo_state, champion, balanced_steps(policy, task, champion, standard, LONG), size

    @jax.jit
    def generalisation(champion):
        steps = jax.vmap(lambda s: balanced_steps(policy, task, champion, s, SHORT))(starts)
        return jnp.sum(steps >= SHORT)

    def solve(seed: int, generations: int):
        key, k_init = jax.random.split(jax.random.key(seed))
        algo_state = algorithm.init(k_init, policy.init(k_init, task.obs_shape, task.action_shape))
        for g in range(generations):
            key, k_gen = jax.random.split(key)
            algo_state, champion, steps, size = generation(algo_state, k_gen)
            if int(steps) >= LONG and (score := int(generalisation(champion))) >= GENERALISES:
                return g, score, tuple(float(v) for v in size)
        return None, None, None

    return solve, algorithm.pop_size


def rows_for(library: str, solve, seeds: int, generations: int, pop_size: int) -> dict:
    start, first, scores, sizes = time.perf_counter(), [], [], []
    for seed in range(seeds):
        generation, score, size = solve(seed, generations)
        first.append(None if generation is None else (generation + 1) * pop_size)
        if generation is not None:
            scores.append(score)
            sizes.append(size)
        print(library, seed, generation, score, size, flush=True)
    return {
        "library": library,
        "solved": sum(f is not None for f in first),
        "of": seeds,
        "evaluations": quartiles(first),
        "per_seed": first,
        "generalisation": float(np.mean(scores)) if scores else float("nan"),
        "nodes": float(np.mean([s[0] for s in sizes])) if sizes else float("nan"),
        "connections": float(np.mean([s[1] for s in sizes])) if sizes else float("nan"),
        "seconds_per_seed": (time.perf_counter() - start) / seeds,
    }


def table(rows: list[dict]) -> str:
    def fmt(value: float) -> str:
        return "never" if value == float("inf") else f"{value:,.0f}"

    lines = [
        "| library | seeds solved | evaluations to solve, median (IQR) | generalisation "
        "(of 625), mean | winner nodes, connections | wall time per seed |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        q, some = r["evaluations"], r["solved"] > 0
        lines.append(
            f"| {r['library']} | {r['solved']} of {r['of']} | {fmt(q['median'])} "
            f"({fmt(q['q25'])}-{fmt(q['q75'])}) | "
            + (
                f"{r['generalisation']:.0f} | {r['nodes']:.1f}, {r['connections']:.1f}"
                if some
                else "- | -"
            )
            + f" | {r['seconds_per_seed']:.0f} s |"
        )
    lines.append(
        f"| NEAT paper (table 2), average | - | {PAPER['evaluations']:,} "
        f"| {PAPER['generalisation']} | - | - |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--generations", type=int, default=150)
    parser.add_argument("--no-neat-python", action="store_true")
    parser.add_argument("overrides", nargs="*", help="evolax configuration overrides")
    args = parser.parse_args()
    evolax.use_cpu_cores(1)
    solve, pop_size = evolax_solver(args.overrides)
    rows = [rows_for("evolax (NEAT)", solve, args.seeds, args.generations, pop_size)]
    if not args.no_neat_python:
        starts = np.asarray(generalisation_starts(), float).tolist()

        def theirs(seed: int, generations: int):
            return neat_python_double_pole_nv(seed, generations, starts, pop_size)

        rows.append(rows_for("neat-python 2.0", theirs, args.seeds, args.generations, pop_size))
    print(table(rows))
    write_results(
        RESULTS / "neat_double_pole_nv.json", "neat_double_pole_nv", rows, table, config=vars(args)
    )


if __name__ == "__main__":
    main()
