"""Where an OpenES generation on the shifted sphere spends its time (d = 100,000, pop 1024).

Times, in alternating rounds in one process, each a jitted ``lax.scan`` over generations:
- ``noise``: the ``512 x d`` standard normals of the antithetic half, reduced to row sums;
- ``ask + sphere``: the mirrored population and its sphere values, without ``tell``;
- ``generation``: ask + sphere + tell, as in ``evosax_speed.py``.

The differences give the cost of the population and the sphere (``ask + sphere - noise``) and
of ``tell`` (``generation - ask + sphere``). The case (dimension, population, std, learning
rate) and the sphere are ``evosax_speed.py``'s. Writes the parts' medians to
``benchmarks/results/open_es_parts.json`` and ``docs/results/open_es_parts.md`` (``--out``; the
table docs/results.md includes). Run with `python benchmarks/open_es_parts.py [--dim 100000 --pop
1024 --generations 3 --rounds 5]`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import optax

from evolax.algorithms import OpenES
from evolax.algorithms.noise import gaussian
from evosax_speed import CASES, sphere
from results_table import RESULTS, write_results


def table(pop: int, dim: int, rows: list[dict]) -> str:
    """The seconds per generation of each part, described for a population ``pop`` in ``dim``."""
    what = {
        "noise": f"drawing the `{pop // 2} x {dim:,}` normals (with their row sums)",
        "ask + sphere": f"ask + sphere: the noise, the mirrored `{pop} x {dim:,}` population "
        "and its sphere values",
        "generation": "a whole generation (ask + sphere + tell)",
    }
    lines = ["| part | seconds per generation |", "|---|---|"]
    lines += [f"| {what[row['part']]} | {row['seconds_per_generation']:.3f} |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    case = CASES["open_es"]
    dim, pop, std, lr = case.dim, case.pop, case.std, case.lr
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dim", type=int, default=dim)
    parser.add_argument("--pop", type=int, default=pop)
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "open_es_parts.json")
    args = parser.parse_args()
    algo = OpenES(args.pop, optimizer=optax.adam(lr), init_std=std)  # evosax_speed.py's case

    def noise(state, key):
        return state, jnp.sum(gaussian(key, (args.pop // 2, args.dim)), axis=-1)

    def ask_sphere(state, key):
        population, state = algo.ask(key, state)
        return state, sphere(population)

    def generation(state, key):
        population, state = algo.ask(key, state)
        state, _ = algo.tell(key, state, population, -sphere(population))
        return state, None

    parts = {"noise": noise, "ask + sphere": ask_sphere, "generation": generation}

    def scanned(step):
        return jax.jit(lambda s, k: jax.lax.scan(step, s, jax.random.split(k, args.generations)))

    runs = {name: scanned(step) for name, step in parts.items()}
    state = algo.init(jax.random.key(0), jnp.zeros(args.dim))
    for run in runs.values():
        jax.block_until_ready(run(state, jax.random.key(0)))  # compile
    times: dict[str, list[float]] = {name: [] for name in runs}
    for i in range(args.rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            jax.block_until_ready(run(state, jax.random.key(i + 1)))
            times[name].append((time.perf_counter() - start) / args.generations)
    medians = {name: statistics.median(t) for name, t in times.items()}
    rows = [
        {"part": name, "seconds_per_generation": medians[name], "all_rounds": times[name]}
        for name in runs
    ]
    config = {"dim": args.dim, "pop": args.pop, "generations_per_round": args.generations}
    write_results(args.out, "open_es_parts", rows, partial(table, args.pop, args.dim), **config)
    print(table(args.pop, args.dim, rows))
    print(f"population + sphere: {medians['ask + sphere'] - medians['noise']:.3f} s")
    print(f"tell: {medians['generation'] - medians['ask + sphere']:.3f} s")


if __name__ == "__main__":
    main()
