"""Seconds per generation of evolution strategies on a shifted sphere: evolax vs evosax.

Each case runs the same algorithm with the same population, dimension, initial std and
optimizer in both libraries. A generation is ask + evaluate + tell, and the whole loop is one
jitted ``lax.scan`` in both. Each library runs in a worker process of its own; the parent
alternates timing rounds between them (see ``side_by_side.py``). Solution quality is measured
in the same worker after the warm-up: ``f(mean) / f(x0)`` after ``--quality-generations``
generations from the same start, where ``f(x) = |x - 1|^2`` (smaller is better), averaged over
``--quality-seeds`` seeds.

Run with `nox -s bench -- evosax` (installs evosax 0.3.2 beside evolax), or directly with
`python benchmarks/evosax_speed.py [--cases open_es,pgpe,snes,sep_cma_es,cma_es]`. With
``--baseline TREE`` a third worker times the evolax of another checkout (e.g. a ``git worktree``
of an earlier commit) in the same run, and the table gains its speed-up over evosax and the
ratio of the two evolax versions (named by ``--baseline-name`` and ``--name``). Writes
``benchmarks/results/evosax_speed.json`` and ``.md`` (``--out``; the table docs/results.md
quotes).
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from functools import partial
from importlib.metadata import version
from pathlib import Path

import jax
import jax.numpy as jnp

from results_table import write_results
from side_by_side import serve, summary, time_workers

# name: (dimension, population, initial std, learning rate of the mean or None)
CASES = {
    "open_es": (100_000, 1024, 0.05, 0.01),
    "pgpe": (100_000, 1024, 0.05, 0.01),
    "snes": (100_000, 1024, 0.05, None),
    "sep_cma_es": (100_000, 256, 0.5, None),
    "cma_es": (1_000, 128, 0.5, None),
}
SHIFT = 1.0


def sphere(x):
    """``|x - SHIFT|^2`` of each row (minimised; evolax maximises its negative)."""
    return jnp.sum((x - SHIFT) ** 2, axis=-1)


def evolax_loop(case: str):
    """(init(key), run(state, key, n), f(mean of state)) for evolax's algorithm."""
    import optax

    import evolax.algorithms as algorithms

    dim, pop, std, lr = CASES[case]
    # evolax 0.1.0 (a --baseline checkout) called OpenES's initial std `sigma` and had no key
    # in `tell`
    old_api = "key" not in inspect.signature(algorithms.Algorithm.tell).parameters
    algo = {
        "open_es": lambda: algorithms.OpenES(
            pop, optimizer=optax.adam(lr), **{"sigma" if old_api else "init_std": std}
        ),
        "pgpe": lambda: algorithms.PGPE(pop, optimizer=optax.adam(lr), init_std=std),
        "snes": lambda: algorithms.SNES(pop, init_std=std),
        "sep_cma_es": lambda: algorithms.SepCMAES(pop, init_std=std),
        "cma_es": lambda: algorithms.CMAES(pop, init_std=std),
    }[case]()

    def generation(state, key):
        population, state = algo.ask(key, state)
        fitness = -sphere(population)
        if old_api:
            return algo.tell(state, population, fitness)[0], None
        return algo.tell(key, state, population, fitness)[0], None

    def run(state, key, n):
        return jax.lax.scan(generation, state, jax.random.split(key, n))[0]

    return (
        lambda key: algo.init(key, jnp.zeros(dim)),
        run,
        lambda state: sphere(algo.best(state)),
    )


def evosax_loop(case: str):
    """The same for evosax (which minimises)."""
    import optax
    from evosax.algorithms import CMA_ES, PGPE, SNES, Open_ES, Sep_CMA_ES

    dim, pop, std, lr = CASES[case]
    x0 = jnp.zeros(dim)
    algo = {
        "open_es": lambda: Open_ES(
            pop, x0, optimizer=optax.adam(lr), std_schedule=optax.constant_schedule(std)
        ),
        "pgpe": lambda: PGPE(pop, x0, optimizer=optax.adam(lr)),
        "snes": lambda: SNES(pop, x0),
        "sep_cma_es": lambda: Sep_CMA_ES(pop, x0),
        "cma_es": lambda: CMA_ES(pop, x0),
    }[case]()
    params = algo.default_params
    if case in ("pgpe", "snes", "sep_cma_es", "cma_es"):
        params = params.replace(std_init=std)

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        population, state = algo.ask(ask_key, state, params)
        state, _ = algo.tell(tell_key, population, sphere(population), state, params)
        return state, None

    def run(state, key, n):
        return jax.lax.scan(generation, state, jax.random.split(key, n))[0]

    return (
        lambda key: algo.init(key, x0, params),
        run,
        lambda state: sphere(algo.get_mean(state)),
    )


