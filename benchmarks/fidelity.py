"""Numerical fidelity against the reference implementations: the tables of docs/fidelity.md.

Each part writes ``benchmarks/results/fidelity_PART.{json,md}``; ``quote_tables.py`` copies
the Markdown into the docs. Every ratio is measured side by side in one run, on this machine.

- ``bbob``: the 24 BBOB functions in float64 against COCO's ``cocoex``: the largest relative
  difference of ``f`` over random points of ``[-5, 5]^d`` and near the optimum, per function,
  over the dimensions and instances given.
- ``cma32``: CMA-ES and Sep-CMA-ES in float32 against pycma in float64 (Sep-CMA-ES against
  ``CMA_diagonal=True``) on the BBOB functions: evaluations to ``f - f_opt < 1e-8`` of one run
  (no restart), the same starts (``x0`` uniform in ``[-4, 4]^d``, ``sigma0 = 2``, default
  population) and a budget of ``10^4 d``; only where float32 represents the target (``f`` at
  the float32 point nearest the optimum is below ``1e-9``).
- ``restarts``: IPOP and BIPOP (``evolax.algorithms.ipop`` / ``bipop`` with CMA-ES, float64,
  pycma's tolx and tolfun) against ``cma.fmin(..., restarts=9, bipop=...)`` on the multimodal
  BBOB functions: per seed the evaluations to ``1e-8`` (or the whole budget), ``x0`` drawn
  anew for every run; the expected running time (ERT) of each and their ratio with a
  bootstrap interval over seeds.
- ``mo``: NSGA-II against pymoo 0.6.2 on ZDT and DTLZ, evolax in float32 and float64: the
  median hypervolume over seeds after the same evaluations (pop 100).
- ``speed``: CMA-ES seconds per generation (ask and tell, each jitted, the state donated)
  against pycma's ``ask`` / ``tell`` on one core (``taskset -c 0``, one BLAS and XLA thread),
  on the sphere, in float32 and float64.

Usage::

    taskset -c 0 python benchmarks/fidelity.py speed --dims 10 100 1000
    python benchmarks/fidelity.py bbob --dims 2 3 5 10 20 40 --instances 1 2 3 71 101
    python benchmarks/fidelity.py cma32 --dims 5 --seeds 3
    python benchmarks/fidelity.py restarts --functions 3 15 16 17 18 19 20 21 22 23 --jobs 3
    python benchmarks/fidelity.py mo --seeds 3
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from functools import partial
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "")
    + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

import jax

jax.config.update("jax_enable_x64", True)  # float64 available; each part picks its dtype

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from evolax.algorithms import CMAES, SepCMAES  # noqa: E402
from evolax.algorithms.cma.restarts import bipop, ipop  # noqa: E402
from evolax.problems.bbob import bbob_problem  # noqa: E402
from results_table import RESULTS, write_results  # noqa: E402

TARGET = 1e-8


def cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def ratio(ours: float, theirs: float) -> str:
    return "-" if not (np.isfinite(ours) and np.isfinite(theirs)) else f"{ours / theirs:.2f}x"


def median(values) -> float:
    finite = [v for v in values if np.isfinite(v)]
    return float(np.median(finite)) if finite else float("inf")


def evaluations_table(label: str, ours_name: str, theirs_name: str, rows: list[dict]) -> str:
    """Rows ``{label, dim, function, ours, pycma}`` (evaluations per seed, ``inf`` when not
    solved) as a Markdown table: per row the seeds solved and the medians, and their ratio."""
    lines = [
        f"| {label} | d | function | {ours_name}: solved, median evaluations | "
        f"{theirs_name}: solved, median evaluations | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        ours, theirs = median(r["ours"]), median(r["pycma"])
        solved = [sum(np.isfinite(v) for v in r[k]) for k in ("ours", "pycma")]
        lines.append(
            f"| {r[label]} | {r['dim']} | f{r['function']} | {solved[0]}/{len(r['ours'])}, "
            f"{ours:.0f} | {solved[1]}/{len(r['pycma'])}, {theirs:.0f} | {ratio(ours, theirs)} |"
        )
    return "\n".join(lines)


# ---- bbob: agreement with cocoex ---------------------------------------------------------


def bbob(args) -> None:
    import cocoex

    suite = cocoex.Suite(
        "bbob",
        "instances:" + ",".join(map(str, args.instances)),
        "dimensions:" + ",".join(map(str, args.dims)),
    )
    evaluate = jax.jit(lambda problem, x: problem(x))
    rng = np.random.default_rng(0)
    worst: dict[int, float] = {}
    for coco in suite:
        f, d, i = coco.id_function, coco.dimension, coco.id_instance
        ours = bbob_problem(f, d, i)
        points = np.concatenate(
            [rng.uniform(-5, 5, (32, d)), np.asarray(ours.x_opt) + rng.normal(0, 1e-3, (8, d))]
        )
        theirs = np.asarray([coco(x) for x in points])
        values = np.asarray(evaluate(ours, jnp.asarray(points)))
        worst[f] = max(worst.get(f, 0.0), float(np.max(np.abs(values - theirs) / np.abs(theirs))))
    rows = [{"function": f, "max_relative_difference": worst[f]} for f in sorted(worst)]

    def table(rows):
        lines = [
            f"| function | max relative difference to cocoex {cocoex.__version__} (float64) |",
            "|---|---|",
        ]
        lines += [f"| f{r['function']} | {r['max_relative_difference']:.1e} |" for r in rows]
        lines.append(
            f"\nDimensions {', '.join(map(str, args.dims))}; instances "
            f"{', '.join(map(str, args.instances))}; 40 points each (32 uniform in [-5, 5]^d, "
            "8 within ~1e-3 of the optimum)."
        )
        return "\n".join(lines)

    write_results(RESULTS / "fidelity_bbob.json", "fidelity bbob", rows, table, args=vars(args))
    print(table(rows))


# ---- cma32: the CMA family in float32 against pycma in float64 ---------------------------


def _evolax_run(factory, problem, dim, seed, dtype, budget):
    x0 = jnp.asarray(np.random.default_rng(seed).uniform(-4, 4, dim), dtype)
    cast = jax.tree.map(lambda a: a.astype(dtype) if a.dtype == jnp.float64 else a, problem)
    result = ipop(
        factory,
        cast.fitness,
        x0,
        jax.random.key(seed),
        budget,
        init_std=2.0,
        max_restarts=0,
        target_fitness=-TARGET,
    )
    return result.evaluations if -result.best_fitness < TARGET else float("inf")


def _pycma_run(problem, dim, seed, budget, options=None):
    import cma

    f_opt = float(problem.f_opt)
    evaluate = jax.jit(lambda x: problem.delta_f(x))
    es = cma.CMAEvolutionStrategy(
        np.random.default_rng(seed).uniform(-4, 4, dim),
        2.0,
        {
            "ftarget": TARGET,
            "verbose": -9,
            "seed": seed + 1,
            "maxfevals": budget,
            **(options or {}),
        },
    )
    while not es.stop():
        x = es.ask()
        es.tell(x, list(np.asarray(evaluate(jnp.asarray(np.asarray(x))))))
    del f_opt
    return es.result.evaluations if es.result.fbest < TARGET else float("inf")


def _representable(problem) -> bool:
    """Whether float32 holds the target: f at the float32 optimum, in float64, below 1e-9."""
    x32 = np.asarray(problem.x_opt, np.float32).astype(np.float64)
    return float(problem.delta_f(jnp.asarray(x32))) < TARGET / 10


def cma32(args) -> None:
    rows = []
    algorithms = {"CMA-ES": (CMAES, {}), "Sep-CMA-ES": (SepCMAES, {"CMA_diagonal": True})}
    for name, (factory, options) in algorithms.items():
        for dim in args.dims:
            for f in args.functions:
                problem = bbob_problem(f, dim, 1)
                if not _representable(problem):
                    continue
                budget = 10_000 * dim
                ours = [
                    _evolax_run(factory, problem, dim, s, jnp.float32, budget)
                    for s in range(args.seeds)
                ]
                theirs = [_pycma_run(problem, dim, s, budget, options) for s in range(args.seeds)]
                rows.append(
                    {"algorithm": name, "dim": dim, "function": f, "ours": ours, "pycma": theirs}
                )
                print(rows[-1], flush=True)

    table = partial(evaluations_table, "algorithm", "evolax float32", "pycma float64")
    write_results(RESULTS / "fidelity_cma32.json", "fidelity cma32", rows, table, args=vars(args))
    print(table(rows))


# ---- restarts: IPOP / BIPOP against pycma ------------------------------------------------


_delta_f = jax.jit(lambda problem, x: problem.delta_f(x))


def _values(problem, xs) -> list[float]:
    """``f - f_opt`` of pycma's candidates (a list of vectors)."""
    return list(np.asarray(_delta_f(problem, jnp.asarray(np.asarray(xs)))))


