"""NEAT on XOR against neat-python 2.0, with neat-python's XOR example configuration.

Two settings: the configuration file as written (structural mutations independent), and
with ``single_structural_mutation`` and ``structural_mutation_surer`` on, which is how
neat-python 2.0 runs the example file that omits them (it reads their default as the string
``'false'``, which Python takes as true). Both libraries run seeds 0-19 for at most 300
generations (population 150, fitness 4 - squared error,
solved at 3.9): neat-python one seed after another (its own ``random`` seeded), evolax all 20
as one vmapped program (``NEAT`` with ``NEATNetwork(max_nodes=16, max_conns=48)``, the
``xor`` preset). Reported: seeds solved, the median and interquartile range of the generation
that solves (a seed that never does counts as later than all), the mean size of the solving
network (nodes other than inputs, enabled connections: neat-python's ``genome.size()``), and
milliseconds per generation of one seed (evolax: the vmapped run after compiling, over 20 x
300 seed-generations; neat-python: its wall time over the generations it ran). Writes
``benchmarks/results/neat_xor.json`` and ``docs/results/neat_xor.md``.

    python benchmarks/neat_xor.py        # about 10 minutes on 2 cores
"""

from __future__ import annotations

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
from neat_reference import neat_python_xor

SEEDS, GENERATIONS, NEVER = 20, 300, None


def table(rows: list[dict]) -> str:
    lines = [
        "| library | structural mutations | seeds solved | generations to solve, median (IQR) "
        "| winner nodes, mean | winner connections, mean | ms per generation (one seed) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        q = r["generations"]
        lines.append(
            f"| {r['library']} | {r['mutations']} | {r['solved']} of {SEEDS} | {fmt(q['median'])} "
            f"({fmt(q['q25'])}-{fmt(q['q75'])}) | {r['nodes']:.2f} | {r['connections']:.2f} "
            f"| {r['ms_per_generation']:.2f} |"
        )
    return "\n".join(lines)


def fmt(value: float) -> str:
    return "never" if value == float("inf") else f"{value:.0f}"


def evolax_rows(single: bool) -> dict:
    flags = ["single_structural_mutation", "structural_mutation_surer"]
    trainer = build_trainer(resolve("xor", [f"algorithm.{f}={str(single).lower()}" for f in flags]))

    def one(key):
        return trainer.run(trainer.init(key), GENERATIONS)[1]

    run = jax.jit(jax.vmap(one))
    keys = jax.random.split(jax.random.key(0), SEEDS)
    jax.block_until_ready(run(keys))  # compile (and a first run)
    start = time.perf_counter()
    metrics = jax.block_until_ready(run(keys))
    seconds = time.perf_counter() - start
    solved = np.asarray(metrics["fitness_max"]) >= 3.9
    first = [int(s.argmax()) if s.any() else NEVER for s in solved]
    sizes = [
        (float(metrics["best_nodes"][i, f]), float(metrics["best_connections"][i, f]))
        for i, f in enumerate(first)
        if f is not None
    ]
    ms = 1e3 * seconds / (SEEDS * GENERATIONS)
    return summary("evolax (NEAT)", single, first, sizes, ms)


def neat_python_rows(single: bool) -> dict:
    start, first, sizes, generations = time.perf_counter(), [], [], 0
    for seed in range(SEEDS):
        solved_at, size = neat_python_xor(seed, GENERATIONS, single)
        first.append(solved_at)
        generations += GENERATIONS if solved_at is None else solved_at + 1
        if solved_at is not None:
            sizes.append(tuple(float(v) for v in size))
    seconds = time.perf_counter() - start
    return summary("neat-python 2.0", single, first, sizes, 1e3 * seconds / generations)


def summary(library: str, single: bool, first: list, sizes: list, ms: float) -> dict:
    return {
        "library": library,
        "mutations": "at most one, surer" if single else "independent",
        "solved": sum(f is not None for f in first),
        "generations": quartiles(first),
        "per_seed": first,
        "nodes": float(np.mean([s[0] for s in sizes])),
        "connections": float(np.mean([s[1] for s in sizes])),
        "ms_per_generation": ms,
    }


def main() -> None:
    evolax.use_cpu_cores(1)  # one device: the 20 seeds are one program
    rows = [f(single) for single in (False, True) for f in (evolax_rows, neat_python_rows)]
    write_results(RESULTS / "neat_xor.json", "neat_xor", rows, table)
    print(table(rows))


if __name__ == "__main__":
    main()
