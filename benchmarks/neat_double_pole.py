"""NEAT on double-pole balancing with velocities against neat-python 2.0, with the same
configuration.

Both run neat-python's XOR example configuration with 6 inputs and a tanh output (the force):
``tests/neat/double-pole.ini`` for neat-python, the ``double_pole`` preset for evolax
(``NEAT`` with ``NEATNetwork(max_nodes=24, max_conns=64)``). A seed is solved when a genome
balances both poles for 100,000 steps (Wieland's equations, the long pole starting at 0.07 rad;
neat-python steps the same equations in Python floats). Over ``--seeds`` seeds (0 and the
next ones; neat-python's ``random`` seeded with each, evolax's key from each), one after
another, each stopped at its solve or after ``--generations``: the generation where each
solves (median and IQR; a seed that never does counts as later than all), the winner's size
(nodes other than inputs, enabled connections: neat-python's ``genome.size()``) and wall time
per seed (evolax's includes its one compilation, shared by the seeds). Writes
``benchmarks/results/neat_double_pole.json`` and ``docs/results/neat_double_pole.md``.

    python benchmarks/neat_double_pole.py                 # 20 seeds, up to 200 generations
    python benchmarks/neat_double_pole.py --seeds 2 --generations 30
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
import numpy as np

import evolax
from cartpole_seeds import quartiles
from evolax.config import build_trainer, resolve
from results_table import RESULTS, write_results

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
from neat_reference import neat_python_double_pole

SOLVED = 100_000.0


def evolax_seed(run_one, trainer, seed: int, generations: int):
    """(the generation it solves in or None, winner size)."""
    state = trainer.init(jax.random.key(seed))
    for generation in range(generations):
        state, metrics = run_one(state)
        if float(metrics["fitness_max"][0]) >= SOLVED:
            size = (float(metrics["best_nodes"][0]), float(metrics["best_connections"][0]))
            return generation, size
    return None, None


def rows_for(library: str, solve, seeds: int) -> dict:
    start, first, sizes = time.perf_counter(), [], []
    for seed in range(seeds):
        generation, size = solve(seed)
        first.append(generation)
        if generation is not None:
            sizes.append(tuple(float(v) for v in size))
        print(library, seed, generation, size, flush=True)
    return {
        "library": library,
        "solved": sum(f is not None for f in first),
        "of": seeds,
        "generations": quartiles(first),
        "per_seed": first,
        "nodes": float(np.mean([s[0] for s in sizes])) if sizes else float("nan"),
        "connections": float(np.mean([s[1] for s in sizes])) if sizes else float("nan"),
        "seconds_per_seed": (time.perf_counter() - start) / seeds,
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| library | seeds solved | generations to solve, median (IQR) | winner nodes, mean "
        "| winner connections, mean | wall time per seed |",
        "|---|---|---|---|---|---|",
    ]

    def fmt(value: float) -> str:
        return "never" if value == float("inf") else f"{value:.0f}"

    for r in rows:
        q = r["generations"]
        lines.append(
            f"| {r['library']} | {r['solved']} of {r['of']} | {fmt(q['median'])} "
            f"({fmt(q['q25'])}-{fmt(q['q75'])}) | {r['nodes']:.2f} | {r['connections']:.2f} "
            f"| {r['seconds_per_seed']:.1f} s |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--generations", type=int, default=200)
    args = parser.parse_args()
    evolax.use_cpu_cores(1)
    trainer = build_trainer(resolve("double_pole"))
    run_one = jax.jit(lambda state: trainer.run(state, 1))
    rows = [
        rows_for(
            "evolax (NEAT)",
            lambda seed: evolax_seed(run_one, trainer, seed, args.generations),
            args.seeds,
        ),
        rows_for(
            "neat-python 2.0",
            lambda seed: neat_python_double_pole(seed, args.generations),
            args.seeds,
        ),
    ]
    print(table(rows))
    write_results(
        RESULTS / "neat_double_pole.json", "neat_double_pole", rows, table, config=vars(args)
    )


if __name__ == "__main__":
    main()