def _ert(evaluations: list[float], solved: list[bool]) -> float:
    """Expected running time: all evaluations spent (to the target, or the whole budget where
    it was missed) over the number of runs that reached the target."""
    return float(np.sum(evaluations)) / sum(solved) if any(solved) else float("inf")


def _bootstrap_ratio(ours: dict, theirs: dict, draws: int = 2000) -> tuple[float, float]:
    """5% and 95% quantiles of the ERT ratio over seeds resampled with replacement, each side
    independently (``inf`` where a resample solved nothing)."""
    rng = np.random.default_rng(0)
    ratios = []
    for _ in range(draws):
        i = rng.integers(0, len(ours["evaluations"]), len(ours["evaluations"]))
        j = rng.integers(0, len(theirs["evaluations"]), len(theirs["evaluations"]))
        a = _ert(list(np.asarray(ours["evaluations"])[i]), list(np.asarray(ours["solved"])[i]))
        b = _ert(list(np.asarray(theirs["evaluations"])[j]), list(np.asarray(theirs["solved"])[j]))
        ratios.append(a / b if np.isfinite(b) else (0.0 if np.isfinite(a) else np.nan))
    lo, hi = np.nanquantile(ratios, [0.05, 0.95], method="inverted_cdf")
    return float(lo), float(hi)