def worker(library: str, case: str, quality_generations: int, quality_seeds: int) -> None:
    init, run, quality = (evolax_loop if library == "evolax" else evosax_loop)(case)
    run = jax.jit(run, static_argnums=2)
    key = jax.random.key(0)
    state = init(key)
    compiled: set[int] = set()

    def generations(n: int) -> float:
        nonlocal state
        if n not in compiled:
            jax.block_until_ready(run(state, key, n))
            compiled.add(n)
        start = time.perf_counter()
        state = jax.block_until_ready(run(state, key, n))
        return time.perf_counter() - start

    def info() -> dict:
        ratios = []
        for seed in range(quality_seeds):  # seed 0 starts from key 0 and runs with key 1
            start = init(jax.random.key(2 * seed))
            final = run(start, jax.random.key(2 * seed + 1), quality_generations)
            ratios.append(float(quality(final) / quality(start)))
        return {"f_ratio": sum(ratios) / len(ratios), "f_ratios": ratios}

    serve(generations, info)


#: The table's name of each algorithm.
ALGORITHMS = {
    "open_es": "OpenES",
    "pgpe": "PGPE",
    "snes": "SNES",
    "sep_cma_es": "Sep-CMA-ES",
    "cma_es": "CMA-ES",
}


def table(names: tuple[str, str] | None, rows: list[dict]) -> str:
    """One line per case; with ``names`` (this evolax's, the baseline's) two more columns: the
    baseline's speed-up over evosax and this evolax's over the baseline."""
    header = (
        "| algorithm | d | pop | evolax s/gen | evosax s/gen | speed-up "
        "| quality, evolax / evosax |"
    )
    rule = "|---|---|---|---|---|---|---|"
    if names:
        this, baseline = names
        header += f" {baseline}'s speed-up, same run | {this} / {baseline} speed |"
        rule += "---|---|"
    lines = [header, rule]
    for row in rows:
        _, _, std, lr = CASES[row["case"]]
        settings = f"adam {lr:g}, std {std:g}" if lr else f"std {std:g}"
        t, q = row["seconds_per_generation"], row["f_ratio"]
        line = (
            f"| {ALGORITHMS[row['case']]} ({settings}) | {row['dim']:,} | {row['pop_size']} "
            f"| {t['evolax']:.3f} | {t['evosax']:.3f} | {row['speedup']:.2f}x "
            f"| {q['evolax']:.3g} / {q['evosax']:.3g} |"
        )
        if names:
            line += f" {row['baseline_speedup']:.2f}x | {row['evolax_over_baseline']:.3f} |"
        lines.append(line)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated")
    # even, so that CMA-ES's eigendecomposition every 2nd generation (d = 1000) is amortised
    parser.add_argument("--generations", type=int, default=4, help="generations per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quality-generations", type=int, default=100)
    parser.add_argument("--quality-seeds", type=int, default=1, help="quality: mean over seeds")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "evosax_speed.json"
    )
    parser.add_argument(
        "--baseline", type=Path, help="another evolax checkout, timed as a third worker"
    )
    parser.add_argument("--baseline-name", default="baseline", help="its name in the table")
    parser.add_argument("--name", default="this", help="this evolax's name beside it")
    parser.add_argument("--worker", nargs=2, metavar=("LIBRARY", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(*args.worker, args.quality_generations, args.quality_seeds)

    rows = {}
    for case in args.cases.split(","):
        if case not in CASES:
            sys.exit(f"unknown case {case!r}; choose from {sorted(CASES)}")
        common = [
            "--quality-generations",
            str(args.quality_generations),
            "--quality-seeds",
            str(args.quality_seeds),
        ]
        workers = {lib: [*common, "--worker", lib, case] for lib in ("evolax", "evosax")}
        elsewhere = {}
        if args.baseline:
            workers["baseline"] = [*common, "--worker", "evolax", case]
            elsewhere["baseline"] = args.baseline.resolve()
        infos: dict[str, dict] = {}
        times = time_workers(__file__, workers, args.generations, args.rounds, infos, elsewhere)
        per_gen = summary(times)
        dim, pop, _, _ = CASES[case]
        rows[case] = {
            "case": case,
            "dim": dim,
            "pop_size": pop,
            "seconds_per_generation": per_gen,
            "all_rounds": times,
            "speedup": per_gen["evosax"] / per_gen["evolax"],
            **(
                {
                    "baseline_speedup": per_gen["evosax"] / per_gen["baseline"],
                    "evolax_over_baseline": per_gen["baseline"] / per_gen["evolax"],
                }
                if args.baseline
                else {}
            ),
            "f_ratio": {lib: infos[lib]["f_ratio"] for lib in infos},
            "f_ratios": {lib: infos[lib]["f_ratios"] for lib in infos},
        }
        print(f"{case}: {rows[case]}", flush=True)

    names = (args.name, args.baseline_name) if args.baseline else None
    write_results(
        args.out,
        "shifted sphere, ask + evaluate + tell in one jitted lax.scan",
        list(rows.values()),
        partial(table, names),
        quality_generations=args.quality_generations,
        quality_seeds=args.quality_seeds,
        versions={name: version(name) for name in ("evolax", "evosax", "jax")},
    )
    print(table(names, list(rows.values())))


if __name__ == "__main__":
    main()
