"""Seconds per generation of evolution strategies on a shifted sphere: evolax vs evosax.

Each case runs the same algorithm with the same population, dimension, initial std and
optimizer in both libraries. A generation is ask + evaluate + tell, and the whole loop is one
jitted ``lax.scan`` in both. Each library runs in a worker process of its own; the parent
alternates timing rounds between them (see ``side_by_side.py``). Solution quality is measured
in the same worker after the warm-up: ``f(mean) / f(x0)`` after ``--quality-generations``
generations from the same start, where ``f(x) = |x - 1|^2`` (smaller is better), averaged over
``--quality-seeds`` seeds.

Run with `nox -s bench -- evosax` (installs evosax 0.3.2 beside evolax), or directly with
`python benchmarks/evosax_speed.py [--cases open_es,pgpe,...]` (every algorithm both have). With
``--baseline TREE`` a third worker times the evolax of another checkout (e.g. a ``git worktree``
of an earlier commit) in the same run, and the table gains its speed-up over evosax and the
ratio of the two evolax versions (named by ``--baseline-name`` and ``--name``). Writes
``benchmarks/results/evosax_speed.json`` and ``docs/results/evosax_speed.md`` (``--out``; the table
docs/results.md includes); without ``--baseline``, the cases not measured again keep their rows from
the last run.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import sys
import time
from functools import partial
from importlib.metadata import version
from pathlib import Path

import jax
import jax.numpy as jnp

from results_table import RESULTS, previous_rows, write_results
from side_by_side import serve, summary, time_workers


@dataclasses.dataclass(frozen=True)
class Case:
    """One comparison: evosax's class, the problem's size and the shared settings (the initial
    std, and Adam's learning rate on the mean where the algorithm takes an optimizer); and
    evolax's options that make its work evosax's (``per_particle_draws`` for PSO)."""

    evosax: str
    dim: int
    pop: int
    std: float
    lr: float | None = None
    options: tuple[tuple[str, object], ...] = ()


BIG, MEDIUM, SMALL = 100_000, 10_000, 1_000  # isotropic/diagonal, population, full-matrix
CASES = {
    "open_es": Case("Open_ES", BIG, 1024, 0.05, 0.01),
    "pgpe": Case("PGPE", BIG, 1024, 0.05, 0.01),
    "ars": Case("ARS", BIG, 1024, 0.05, 0.01),
    "esmc": Case("ESMC", BIG, 1024, 0.05, 0.01),
    "snes": Case("SNES", BIG, 1024, 0.05),
    "simple_es": Case("SimpleES", BIG, 1024, 0.05),
    "sep_cma_es": Case("Sep_CMA_ES", BIG, 256, 0.5),
    "lm_ma_es": Case("LM_MA_ES", BIG, 256, 0.5),
    "rm_es": Case("Rm_ES", BIG, 256, 0.5),
    "cr_fm_nes": Case("CR_FM_NES", BIG, 256, 0.5),
    "asebo": Case("ASEBO", MEDIUM, 256, 0.05, 0.01),
    "cma_es": Case("CMA_ES", SMALL, 128, 0.5),
    "ma_es": Case("MA_ES", SMALL, 128, 0.5),
    "xnes": Case("xNES", SMALL, 128, 0.5),
    "simple_ga": Case("SimpleGA", MEDIUM, 1024, 0.05),
    "mr15_ga": Case("MR15_GA", MEDIUM, 1024, 0.05),
    "samr_ga": Case("SAMR_GA", MEDIUM, 1024, 0.05),
    "gesmr_ga": Case("GESMR_GA", MEDIUM, 1024, 0.05),
    "de": Case("DifferentialEvolution", MEDIUM, 1024, 0.05),
    "pso": Case("PSO", MEDIUM, 1024, 0.05, options=(("per_particle_draws", True),)),
    # the population algorithms at a small size too, where a generation is a few launches
    "simple_ga_small": Case("SimpleGA", 100, 128, 0.05),
    "de_small": Case("DifferentialEvolution", 100, 128, 0.05),
    "pso_small": Case("PSO", 100, 128, 0.05, options=(("per_particle_draws", True),)),
    "hill_climbing": Case("HillClimbing", MEDIUM, 1024, 0.05),
    "simulated_annealing": Case("SimulatedAnnealing", MEDIUM, 1024, 0.05),
    "gradientless_descent": Case("GradientlessDescent", MEDIUM, 1024, 0.05),
    "iamalgam_full": Case("iAMaLGaM_Full", SMALL, 128, 0.5),
    "iamalgam_univariate": Case("iAMaLGaM_Univariate", BIG, 256, 0.5),
    "diffusion_evolution": Case("DiffusionEvolution", SMALL, 256, 0.05),  # pop x pop distances
    "persistent_es": Case("PersistentES", BIG, 1024, 0.05, 0.01),
    "noise_reuse_es": Case("NoiseReuseES", BIG, 1024, 0.05, 0.01),
}
"""The registered algorithms evosax 0.3.2 also has. Left out: random search (evosax's takes a
sampling function, so its work is whatever that function does), and SV-CMA-ES and SV-OpenES
(evosax's take the number of particles and a kernel in place of evolax's fields)."""
SHIFT = 1.0


def sphere(x):
    """``|x - SHIFT|^2`` of each row (minimised; evolax maximises its negative)."""
    return jnp.sum((x - SHIFT) ** 2, axis=-1)


def evolax_loop(case: str):
    """(init(key), run(state, key, n), f(mean of state)) for evolax's algorithm."""
    init, generation, quality = evolax_generation(case)
    return init, scanned(generation), quality


def evosax_loop(case: str):
    """The same for evosax's algorithm."""
    init, generation, quality = evosax_generation(case)
    return init, scanned(generation), quality


def scanned(generation):
    """``run(state, key, n)``: ``n`` generations in one ``lax.scan``, their metrics dropped."""

    def run(state, key, n):
        step = lambda state, key: (generation(state, key)[0], None)  # noqa: E731
        return jax.lax.scan(step, state, jax.random.split(key, n))[0]

    return run


def evolax_generation(case: str):
    """(init(key), generation(state, key) -> (state, metrics), f(mean of state)) for evolax's
    algorithm: a generation is ask + evaluate + tell."""
    import optax

    import evolax.algorithms as algorithms

    c = CASES[case]
    # evolax 0.1.0 (a --baseline checkout) called OpenES's initial std `sigma`, had no key in
    # `tell` and no REGISTRY
    old_api = "key" not in inspect.signature(algorithms.Algorithm.tell).parameters
    name = case.removesuffix("_small")  # the registered algorithm of a size's case
    cls = _old_class(name) if old_api else algorithms.REGISTRY[name]
    kwargs = {"sigma" if old_api and case == "open_es" else "init_std": c.std}
    if c.lr is not None:
        kwargs["optimizer"] = optax.adam(c.lr)
    algo = cls(c.pop, **kwargs, **dict(c.options))

    def generation(state, key):
        population, state = algo.ask(key, state)
        fitness = -sphere(population)
        if old_api:
            return algo.tell(state, population, fitness)
        return algo.tell(key, state, population, fitness)

    return (
        lambda key: algo.init(key, jnp.zeros(c.dim)),
        generation,
        lambda state: sphere(algo.best(state)),
    )


def _old_class(case: str):
    """evolax 0.1.0's class of ``case`` (it had no REGISTRY)."""
    import evolax.algorithms as algorithms

    names = {"open_es": "OpenES", "pgpe": "PGPE", "snes": "SNES", "sep_cma_es": "SepCMAES"}
    return getattr(algorithms, names.get(case, "CMAES"))


def evosax_generation(case: str, split_key: bool = True):
    """The same for evosax (which minimises): its class with the shared std (its
    ``std_schedule`` or ``std_init``) and optimizer, its defaults otherwise. ``ask`` and
    ``tell`` get keys split from the generation's (with ``split_key=False`` both get that key,
    as evolax's do)."""
    import evosax.algorithms
    import optax

    c = CASES[case]
    cls = evosax.algorithms.algorithms[c.evosax]
    x0 = jnp.zeros(c.dim)
    accepted = inspect.signature(cls.__init__).parameters
    kwargs = {}
    if c.lr is not None and "optimizer" in accepted:
        kwargs["optimizer"] = optax.adam(c.lr)
    if "std_schedule" in accepted:
        kwargs["std_schedule"] = optax.constant_schedule(c.std)
    algo = cls(c.pop, x0, **kwargs)
    params = algo.default_params
    if hasattr(params, "std_init"):
        params = params.replace(std_init=c.std)

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key) if split_key else (key, key)
        population, state = algo.ask(ask_key, state, params)
        return algo.tell(tell_key, population, sphere(population), state, params)

    if hasattr(algo, "get_mean"):  # a search distribution
        return (
            lambda key: algo.init(key, x0, params),
            generation,
            lambda s: sphere(algo.get_mean(s)),
        )

    def init(key):  # a population: x0 + std N(0, I), evaluated, as evolax's first one
        population = x0 + c.std * jax.random.normal(key, (c.pop, c.dim))
        return algo.init(key, population, sphere(population), params)

    return init, generation, lambda state: sphere(algo.get_best_solution(state))


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