def _restarts_table(rows: list[dict]) -> str:
    lines = [
        "| restarts | d | function | evolax: solved, median evaluations (solved), ERT | "
        "pycma: solved, median evaluations (solved), ERT | ERT ratio | 90% bootstrap |",
        "|---|---|---|---|---|---|---|",
    ]

    def cell(side: dict) -> str:
        evals, solved = side["evaluations"], side["solved"]
        med = median([e if s else np.inf for e, s in zip(evals, solved, strict=True)])
        ert = _ert(evals, solved)
        med_s = f"{med:.0f}" if np.isfinite(med) else "-"
        ert_s = f"{ert:.0f}" if np.isfinite(ert) else "-"
        return f"{sum(solved)}/{len(solved)}, {med_s}, {ert_s}"

    for r in rows:
        ours, theirs = r["evolax"], r["pycma"]
        a, b = (
            _ert(ours["evaluations"], ours["solved"]),
            _ert(theirs["evaluations"], theirs["solved"]),
        )
        lo, hi = _bootstrap_ratio(ours, theirs)
        interval = f"{lo:.2f}-{hi:.2f}" if np.isfinite(a) and np.isfinite(b) else "-"
        interval = interval.replace("inf", "∞")
        lines.append(
            f"| {r['restarts']} | {r['dim']} | f{r['function']} | {cell(ours)} | "
            f"{cell(theirs)} | {ratio(a, b)} | {interval} |"
        )
    lines.append(
        "\nERT: all evaluations of all seeds (the whole budget where a seed missed the "
        "target) over the seeds that reached it; ratio evolax / pycma; the interval resamples "
        "the seeds of each side. Shared, loaded machine."
    )
    return "\n".join(lines)


def _restarts_row(task: tuple[int, int, str, int, int]) -> dict:
    """One row: IPOP or BIPOP (CMA-ES, float64) and ``cma.fmin(..., restarts=9, bipop=...)``
    over seeds, with the same starts (``x0`` uniform in ``[-4, 4]^d`` drawn anew per run,
    ``sigma0 = 2``, default population), pycma's tolx and tolfun (1e-11), up to 9 large
    restarts and ``budget`` evaluations; per seed the evaluations to ``f - f_opt < 1e-8``
    (whole generations) or all those spent."""
    import cma

    dim, f, name, seeds, budget = task
    driver, use_bipop = {"IPOP": (ipop, False), "BIPOP": (bipop, True)}[name]
    factory = partial(CMAES, tol_x=1e-11, tol_fun=1e-11)  # pycma's defaults
    problem = bbob_problem(f, dim, 1)
    draw = partial(jax.random.uniform, shape=(dim,), dtype=jnp.float64, minval=-4.0, maxval=4.0)
    ours: dict = {"evaluations": [], "solved": [], "runs": [], "seconds": 0.0}
    theirs: dict = {"evaluations": [], "solved": [], "runs": [], "seconds": 0.0}
    for seed in range(seeds):
        start = time.perf_counter()
        result = driver(
            factory,
            problem.fitness,
            draw,
            jax.random.key(seed),
            budget,
            init_std=2.0,
            max_restarts=9,
            target_fitness=-TARGET,
        )
        ours["seconds"] += time.perf_counter() - start
        ours["evaluations"].append(result.evaluations)
        ours["solved"].append(bool(-result.best_fitness < TARGET))
        ours["runs"].append(len(result.restarts))
        rng = np.random.default_rng(seed)
        start = time.perf_counter()
        res = cma.fmin(
            None,
            partial(rng.uniform, -4, 4, dim),
            2.0,
            {"ftarget": TARGET, "verbose": -9, "seed": seed + 1, "maxfevals": budget},
            restarts=9,
            bipop=use_bipop,
            parallel_objective=partial(_values, problem),
        )
        theirs["seconds"] += time.perf_counter() - start
        theirs["evaluations"].append(int(res[3]))
        theirs["solved"].append(bool(res[1] < TARGET))
        theirs["runs"].append(len(res[-2].all_stoppings) - 1)
    row = {"restarts": name, "dim": dim, "function": f, "budget": budget}
    print(row | {"evolax": ours, "pycma": theirs}, flush=True)
    return row | {"evolax": ours, "pycma": theirs}


def restarts(args) -> None:
    """:func:`_restarts_row` per dimension, function and strategy, ``--jobs`` processes at
    once; the table is rewritten as the rows come in, so that a cut run leaves them."""
    import multiprocessing

    tasks = [
        (dim, f, name, args.seeds, args.budget * dim)
        for dim in args.dims
        for f in args.functions
        for name in ("IPOP", "BIPOP")
    ]
    rows = []
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        for row in pool.imap(_restarts_row, tasks):
            rows.append(row)
            write_results(
                RESULTS / "fidelity_restarts.json",
                "fidelity restarts",
                rows,
                _restarts_table,
                args=vars(args),
            )
    print(_restarts_table(rows))


# ---- mo: NSGA-II against pymoo -----------------------------------------------------------

MO_CASES = {  # name: (variables, objectives, generations)
    "zdt1": (30, 2, 200),
    "zdt2": (30, 2, 200),
    "zdt3": (30, 2, 200),
    "zdt4": (10, 2, 300),
    "zdt6": (10, 2, 250),
    "dtlz1": (7, 3, 400),
    "dtlz2": (12, 3, 250),
}


def mo(args) -> None:
    sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
    from pymoo.algorithms.moo.nsga2 import NSGA2 as PymooNSGA2

    from evolax.algorithms.multiobjective.nsga2 import NSGA2
    from pymoo_reference import evolax_hypervolumes, pymoo_hypervolumes

    rows = []
    for name in args.problems:
        n_var, m, generations = MO_CASES[name]
        lower, upper = (-5.0, 5.0) if name == "zdt4" else (0.0, 1.0)
        row = {"problem": name, "n_var": n_var, "generations": generations}
        for dtype in ("float32", "float64"):
            with jax.enable_x64(dtype == "float64"):
                algo = NSGA2(
                    pop_size=100,
                    n_objectives=m,
                    lower=lower,
                    upper=upper,
                    mutation_rate=0.9 / n_var,
                )
                row[dtype] = evolax_hypervolumes(
                    algo, name, n_var, generations, args.seeds, 1.1
                ).tolist()
        make = partial(PymooNSGA2, pop_size=100)
        row["pymoo"] = pymoo_hypervolumes(
            make, name, n_var, m, generations, args.seeds, 1.1
        ).tolist()
        rows.append(row)
        print(row, flush=True)

    def table(rows):
        lines = [
            "| problem | variables, generations | evolax float32 | evolax float64 | pymoo 0.6.2 | "
            "float32 / pymoo |",
            "|---|---|---|---|---|---|",
        ]
        for r in rows:
            h32, h64, hp = (float(np.median(r[k])) for k in ("float32", "float64", "pymoo"))
            lines.append(
                f"| {r['problem'].upper()} | {r['n_var']}, {r['generations']} | {h32:.4f} | "
                f"{h64:.4f} | {hp:.4f} | {h32 / hp:.3f} |"
            )
        lines.append("\nMedian hypervolume (reference point 1.1 in every objective) over seeds.")
        return "\n".join(lines)

    write_results(RESULTS / "fidelity_mo.json", "fidelity mo", rows, table, args=vars(args))
    print(table(rows))


# ---- speed: CMA-ES per generation against pycma ------------------------------------------