def seconds(t: float) -> str:
    """Three decimals, or three significant digits below 0.1 s (an accelerator's times)."""
    return f"{t:.3f}" if t >= 0.1 else f"{t:.3g}"


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
        c = CASES[row["case"]]
        settings = f"adam {c.lr:g}, std {c.std:g}" if c.lr else f"std {c.std:g}"
        settings += "".join(f", {k}" if v is True else f", {k} {v}" for k, v in c.options)
        t, q = row["seconds_per_generation"], row["f_ratio"]
        line = (
            f"| {row['case']} ({settings}) | {row['dim']:,} | {row['pop_size']} "
            f"| {seconds(t['evolax'])} | {seconds(t['evosax'])} | {row['speedup']:.2f}x "
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
    parser.add_argument("--out", type=Path, default=RESULTS / "evosax_speed.json")
    parser.add_argument(
        "--baseline", type=Path, help="another evolax checkout, timed as a third worker"
    )
    parser.add_argument("--baseline-name", default="baseline", help="its name in the table")
    parser.add_argument("--name", default="this", help="this evolax's name beside it")
    parser.add_argument("--worker", nargs=2, metavar=("LIBRARY", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(*args.worker, args.quality_generations, args.quality_seeds)

    # cases not measured again keep their rows from the last run (unless a baseline is timed)
    rows = {} if args.baseline else {r["case"]: r for r in previous_rows(args.out)}
    names = (args.name, args.baseline_name) if args.baseline else None

    def write() -> None:  # after every case: a run stopped part-way keeps what it measured
        write_results(
            args.out,
            "shifted sphere, ask + evaluate + tell in one jitted lax.scan",
            [rows[case] for case in CASES if case in rows],
            partial(table, names),
            quality_generations=args.quality_generations,
            quality_seeds=args.quality_seeds,
            versions={name: version(name) for name in ("evolax", "evosax", "jax")},
        )

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
        rows[case] = {
            "case": case,
            "dim": CASES[case].dim,
            "pop_size": CASES[case].pop,
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
        write()

    print(table(names, [rows[case] for case in CASES if case in rows]))


if __name__ == "__main__":
    main()