def _evolax_seconds(dim: int, dtype, generations: int) -> float:
    with jax.enable_x64(dtype == jnp.float64):
        algo = CMAES(pop_size=4 + int(3 * np.log(dim)), init_std=0.5)
        state = algo.init(jax.random.key(0), jnp.ones(dim, dtype))
        ask = jax.jit(algo.ask, donate_argnums=1)
        tell = jax.jit(algo.tell, donate_argnums=1)
        key = jax.random.key(1)

        def generation(state, key):
            x, state = ask(key, state)
            state, _ = tell(key, state, x, -jnp.sum(x * x, axis=1))
            return state

        for _ in range(3):  # compile, then warm up (eigendecomposition due at least once)
            key, k = jax.random.split(key)
            state = generation(state, k)
        jax.block_until_ready(state)
        start = time.perf_counter()
        for _ in range(generations):
            key, k = jax.random.split(key)
            state = generation(state, k)
        jax.block_until_ready(state)
        return (time.perf_counter() - start) / generations


def _pycma_seconds(dim: int, seconds: float) -> tuple[float, int]:
    """pycma's seconds per generation over about ``seconds`` (at least 6 generations, so
    that its lazy eigendecompositions are counted), and the number of generations timed."""
    import cma

    es = cma.CMAEvolutionStrategy(np.ones(dim), 0.5, {"verbose": -9, "seed": 1})

    def run(generations):
        start = time.perf_counter()
        for _ in range(generations):
            x = es.ask()
            es.tell(x, [float(np.sum(v * v)) for v in x])
        return (time.perf_counter() - start) / generations

    calibration = run(3)
    generations = int(min(2000, max(6, seconds / calibration)))
    return run(generations), generations


def speed(args) -> None:
    rows = []
    for dim in args.dims:
        theirs, generations = _pycma_seconds(dim, args.seconds_each)
        row = {"dim": dim, "generations": generations, "pycma": theirs}
        for name, dtype in (("float32", jnp.float32), ("float64", jnp.float64)):
            row[name] = _evolax_seconds(dim, dtype, generations)
        rows.append(row)
        print(row, flush=True)
    where = (
        f"{cpu()}, one core ({'taskset' if len(os.sched_getaffinity(0)) == 1 else 'NOT pinned'})"
    )

    def table(rows):
        lines = [
            "| d | generations timed | pycma (float64) s / generation | evolax float64 | "
            "ratio | evolax float32 | ratio |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            lines.append(
                f"| {r['dim']} | {r['generations']} | {r['pycma']:.2e} | {r['float64']:.2e} | "
                f"{r['float64'] / r['pycma']:.2f}x | {r['float32']:.2e} | "
                f"{r['float32'] / r['pycma']:.2f}x |"
            )
        lines.append(f"\n{where}; shared, loaded machine: both timed one after the other, one run.")
        return "\n".join(lines)

    write_results(RESULTS / "fidelity_speed.json", "fidelity speed", rows, table, args=vars(args))
    print(table(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="part", required=True)
    p = sub.add_parser("bbob")
    p.add_argument("--dims", type=int, nargs="+", default=[2, 3, 5, 10, 20, 40])
    p.add_argument("--instances", type=int, nargs="+", default=[1, 2, 3, 71, 101])
    p = sub.add_parser("cma32")
    p.add_argument("--dims", type=int, nargs="+", default=[5, 10, 20])
    p.add_argument("--functions", type=int, nargs="+", default=list(range(1, 25)))
    p.add_argument("--seeds", type=int, default=5)
    p = sub.add_parser("restarts")
    p.add_argument("--dims", type=int, nargs="+", default=[5])
    p.add_argument("--functions", type=int, nargs="+", default=[3, 4, *range(15, 25)])
    p.add_argument("--seeds", type=int, default=9)
    p.add_argument("--budget", type=int, default=20_000, help="evaluations per dimension")
    p.add_argument("--jobs", type=int, default=1, help="processes (one row each)")
    p = sub.add_parser("mo")
    p.add_argument("--problems", nargs="+", default=list(MO_CASES))
    p.add_argument("--seeds", type=int, default=5)
    p = sub.add_parser("speed")
    p.add_argument("--dims", type=int, nargs="+", default=[10, 100, 1000])
    p.add_argument("--seconds-each", type=float, default=10.0)
    args = parser.parse_args()
    {"bbob": bbob, "cma32": cma32, "restarts": restarts, "mo": mo, "speed": speed}[args.part](args)


if __name__ == "__main__":
    main()
