"""Numerical fidelity against the reference implementations: the tables of docs/fidelity.md.

Each part writes ``benchmarks/results/fidelity_PART.json`` and the table the docs include,
``docs/results/fidelity_PART.md``; with no part (or ``all``), every part runs with its default
sizes. Every ratio is measured side by side in one run, on this machine.

- ``bbob``: the 24 BBOB functions in float64 against COCO's ``cocoex``: the largest difference
  of ``f``, relative to ``|f - f_opt| + |f_opt|``, over points of ``[-5, 5]^d`` and near the
  optimum, per function, over every dimension cocoex accepts and every instance of COCO's yearly
  lists (and three far beyond); for f15 and f16, COCO's and evolax's own errors against a
  50-digit evaluation (mpmath) where the two differ most.
- ``cma32``: CMA-ES, Sep-CMA-ES, MA-ES and LM-MA-ES in float32 (and float64 beside) against
  pycma in float64 (Sep-CMA-ES against ``CMA_diagonal=True``, the others against full CMA) on
  the BBOB functions: evaluations to ``f - f_opt < 1e-8`` of one run per seed (no restart),
  the same starts (``x0`` uniform in ``[-4, 4]^d``, ``sigma0 = 2``, default population), a
  budget of ``10^4 d``, ``f`` evaluated in float64 at the float32 genome; only where float32
  represents the target (``f`` at the float32 point nearest the optimum is below ``1e-9``).
  Rows where float32 solves fewer seeds than evolax float64 or pycma run again with
  ``--recheck-seeds`` seeds (seed luck or a loss).
- ``evosax32``: SNES, xNES, CR-FM-NES, SimpleES, OpenES and PGPE in float32 against evosax's
  in float32 with the same hyperparameters: the median best ``f - f_opt`` after a budget.
- ``restarts``: IPOP and BIPOP (``evolax.algorithms.ipop`` / ``bipop`` with CMA-ES, float64,
  pycma's tolx and tolfun) against ``cma.fmin(..., restarts=9, bipop=...)`` on the multimodal
  BBOB functions (f3, f4, f15-f24 at d = 5, 21 seeds on f3, 9 on the others; f16, f17, f21,
  f22 at d = 10 with 3 seeds): per seed the evaluations to ``1e-8`` (or the whole budget),
  ``x0`` drawn anew for every run; the expected running time (ERT) of each and their ratio
  with a bootstrap interval over seeds; and the termination criteria that ended the runs.
- ``mo``: NSGA-II, NSGA-III, MOEA/D and SMS-EMOA against pymoo 0.6.2's on ZDT1-4,6, DTLZ1-7
  and WFG1-9, evolax in float32 and float64: median IGD+ and hypervolume over seeds after the
  same evaluations, population and operators (``--scale`` shortens every run); pymoo's
  NSGA-II, NSGA-III and SMS-EMOA as published, keeping duplicate children
  (``eliminate_duplicates=False``; ``--pymoo-duplicates``: pymoo's default). ``--recheck``
  instead re-evaluates the last populations in float64 (``fidelity_mo_recheck``);
  ``--precision`` runs the search and the objective each in float32 or float64
  (``benchmarks/fidelity_mo_precision.py``).
- ``qd``: MAP-Elites, CVT-MAP-Elites, CMA-ME (three rankings) and CMA-MAE against pyribs 0.12
  on the linear-projection sphere and Rastrigin (d = 20), evolax in float32 and float64: median
  QD score and coverage over seeds after the same evaluations (``benchmarks/fidelity_qd.py``).
- ``speed``: CMA-ES seconds per generation (ask and tell, each jitted, the state donated)
  against pycma's ``ask`` / ``tell`` on one core (``taskset -c 0``, one BLAS and XLA thread),
  on the sphere, in float32 and float64, d = 10 to 5000, in alternating rounds.

Usage::

    python benchmarks/fidelity.py            # every part, default sizes: every table
    taskset -c 0 python benchmarks/fidelity.py speed --dims 10 100 1000 5000
    python benchmarks/fidelity.py bbob --dims 2 40 --instances 1 2 3 71 101
    python benchmarks/fidelity.py cma32 --dims 5 10 20 --seeds 5 3 3 --recheck-seeds 15
    python benchmarks/fidelity.py evosax32
    python benchmarks/fidelity.py restarts --jobs 4
    python benchmarks/fidelity.py mo --seeds 3 --scale 0.5 --jobs 2
    python benchmarks/fidelity.py qd --seeds 5 --jobs 2
    python benchmarks/fidelity.py mo --recheck --cases wfg1/nsga2 dtlz1/nsga2 --seeds 3 --scale 0.5
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import as_completed
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

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from evolax.algorithms import CMAES, LMMAES, MAES, SepCMAES  # noqa: E402
from evolax.algorithms.cma.cma_family import default_pop_size  # noqa: E402
from evolax.algorithms.cma.restarts import bipop, ipop  # noqa: E402
from evolax.problems.bbob import bbob_problem  # noqa: E402
from fidelity_mo_precision import precision_row, precision_table  # noqa: E402
from fidelity_qd import add_parser as add_qd_parser  # noqa: E402
from fidelity_qd import qd  # noqa: E402
from results_table import RESULTS, load_note, write_results  # noqa: E402

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

BBOB_INSTANCES = [*range(1, 16), *range(21, 81), *range(91, 111), 1000, 100000, 2147483647]
"""Every instance of every year's COCO ``bbob`` list (1-15 in 2009/10, then 1-5 with 21-30,
31-40, ..., 71-80, 91-100, 101-110), and three far beyond them up to cocoex's largest."""


def _exact(problem, x, digits: int = 50) -> float:
    """f15 or f16 at ``x`` to ``digits`` digits (mpmath), from the instance's own binary data:
    the value that COCO's and evolax's double-precision results both approximate."""
    import mpmath as mp

    mp.mp.dps = digits
    p = {k: np.asarray(v, np.float64) for k, v in problem.params.items()}
    d, num = len(x), lambda v: mp.mpf(float(v))

    def affine(matrix, v):
        return [mp.fsum(num(matrix[i, j]) * v[j] for j in range(d)) for i in range(d)]

    def oscillate(v):  # T_osz, with COCO's (binary) constants 0.1, 0.49, 0.79, 0.55, 0.31
        if v == 0:
            return mp.mpf(0)
        t = mp.log(abs(v)) / num(0.1)
        c1, c2 = (1.0, 0.79) if v > 0 else (0.55, 0.31)
        inner = t + num(0.49) * (mp.sin(num(c1) * t) + mp.sin(num(c2) * t))
        return mp.sign(v) * mp.exp(inner) ** num(0.1)

    shifted = [num(a) - num(b) for a, b in zip(x, p["xopt"], strict=True)]
    y = [oscillate(v) for v in affine(p["rotation"], shifted)]
    if problem.function_id == 15:  # T_asy^0.2, then Lambda^10 R, then Rastrigin
        beta = [num(0.2) * i / (d - 1) for i in range(d)]
        y = [v ** (1 + b * mp.sqrt(v)) if v > 0 else v for v, b in zip(y, beta, strict=True)]
        z = affine(p["matrix"], y)
        value = 10 * (d - mp.fsum(mp.cos(2 * mp.pi * v) for v in z)) + mp.fsum(v * v for v in z)
    else:  # f16: Lambda^(1/100) R, then the Weierstrass sum
        z = affine(p["matrix"], y)
        terms = (
            mp.mpf(2) ** -k * mp.cos(2 * mp.pi * (v + num(0.5)) * 3**k)
            for v in z
            for k in range(12)
        )
        f0 = mp.fsum(mp.mpf(2) ** -k * mp.cos(mp.pi * 3**k) for k in range(12))
        value = 10 * (mp.fsum(terms) / d - f0) ** 3
    return float(value + num(problem.f_opt))


SUITE_DIMS = [2, 3, 5, 10, 20, 40]  # cocoex's bbob refuses others (4, 7) or clips them to these
EXACT = (15, 16)  # functions checked against a 50-digit evaluation where they differ most


def bbob(args) -> None:
    """Largest difference of f, relative to ``|f - f_opt| + |f_opt|`` (the size of the sum
    COCO rounds last, so the most its double-precision result resolves), per function; for
    f15 and f16, COCO's and evolax's own errors at the points where they differ most."""
    import cocoex

    dims = "dimensions:" + ",".join(map(str, args.dims))
    chunks = [args.instances[k : k + 10] for k in range(0, len(args.instances), 10)]
    suites = (  # cocoex refuses a long option string: ten instances a suite
        cocoex.Suite("bbob", "instances:" + ",".join(map(str, chunk)), dims) for chunk in chunks
    )
    evaluate = jax.jit(lambda problem, x: problem(x))
    rng = np.random.default_rng(0)
    worst: dict[int, tuple[float, str]] = {}
    candidates: dict[int, list] = {f: [] for f in EXACT}  # (difference, f, d, i, x, coco value)
    far, near = args.points - args.points // 3, args.points // 3
    for coco in (problem for suite in suites for problem in suite):
        f, d, i = coco.id_function, coco.dimension, coco.id_instance
        ours = bbob_problem(f, d, i)
        x_opt = np.asarray(ours.x_opt)
        points = np.concatenate(
            [
                rng.uniform(-5, 5, (far, d)),  # far from the optimum
                x_opt + rng.normal(0, 1e-3, (near - near // 2, d)),  # near it
                x_opt + rng.normal(0, 1e-7, (near // 2, d)),  # very near it
            ]
        )
        theirs = np.asarray([coco(x) for x in points])
        values = np.asarray(evaluate(ours, jnp.asarray(points)))
        f_opt = float(ours.f_opt)
        relative = np.abs(values - theirs) / (np.abs(theirs - f_opt) + abs(f_opt))
        k = int(np.argmax(relative))
        if relative[k] >= worst.get(f, (-1.0, ""))[0]:
            worst[f] = (float(relative[k]), coco.id)
        if f in candidates:
            candidates[f].append((float(relative[k]), f, d, i, points[k], theirs[k], values[k]))
    rows = [
        {"function": f, "max_relative_difference": worst[f][0], "where": worst[f][1]}
        for f in sorted(worst)
    ]
    exact = {}  # f: (COCO's largest error, evolax's), over the points where they differ most
    for f, found in candidates.items():
        errors = []
        for _, _, d, i, x, theirs, value in sorted(found, key=lambda c: c[0])[-args.exact_points :]:
            problem = bbob_problem(f, d, i)
            reference, f_opt = _exact(problem, x), float(problem.f_opt)
            scale = abs(theirs - f_opt) + abs(f_opt)
            errors.append((abs(theirs - reference) / scale, abs(value - reference) / scale))
        if errors:
            exact[f] = tuple(float(max(e)) for e in zip(*errors, strict=True))
    for row in rows:
        if row["function"] in exact:
            row["coco_vs_exact"], row["evolax_vs_exact"] = exact[row["function"]]

    def table(rows):
        lines = [
            f"| function | max relative difference to cocoex {cocoex.__version__} (float64) "
            "| where | COCO vs 50 digits | evolax vs 50 digits |",
            "|---|---|---|---|---|",
        ]
        for r in rows:
            checked = (
                f"{r['coco_vs_exact']:.1e} | {r['evolax_vs_exact']:.1e}"
                if "coco_vs_exact" in r
                else " | "
            )
            lines.append(
                f"| f{r['function']} | {r['max_relative_difference']:.1e} | `{r['where']}` | "
                f"{checked} |"
            )
        instances = args.instances
        listed = (
            "every instance of COCO's yearly lists (1-15, 21-80, 91-110) and 1000, 100000, "
            "2147483647"
            if instances == BBOB_INSTANCES
            else ", ".join(map(str, instances))
        )
        n = args.points
        lines.append(
            f"\nDimensions {', '.join(map(str, args.dims))}"
            f"{' (all that cocoex accepts)' if sorted(args.dims) == SUITE_DIMS else ''}; "
            f"instances: {listed}; {n} points each ({n - n // 3} uniform in [-5, 5]^d, "
            f"{n // 3 - n // 6} within ~1e-3 and {n // 6} within ~1e-7 of the optimum). Each "
            "difference is relative to |f - f_opt| + |f_opt|: COCO adds f_opt last, so its own "
            "result is no finer than that. For f15 and f16, the last two columns compare COCO's "
            "and evolax's values with a 50-digit evaluation (mpmath) of the same instance at the "
            f"{args.exact_points} points where the two differ most: there COCO's own "
            "double-precision result is off by as much as it differs from evolax's."
        )
        return "\n".join(lines)

    write_results(RESULTS / "fidelity_bbob.json", "fidelity bbob", rows, table, args=vars(args))
    print(table(rows))


# ---- cma32: the CMA family in float32 against pycma in float64 ---------------------------

CMA32_ALGORITHMS = {  # name: (factory(dim), pycma options, dimensions it runs at)
    "CMA-ES": (lambda dim: CMAES(default_pop_size(dim), init_std=2.0), {}, None),
    "Sep-CMA-ES": (
        lambda dim: SepCMAES(default_pop_size(dim), init_std=2.0),
        {"CMA_diagonal": True},
        None,
    ),
    "MA-ES": (lambda dim: MAES(default_pop_size(dim), init_std=2.0), {}, None),
    # the paper's defaults need dim >= 2 pop_size: pop_size = dim // 2, from d = 10
    "LM-MA-ES": (lambda dim: LMMAES(dim // 2, init_std=2.0), {}, 10),
}


def _starts(dim: int, seeds: int) -> np.ndarray:
    """``x0`` of seed ``s``: uniform in ``[-4, 4]^d`` from ``default_rng(s)``, ``[seeds, d]``."""
    return np.stack([np.random.default_rng(s).uniform(-4, 4, dim) for s in range(seeds)])


_CMA32_PROBLEM: list = [None]  # the BBOB problem the host callback of _cma32_batch evaluates


def _cma32_host_delta_f(x) -> np.ndarray:
    """``f - f_opt`` in float64 of the current problem at ``x`` (any leading shape)."""
    problem = _CMA32_PROBLEM[0]
    return np.asarray(_cma32_delta_f(problem, jnp.asarray(np.asarray(x), jnp.float64)))


def stall_generations(dim: int, pop_size: int) -> int:
    """pycma's ``tolstagnation``, ``int(100 + 100 n^1.5 / lambda)`` generations."""
    return int(100 + 100 * dim**1.5 / pop_size)


@eqx.filter_jit
def _cma32_batch(algorithm, x0, keys, budget, rounded: bool = False):
    """One run per row of ``x0`` (vmapped): evaluations to the target, ``inf`` if not reached.
    ``f`` comes from a host callback, so that one compilation serves every function. A run
    ends at the target, the budget, ``should_stop`` or, for an algorithm without one (MA-ES,
    LM-MA-ES), when its best ``f`` has not improved for :func:`stall_generations`. ``rounded``:
    the samples are rounded to float32 before they are evaluated and told (float32 genomes
    with the algorithm's own arithmetic)."""
    pop_size = algorithm.pop_size
    dim = x0.shape[-1]
    stop = getattr(algorithm, "should_stop", None)
    stall = stall_generations(dim, pop_size)

    def run(x0, key):
        init_key, key = jax.random.split(key)
        state = algorithm.init(init_key, x0)

        def cond(carry):
            state, _, evals, best, since = carry
            going = (best >= TARGET) & (evals + pop_size <= budget)
            return going & (~stop(state) if stop is not None else since < stall)

        def body(carry):
            state, key, evals, best, since = carry
            key, ask_key, tell_key = jax.random.split(key, 3)
            x, state = algorithm.ask(ask_key, state)
            if rounded:
                x = x.astype(jnp.float32).astype(x.dtype)
            delta = jax.pure_callback(
                _cma32_host_delta_f,
                jax.ShapeDtypeStruct(x.shape[:1], jnp.float64),
                x,
                vmap_method="expand_dims",
            )
            state, _ = algorithm.tell(tell_key, state, x, (-delta).astype(x.dtype))
            improved = jnp.min(delta) < best
            return (
                state,
                key,
                evals + pop_size,
                jnp.minimum(best, jnp.min(delta)),
                jnp.where(improved, 0, since + 1),
            )

        carry = (
            state,
            key,
            jnp.asarray(0, jnp.int32),
            jnp.asarray(jnp.inf, jnp.float64),
            jnp.asarray(0, jnp.int32),
        )
        _, _, evals, best, _ = jax.lax.while_loop(cond, body, carry)
        return jnp.where(best < TARGET, evals.astype(jnp.float64), jnp.inf)

    return jax.vmap(run)(x0, keys)


def _evolax_runs(
    algorithm, problem, seeds: int, dtype, budget: int, rounded: bool = False
) -> list[float]:
    """Evaluations to ``f - f_opt < 1e-8`` of one run per seed (``inf``: not reached), the
    seeds vmapped. The algorithm runs in ``dtype``; ``f`` is evaluated in float64 at its
    (``dtype``) samples, as pycma's black box, and told to it as ``dtype``: the target is
    judged on the float64 value of ``f`` at the float32 genome. A run ends at the target, the
    budget or ``should_stop`` (where the algorithm has one)."""
    _CMA32_PROBLEM[0] = problem
    x0 = jnp.asarray(_starts(problem.dim, seeds), dtype)
    keys = jax.random.split(jax.random.key(0), seeds)
    result = _cma32_batch(algorithm, x0, keys, jnp.asarray(budget, jnp.int32), rounded)
    return [float(v) for v in result]


_cma32_delta_f = jax.jit(lambda problem, x: problem.delta_f(x))


def _pycma_run(problem, seed, budget, options=None):
    import cma

    es = cma.CMAEvolutionStrategy(
        np.random.default_rng(seed).uniform(-4, 4, problem.dim),
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
        es.tell(x, list(np.asarray(_cma32_delta_f(problem, jnp.asarray(np.asarray(x))))))
    return es.result.evaluations if es.result.fbest < TARGET else float("inf")


def _nearest_float32_value(problem) -> float:
    """``f - f_opt`` (float64) at the float32 point nearest the optimum."""
    x32 = np.asarray(problem.x_opt, np.float32).astype(np.float64)
    return float(problem.delta_f(jnp.asarray(x32)))


def _representable(problem) -> bool:
    """Whether float32 holds the target with a margin: ``f - f_opt`` at the float32 point
    nearest the optimum, in float64, below ``1e-9`` (a tenth of the target)."""
    return _nearest_float32_value(problem) < TARGET / 10


def _within(ours: list[float], theirs: list[float], factor: float = 1.25) -> bool | None:
    """Whether ``ours`` solves at least as many seeds as ``theirs`` and, where both solve,
    its median evaluations are within ``factor`` of theirs; ``None`` where neither solves."""
    solved = [sum(np.isfinite(v) for v in r) for r in (ours, theirs)]
    if solved == [0, 0]:
        return None
    if solved[0] < solved[1]:
        return False
    return solved[1] == 0 or median(ours) <= factor * median(theirs)


def cma32_table(rows: list[dict], excluded: dict | None = None) -> str:
    """The rows (``{algorithm, dim, function, float32, float64, pycma}``, evaluations per
    seed) as Markdown: seeds solved and median evaluations of each, the float32 / pycma ratio,
    then one summary line per algorithm and dimension."""
    lines = [
        "| algorithm | d | function | evolax float32: solved, median evals | evolax float64: "
        "solved, median evals | pycma float64: solved, median evals | float32 / pycma |",
        "|---|---|---|---|---|---|---|",
    ]

    def cell(values):
        if values is None:
            return "-"
        solved = sum(np.isfinite(v) for v in values)
        return f"{solved}/{len(values)}, {median(values):.0f}"

    for r in rows:
        flag = "" if _within(r["float32"], r["pycma"]) is not False else " **!**"
        lines.append(
            f"| {r['algorithm']} | {r['dim']} | f{r['function']} | {cell(r['float32'])} | "
            f"{cell(r.get('float64'))} | {cell(r['pycma'])} | "
            f"{ratio(median(r['float32']), median(r['pycma']))}{flag} |"
        )
    lines += [
        "",
        "| algorithm | d | functions solved by either | within 1.25x | failures "
        "pycma does not have | float32 worse than evolax float64 |",
        "|---|---|---|---|---|---|",
    ]
    keys = dict.fromkeys((r["algorithm"], r["dim"]) for r in rows)
    for name, dim in keys:
        group = [r for r in rows if (r["algorithm"], r["dim"]) == (name, dim)]
        verdicts = [_within(r["float32"], r["pycma"]) for r in group]
        failures = [
            f"f{r['function']}"
            for r in group
            if sum(np.isfinite(r["float32"])) < sum(np.isfinite(r["pycma"]))
        ]
        losses = [
            f"f{r['function']}"
            for r in group
            if r.get("float64") is not None and _within(r["float32"], r["float64"]) is False
        ]
        lines.append(
            f"| {name} | {dim} | {sum(v is not None for v in verdicts)} | "
            f"{sum(v is True for v in verdicts)} | {', '.join(failures) or 'none'} | "
            f"{', '.join(losses) or 'none'} |"
        )
    if any(excluded.values()):
        lines.append(
            "\nExcluded (float32 does not hold the target: `f - f_opt` at the float32 point "
            "nearest the optimum, in float64, is not below 1e-9): "
            + "; ".join(
                f"d = {dim}: " + ", ".join(f"f{f} ({v:.0e})" for f, v in items.items())
                for dim, items in excluded.items()
                if items
            )
            + "."
        )
    return "\n".join(lines)


def _pycma_job(function: int, dim: int, seed: int, budget: int, diagonal: bool) -> float:
    """:func:`_pycma_run` in a worker process (from picklable arguments)."""
    options = {"CMA_diagonal": True} if diagonal else {}
    return _pycma_run(bbob_problem(function, dim, 1), seed, budget, options)


def _solved(values) -> int:
    return int(sum(np.isfinite(v) for v in values))


def _short_of(row: dict) -> bool:
    """Whether float32 solved fewer seeds than evolax float64 or pycma."""
    others = [row["pycma"], *([row["float64"]] if row.get("float64") is not None else [])]
    return _solved(row["float32"]) < max(_solved(r) for r in others)


def _fisher(a: list[float], b: list[float]) -> float:
    """One-sided Fisher exact test that ``a`` solves less often than ``b`` (p-value)."""
    from scipy.stats import fisher_exact

    table = [[_solved(a), len(a) - _solved(a)], [_solved(b), len(b) - _solved(b)]]
    return float(fisher_exact(table, alternative="less").pvalue)


def cma32_recheck_table(rows: list[dict]) -> str:
    """The rows rerun with more seeds: seeds solved and median evaluations of each, and the
    one-sided Fisher p-values that float32 solves less often than float64 / pycma."""
    lines = [
        "| algorithm | d | function | evolax float32 | evolax float64 | evolax float64, "
        "float32 genomes | pycma float64 | p (float32 < float64) | p (float32 < float64, "
        "float32 genomes) | p (float32 < pycma) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def cell(values):
        return "-" if values is None else f"{_solved(values)}/{len(values)}, {median(values):.0f}"

    def p_value(values, others):
        return "-" if others is None else f"{_fisher(values, others):.2f}"

    for r in rows:
        c = r["recheck"]
        lines.append(
            f"| {r['algorithm']} | {r['dim']} | f{r['function']} | {cell(c['float32'])} | "
            f"{cell(c.get('float64'))} | {cell(c.get('rounded'))} | {cell(c['pycma'])} | "
            f"{p_value(c['float32'], c.get('float64'))} | "
            f"{p_value(c['float32'], c.get('rounded'))} | {p_value(c['float32'], c['pycma'])} |"
        )
    return "\n".join(lines)


def _cma32_tables(rows: list[dict], excluded: dict) -> str:
    table = cma32_table(rows, excluded)
    rechecked = [r for r in rows if r.get("recheck")]
    if rechecked:
        n = len(rechecked[0]["recheck"]["float32"])
        table += (
            f"\n\nRechecked with {n} seeds (the rows above where float32 solved fewer seeds "
            "than evolax float64 or pycma; seeds solved, median evaluations; one-sided Fisher "
            "exact p-values that float32 solves less often):\n\n" + cma32_recheck_table(rechecked)
        )
    return table + load_note(rows)


def cma32(args) -> None:
    import concurrent.futures
    import multiprocessing

    per_dim = [*args.seeds, *[args.seeds[-1]] * len(args.dims)]  # the last for the rest
    seeds = dict(zip(args.dims, per_dim, strict=False))
    cases, excluded = [], {}
    for dim in args.dims:
        excluded[dim] = {}
        for f in args.subset_functions if dim in args.subset_dims else args.functions:
            problem = bbob_problem(f, dim, 1)
            if _representable(problem):
                cases.append((dim, f))
            else:
                excluded[dim][f] = _nearest_float32_value(problem)
    spawn = multiprocessing.get_context("spawn")
    # pycma in worker processes while evolax runs here; the rechecks' in their own pool, so
    # that they do not queue behind the grid's
    pool = concurrent.futures.ProcessPoolExecutor(args.workers, mp_context=spawn)
    recheck_pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn)
    diagonals = {bool(CMA32_ALGORITHMS[name][1]) for name in args.algorithms}
    pycma_jobs = {
        (dim, f, diagonal, s): pool.submit(_pycma_job, f, dim, s, args.budget * dim, diagonal)
        for dim, f in cases
        for diagonal in diagonals
        for s in range(seeds[dim])
    }
    rows: list[dict] = []
    table = partial(_cma32_tables, excluded=excluded)
    for dim, f in cases:
        problem = bbob_problem(f, dim, 1)
        budget = args.budget * dim
        for name in args.algorithms:
            factory, options, min_dim = CMA32_ALGORITHMS[name]
            if min_dim is not None and dim < min_dim:
                continue
            algorithm = factory(dim)

            def runs(n, algorithm=algorithm, problem=problem, budget=budget):
                return {
                    dtype.__name__: _evolax_runs(algorithm, problem, n, dtype, budget)
                    for dtype in ((jnp.float32, jnp.float64) if args.float64 else (jnp.float32,))
                }

            row = {
                "algorithm": name,
                "dim": dim,
                "function": f,
                "float64": None,
                **runs(seeds[dim]),
                "pycma": [
                    float(pycma_jobs[dim, f, bool(options), s].result()) for s in range(seeds[dim])
                ],
            }
            n = args.recheck_seeds
            if n > seeds[dim] and _short_of(row):  # seed luck or a loss? more seeds
                extra = [
                    recheck_pool.submit(_pycma_job, f, dim, s, budget, bool(options))
                    for s in range(seeds[dim], n)
                ]
                row["recheck"] = runs(n)
                if args.float64:  # float64 arithmetic on float32 genomes: which one loses?
                    row["recheck"]["rounded"] = _evolax_runs(
                        algorithm, problem, n, jnp.float64, budget, rounded=True
                    )
                row["recheck"]["pycma"] = row["pycma"] + [float(e.result()) for e in extra]
            row["load"] = os.getloadavg()[0]
            rows.append(row)
            print(row, flush=True)
            write_results(  # after every row: a cut run keeps what it measured
                RESULTS / "fidelity_cma32.json", "fidelity cma32", rows, table, args=vars(args)
            )
    pool.shutdown()
    recheck_pool.shutdown()
    print(table(rows))


# ---- evosax32: other distribution algorithms in float32 against evosax's in float32 --------


def _evosax32_algorithms(dim: int) -> dict:
    """name: (evolax algorithm, evosax ``make(x0)``, evosax params from its defaults), with the
    same hyperparameters on both sides: ``lambda`` = 4 + floor(3 ln d) (CR-FM-NES: its own
    default), the initial std 2 and each library's default learning rates where they are the
    same formulas (SNES, xNES, CR-FM-NES, SimpleES); OpenES (constant std 0.5, Adam 0.05) and
    PGPE (Adam 0.05, std rate 0.1, clip 0.2) share theirs."""
    import evosax.algorithms as evosax
    import optax

    from evolax.algorithms import CRFMNES, PGPE, SNES, XNES, OpenES, SimpleES
    from evolax.algorithms.cma.cr_fm_nes import default_pop_size as crfmnes_pop_size

    pop, crfm_pop = default_pop_size(dim), crfmnes_pop_size(dim)
    std = 2.0

    def with_std(value):
        return lambda params: params.replace(std_init=value)

    return {
        "SNES": (SNES(pop, init_std=std), lambda x0: evosax.SNES(pop, x0), with_std(std)),
        "xNES": (XNES(pop, init_std=std), lambda x0: evosax.xNES(pop, x0), with_std(std)),
        "CR-FM-NES": (
            CRFMNES(crfm_pop, init_std=std),
            lambda x0: evosax.CR_FM_NES(crfm_pop, x0),
            with_std(std),
        ),
        "SimpleES": (
            SimpleES(pop, init_std=std),
            lambda x0: evosax.SimpleES(pop, x0),
            with_std(std),
        ),
        "OpenES": (
            OpenES(pop, optimizer=optax.adam(0.05), init_std=0.5),
            lambda x0: evosax.Open_ES(
                pop, x0, optimizer=optax.adam(0.05), std_schedule=lambda t: 0.5 + 0 * t
            ),
            lambda params: params,
        ),
        "PGPE": (
            PGPE(pop, optimizer=optax.adam(0.05), init_std=std, std_lr=0.1, std_max_change=0.2),
            lambda x0: evosax.PGPE(pop, x0, optimizer=optax.adam(0.05)),
            lambda params: params.replace(std_init=std, std_lr=0.1, std_max_change=0.2),
        ),
    }


def _float32(tree):
    return jax.tree.map(
        lambda a: a.astype(jnp.float32) if eqx.is_array(a) and a.dtype == jnp.float64 else a,
        tree,
    )


def _host_values(x) -> np.ndarray:
    """``f - f_opt`` in float64 of the current problem, as float32 (what both are told)."""
    return _cma32_host_delta_f(x).astype(np.float32)


def _evaluate(x):
    return jax.pure_callback(
        _host_values, jax.ShapeDtypeStruct(x.shape[:1], jnp.float32), x, vmap_method="expand_dims"
    )


@eqx.filter_jit
def _evolax_best(algorithm, x0, keys, generations: int):
    """The best ``f - f_opt`` of each seed's run (vmapped): ``generations`` generations."""

    def run(x0, key):
        init_key, key = jax.random.split(key)
        state = algorithm.init(init_key, x0)

        def generation(carry, key):
            state, best = carry
            ask_key, tell_key = jax.random.split(key)
            x, state = algorithm.ask(ask_key, state)
            delta = _evaluate(x)
            state, _ = algorithm.tell(tell_key, state, x, -delta)
            return (state, jnp.minimum(best, jnp.min(delta))), None

        carry = (state, jnp.asarray(jnp.inf, jnp.float32))
        (_, best), _ = jax.lax.scan(generation, carry, jax.random.split(key, generations))
        return best

    return jax.vmap(run)(x0, keys)


@eqx.filter_jit
def _evosax_best(strategy, params, x0, keys, generations: int):
    """:func:`_evolax_best` for an evosax strategy (it minimises ``f - f_opt``)."""

    def run(x0, key):
        init_key, key = jax.random.split(key)
        state = _float32(strategy.init(init_key, x0, params))

        def generation(carry, key):
            state, best = carry
            ask_key, tell_key = jax.random.split(key)
            x, state = strategy.ask(ask_key, state, params)
            x = x.astype(jnp.float32)
            delta = _evaluate(x)
            state, _ = strategy.tell(tell_key, x, delta, state, params)
            return (_float32(state), jnp.minimum(best, jnp.min(delta))), None

        carry = (state, jnp.asarray(jnp.inf, jnp.float32))
        (_, best), _ = jax.lax.scan(generation, carry, jax.random.split(key, generations))
        return best

    return jax.vmap(run)(x0, keys)


def evosax32_table(rows: list[dict]) -> str:
    lines = [
        "| algorithm | d | function | generations | evolax float32: median best f - f_opt | "
        "evosax float32: median best f - f_opt | evolax / evosax |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ours, theirs = np.median(r["evolax"]), np.median(r["evosax"])
        both_tiny = max(ours, theirs) < TARGET
        lines.append(
            f"| {r['algorithm']} | {r['dim']} | f{r['function']} | {r['generations']} | "
            f"{ours:.1e} | {theirs:.1e} | "
            f"{'both < 1e-8' if both_tiny else f'{ours / max(theirs, 1e-300):.2g}x'} |"
        )
    return "\n".join(lines)


def evosax32(args) -> None:
    import evosax  # noqa: F401  (fails early if absent)

    rows = []
    for dim in args.dims:
        algorithms = _evosax32_algorithms(dim)
        x0 = jnp.asarray(_starts(dim, args.seeds), jnp.float32)
        keys = jax.random.split(jax.random.key(0), args.seeds)
        for f in args.functions:
            _CMA32_PROBLEM[0] = bbob_problem(f, dim, 1)
            for name in args.algorithms:
                ours, make, params = algorithms[name]
                strategy = make(x0[0])
                theirs_params = _float32(params(strategy.default_params))
                row = {
                    "algorithm": name,
                    "dim": dim,
                    "function": f,
                    "generations": args.generations,
                    "evolax": [float(v) for v in _evolax_best(ours, x0, keys, args.generations)],
                    "evosax": [
                        float(v)
                        for v in _evosax_best(strategy, theirs_params, x0, keys, args.generations)
                    ],
                }
                rows.append(row)
                print(row, flush=True)
    write_results(
        RESULTS / "fidelity_evosax32.json",
        "fidelity evosax32",
        rows,
        evosax32_table,
        args=vars(args),
    )
    print(evosax32_table(rows))


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
        "the seeds of each side."
    )
    return "\n".join(lines)


def _restarts_row(task: tuple[int, int, str, int, int]) -> dict:
    """One row: IPOP or BIPOP (CMA-ES, float64) and ``cma.fmin(..., restarts=9, bipop=...)``
    over seeds, with the same starts (``x0`` uniform in ``[-4, 4]^d`` drawn anew per run,
    ``sigma0 = 2``, default population), pycma's tolx and tolfun (1e-11), up to 9 large
    restarts and ``budget`` evaluations; per seed the evaluations to ``f - f_opt < 1e-8``
    (whole generations) or all those spent, and per run the termination criteria that ended
    it (each side's names)."""
    import cma

    dim, f, name, seeds, budget = task
    driver, use_bipop = {"IPOP": (ipop, False), "BIPOP": (bipop, True)}[name]
    factory = partial(CMAES, tol_x=1e-11, tol_fun=1e-11)  # pycma's defaults
    problem = bbob_problem(f, dim, 1)
    draw = partial(jax.random.uniform, shape=(dim,), dtype=jnp.float64, minval=-4.0, maxval=4.0)
    ours: dict = {"evaluations": [], "solved": [], "runs": [], "stops": [], "seconds": 0.0}
    theirs: dict = {"evaluations": [], "solved": [], "runs": [], "stops": [], "seconds": 0.0}
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
        ours["stops"].append([[r.pop_size, *r.stop_reasons] for r in result.restarts])
        rng = np.random.default_rng(seed)
        popsizes: list[int] = []  # of each run, as fmin's callback sees it
        start = time.perf_counter()
        res = cma.fmin(
            None,
            partial(rng.uniform, -4, 4, dim),
            2.0,
            {"ftarget": TARGET, "verbose": -9, "seed": seed + 1, "maxfevals": budget},
            restarts=9,
            bipop=use_bipop,
            parallel_objective=partial(_values, problem),
            callback=partial(_first_popsize, popsizes),
        )
        theirs["seconds"] += time.perf_counter() - start
        theirs["evaluations"].append(int(res[3]))
        theirs["solved"].append(bool(res[1] < TARGET))
        theirs["runs"].append(len(res[-2].all_stoppings) - 1)
        stoppings = res[-2].all_stoppings[1:]
        theirs["stops"].append([[p, *s] for p, s in zip(popsizes, stoppings, strict=True)])
    row = {"restarts": name, "dim": dim, "function": f, "budget": budget}
    row |= {"evolax": ours, "pycma": theirs, "load": os.getloadavg()[0]}
    print(row, flush=True)
    return row


def _first_popsize(popsizes: list[int], es) -> None:
    """fmin's callback: a run's population, at its first iteration."""
    if es.countiter == 1:
        popsizes.append(int(es.popsize))


def _stops_table(rows: list[dict]) -> str:
    """How the runs ended: per row and side, the number of runs each criterion ended (a run
    counts under every criterion that fired at its end)."""

    def tally(side: dict) -> str:
        counts: dict[str, int] = {}
        for seed in side["stops"]:
            for _, *reasons in seed:
                for reason in reasons:
                    counts[reason] = counts.get(reason, 0) + 1
        return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))

    lines = [
        "| restarts | d | function | evolax: runs, ended by | pycma: runs, ended by |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        if "stops" not in r["evolax"]:
            continue
        lines.append(
            f"| {r['restarts']} | {r['dim']} | f{r['function']} | "
            f"{sum(r['evolax']['runs'])}: {tally(r['evolax'])} | "
            f"{sum(r['pycma']['runs'])}: {tally(r['pycma'])} |"
        )
    lines.append(
        "\nRuns: of all seeds; a run counts under every criterion that fired at its end. "
        "evolax: `budget` (the evaluations left allowed no further generation), `maxiter` "
        "(MaxIter, or a small run's length), `target`; pycma: `maxfevals`, `maxiter`, "
        "`ftarget`, and its criteria by their names."
    )
    return "\n".join(lines)


def _restarts_tasks(args) -> list[tuple[int, int, str, int, int]]:
    """``(dim, function, strategy, seeds, budget)`` of every row: ``--functions`` at
    ``--dims`` with ``--seeds`` (``--function-seeds`` for some), then ``--subset-functions``
    at ``--subset-dims`` with ``--subset-seeds``."""
    more = dict(tuple(int(v) for v in item.split("=")) for item in args.function_seeds)
    main = [(dim, f, more.get(f, args.seeds)) for dim in args.dims for f in args.functions]
    subset = [(d, f, args.subset_seeds) for d in args.subset_dims for f in args.subset_functions]
    return [
        (dim, f, name, seeds, args.budget * dim)
        for dim, f, seeds in main + subset
        for name in ("IPOP", "BIPOP")
    ]


def restarts(args) -> None:
    """:func:`_restarts_row` per dimension, function and strategy, ``--jobs`` processes at
    once, the rows with the most evaluations first; the table (rows in order of dimension and
    function) is rewritten as the rows come in, so that a cut run leaves them."""
    import multiprocessing

    tasks = _restarts_tasks(args)
    order = {task[:3]: i for i, task in enumerate(tasks)}
    rows: list[dict] = []

    def table(rows: list[dict]) -> str:
        rows = sorted(rows, key=lambda r: order[r["dim"], r["function"], r["restarts"]])
        note = (
            f"\n\nA partial run: {len(rows)} of {len(tasks)} rows."
            if len(rows) < len(tasks)
            else ""
        )
        return _restarts_table(rows) + note + "\n\n" + _stops_table(rows) + load_note(rows)

    longest_first = sorted(tasks, key=lambda t: -t[3] * t[4])
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        for row in pool.imap_unordered(_restarts_row, longest_first):
            rows.append(row)
            write_results(
                RESULTS / "fidelity_restarts.json",
                "fidelity restarts",
                rows,
                table,
                args=vars(args),
            )
    print(table(rows))


# ---- mo: NSGA-II, NSGA-III, MOEA/D and SMS-EMOA against pymoo ---------------------------

MO_CASES = {  # name: (variables, objectives, generations)
    "zdt1": (30, 2, 200),
    "zdt2": (30, 2, 200),
    "zdt3": (30, 2, 200),
    "zdt4": (10, 2, 300),
    "zdt6": (10, 2, 250),
    "dtlz1": (7, 3, 400),
    "dtlz2": (12, 3, 250),
    "dtlz3": (12, 3, 500),
    "dtlz4": (12, 3, 250),
    "dtlz5": (12, 3, 250),
    "dtlz6": (12, 3, 400),
    "dtlz7": (22, 3, 250),
    **{f"wfg{i}": (24, 2, 250) for i in range(1, 10)},  # k = 4, l = 20
}
MO_ALGORITHMS = ("nsga2", "nsga3", "moead", "smsemoa")
MO_K = 4  # WFG's position-related variables for 2 objectives (pymoo's default)


def _mo_setup(algorithm: str, name: str, scale: float, duplicates: bool = False):
    """evolax's algorithm (float bounds from the problem), a maker of pymoo's, and the
    generations, with pymoo's defaults on both sides: pop 100 (NSGA-III 92 and MOEA/D 91 for 3
    objectives, on 12-division directions; 99 divisions for 2), each variable mutated at 0.9/n
    (pymoo: a child at 0.9, then each variable at 1/n); SMS-EMOA runs half the
    generations. pymoo's NSGA-II, NSGA-III and SMS-EMOA run as published (Deb's code, and
    evolax): without pymoo's default ``eliminate_duplicates=True``, which breeds again where a
    child duplicates another, unless ``duplicates``."""
    from pymoo.algorithms.moo.moead import MOEAD as PymooMOEAD
    from pymoo.algorithms.moo.nsga2 import NSGA2 as PymooNSGA2
    from pymoo.algorithms.moo.nsga3 import NSGA3 as PymooNSGA3
    from pymoo.algorithms.moo.sms import SMSEMOA as PymooSMSEMOA
    from pymoo.decomposition.tchebicheff import Tchebicheff
    from pymoo.util.ref_dirs import get_reference_directions

    from evolax.algorithms.multiobjective import MOEAD, NSGA2, NSGA3, SMSEMOA
    from evolax.problems.multiobjective import domain

    n_var, m, generations = MO_CASES[name]
    generations = max(1, round(generations * scale / (2 if algorithm == "smsemoa" else 1)))
    lower, upper = domain(name, n_var)
    divisions = 99 if m == 2 else 12
    directions = get_reference_directions("das-dennis", m, n_partitions=divisions)
    common = dict(n_objectives=m, lower=lower, upper=upper, mutation_rate=0.9 / n_var)
    theirs = dict(eliminate_duplicates=duplicates)
    if algorithm == "nsga2":
        return NSGA2(pop_size=100, **common), partial(PymooNSGA2, 100, **theirs), generations
    if algorithm == "smsemoa":
        ours = SMSEMOA(pop_size=100, **common)
        return ours, partial(PymooSMSEMOA, 100, **theirs), generations
    pop = len(directions) + (1 if algorithm == "nsga3" and m == 3 else 0)
    if algorithm == "nsga3":
        ours = NSGA3(pop_size=pop, divisions=divisions, **common)
        theirs = partial(PymooNSGA3, directions, pop_size=pop, **theirs)
        return ours, theirs, generations
    ours = MOEAD(pop_size=pop, divisions=divisions, **common)
    theirs = partial(PymooMOEAD, directions, decomposition=Tchebicheff())
    return ours, theirs, generations


def _evolax_fronts(algo, name: str, generations: int, seeds: int) -> np.ndarray:
    """The minimised objectives of ``algo``'s last population per seed, ``[seeds, pop, m]``:
    one jitted program vmapped over seeds, ``pop * generations`` evaluations each."""
    return _evolax_last(algo, name, generations, seeds)[1]


def _evolax_last(algo, name: str, generations: int, seeds: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_evolax_fronts`'s last populations ``[seeds, pop, n]`` and their objectives."""
    from evolax import evolve
    from evolax.problems.multiobjective import MULTIOBJECTIVE_PROBLEMS

    n_var, m, _ = MO_CASES[name]
    problem = MULTIOBJECTIVE_PROBLEMS[name]
    extra = {} if name.startswith("zdt") else {"n_objectives": m}

    def run(key):
        objective = lambda x: -problem(x, **extra)  # noqa: E731
        state, _ = evolve(algo, objective, jnp.zeros(n_var), key, generations)
        return state.population, -state.fitness

    keys = jax.random.split(jax.random.key(0), seeds)
    x, f = jax.jit(jax.vmap(run))(keys)
    return np.asarray(x, np.float64), np.asarray(f, np.float64)


def _pymoo_fronts(make, name: str, generations: int, seeds: int, what: str = "F") -> list:
    """pymoo's last population per seed: its objectives (``F``) or genomes (``X``). The whole
    population, as evolax's, not the result's ``F``: NSGA-III's result keeps only the
    first-front members closest to each reference direction, which scores worse (the other
    algorithms' results are the non-dominated members, which score as the population)."""
    from pymoo.optimize import minimize
    from pymoo.problems import get_problem

    n_var, m, _ = MO_CASES[name]
    kwargs = {"n_var": n_var, **({} if name.startswith("zdt") else {"n_obj": m})}
    return [
        minimize(get_problem(name, **kwargs), make(), ("n_gen", generations), seed=seed).pop.get(
            what
        )
        for seed in range(seeds)
    ]


def _mo_row(name: str, algorithm: str, seeds: int, scale: float, duplicates: bool) -> dict:
    """One row of the ``mo`` table: IGD+ and hypervolume per seed for evolax in float32 and
    float64 and for pymoo, scored alike by pymoo's indicators against the problem's front
    (:func:`~evolax.problems.multiobjective.pareto_front`, its nadir times 1.1 the
    hypervolume's reference point)."""
    jax.config.update("jax_enable_x64", True)  # a fresh worker process
    from pymoo.indicators.hv import HV
    from pymoo.indicators.igd_plus import IGDPlus

    from evolax.problems.multiobjective import pareto_front

    _, m, _ = MO_CASES[name]
    front = pareto_front(name, 1000, n_objectives=m)
    igd, hv = IGDPlus(front), HV(ref_point=1.1 * front.max(axis=0))

    def scores(fronts) -> dict:
        fronts = [f[np.all(np.isfinite(f), axis=1)] for f in fronts]
        return {"igd+": [float(igd(f)) for f in fronts], "hv": [float(hv(f)) for f in fronts]}

    algo, make, generations = _mo_setup(algorithm, name, scale, duplicates)
    row: dict = {"problem": name, "algorithm": algorithm, "generations": generations}
    start = time.perf_counter()
    for dtype in ("float32", "float64"):
        with jax.enable_x64(dtype == "float64"):
            row[dtype] = scores(_evolax_fronts(algo, name, generations, seeds))
    row["evolax_s"] = time.perf_counter() - start
    start = time.perf_counter()
    row["pymoo"] = scores(_pymoo_fronts(make, name, generations, seeds))
    row["pymoo_s"] = time.perf_counter() - start
    row["load"] = os.getloadavg()[0]  # the 1-minute load average as the row ends
    row["pymoo_front"] = "population"  # pymoo scored by its last population (not its result)
    return row


def _mo_table(rows: list[dict], cases: int = 0, duplicates: bool = False) -> str:
    """The ``mo`` table of ``rows``, ``cases`` of them asked for (a partial table says so)."""
    lines = [
        "| problem | algorithm | generations | IGD+ float32 | float64 | pymoo | ratio | "
        "HV float32 | float64 | pymoo | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    names = {"nsga2": "NSGA-II", "nsga3": "NSGA-III", "moead": "MOEA/D", "smsemoa": "SMS-EMOA"}
    for r in rows:
        med = {
            k: {i: float(np.median(r[k][i])) for i in ("igd+", "hv")}
            for k in ("float32", "float64", "pymoo")
        }
        ig = [med[k]["igd+"] for k in ("float32", "float64", "pymoo")]
        hv = [med[k]["hv"] for k in ("float32", "float64", "pymoo")]
        igd_ratio = ig[0] / ig[2] if ig[2] > 0 else float("nan")
        hv_ratio = hv[0] / hv[2] if hv[2] > 0 else float("nan")
        flag = lambda bad: " **!**" if bad else ""  # noqa: E731
        lines.append(
            f"| {r['problem'].upper()} | {names[r['algorithm']]} | {r['generations']} | "
            + " | ".join(f"{v:.4g}" for v in ig)
            + f" | {igd_ratio:.3f}{flag(igd_ratio > 1.1)} | "
            + " | ".join(f"{v:.4g}" for v in hv)
            + f" | {hv_ratio:.3f}{flag(hv_ratio < 1 / 1.1)} |"
        )
    lines.append(
        "\nMedians over seeds of IGD+ (to the problem's sampled front, lower is better) and "
        "hypervolume (above 1.1 times the front's nadir point); ratio: evolax float32 over "
        "pymoo 0.6.2, **!** outside 1.1x. Both scored by pymoo's indicators. pymoo's NSGA-II, "
        "NSGA-III and SMS-EMOA "
        + (
            "with its default `eliminate_duplicates=True` (a child duplicating another is bred "
            "again)."
            if duplicates
            else "as published: `eliminate_duplicates=False` (no child is bred again)."
        )
    )
    if cases > len(rows):
        lines.append(f"\nA partial run: {len(rows)} of the {cases} cases asked for.")
    return "\n".join(lines) + load_note(rows)


def _at_optimum(name: str, x: np.ndarray, dtype: np.dtype) -> float:
    """The share of ``x``'s distance variables (``[pop, n]``) exactly at their value on the
    front in ``dtype`` (ZDT: 0; DTLZ1-6: 1/2; DTLZ7: 0; WFG: ``z_i / 2i = 0.35``)."""
    n, m, _ = MO_CASES[name]
    if name.startswith("wfg"):
        y, at = x[:, MO_K:] / (2.0 * np.arange(MO_K + 1, n + 1)), 0.35
    else:
        y = x[:, 1:] if name.startswith("zdt") else x[:, m - 1 :]
        at = 0.5 if name.startswith("dtlz") and name != "dtlz7" else 0.0
    return float(np.mean(y.astype(dtype) == dtype.type(at)))


def recheck(args, cases: list) -> None:
    """Whether a lead over pymoo is the run's or its precision's: per case and run
    (``--seeds`` seeds), the share of distance variables exactly at their value on the front in
    the run's precision (WFG1's distance, for one, is 0 only there: a residual ``e`` becomes
    ``e^0.02``), and IGD+ and hypervolume of the last population as the run computed its
    objectives and re-evaluated by pymoo's problem in float64."""
    from pymoo.indicators.hv import HV
    from pymoo.indicators.igd_plus import IGDPlus
    from pymoo.problems import get_problem

    from evolax.problems.multiobjective import pareto_front

    rows = []
    for name, algorithm in cases:
        n, m, _ = MO_CASES[name]
        front = pareto_front(name, 1000, n_objectives=m)
        igd, hv = IGDPlus(front), HV(ref_point=1.1 * front.max(axis=0))
        problem = get_problem(name, n_var=n, **({} if name.startswith("zdt") else {"n_obj": m}))
        algo, make, generations = _mo_setup(algorithm, name, args.scale, args.pymoo_duplicates)
        runs = {}
        for dtype in ("float32", "float64"):
            with jax.enable_x64(dtype == "float64"):
                x, f = _evolax_last(algo, name, generations, args.seeds)
            runs[f"evolax {dtype}"] = (x, f, np.dtype(dtype))
        x = _pymoo_fronts(make, name, generations, args.seeds, "X")
        runs["pymoo"] = (x, [problem.evaluate(xi) for xi in x], np.dtype("float64"))
        for label, (xs, fs, dtype) in runs.items():
            row = {"problem": name, "algorithm": algorithm, "run": label}
            row["generations"] = generations
            for key in ("exact", "igd+ own", "igd+ float64", "hv own", "hv float64"):
                row[key] = []
            for xi, fi in zip(xs, fs, strict=True):
                again = problem.evaluate(np.asarray(xi, np.float64))
                row["exact"].append(_at_optimum(name, xi, dtype))
                row["igd+ own"].append(float(igd(fi)))
                row["igd+ float64"].append(float(igd(again)))
                row["hv own"].append(float(hv(fi)))
                row["hv float64"].append(float(hv(again)))
            row["load"] = os.getloadavg()[0]
            rows.append(row)
            print(json.dumps(row), flush=True)
            out = RESULTS / f"{args.table}_recheck.json"
            write_results(out, "fidelity mo", rows, _recheck_table, args=vars(args))
    print(_recheck_table(rows))


def precision(args, cases: list) -> None:
    """Whether float32's difference is its search's or its objective's
    (:mod:`fidelity_mo_precision`), per case over ``--seeds`` seeds."""
    rows = []
    for name, algorithm in cases:
        n, m, _ = MO_CASES[name]
        setup = _mo_setup(algorithm, name, args.scale, args.pymoo_duplicates)
        rows.append(precision_row(name, algorithm, setup, n, m, args.seeds))
        print(json.dumps(rows[-1]), flush=True)
        out = RESULTS / f"{args.table}_precision.json"
        write_results(out, "fidelity mo", rows, precision_table, args=vars(args))
    print(precision_table(rows))


def _recheck_table(rows: list[dict]) -> str:
    names = {"nsga2": "NSGA-II", "nsga3": "NSGA-III", "moead": "MOEA/D", "smsemoa": "SMS-EMOA"}
    lines = [
        "| problem | algorithm | run | generations | at the front exactly | IGD+ as run | "
        "IGD+ float64 | HV as run | HV float64 | HV per seed, float64 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        med = {k: float(np.median(r[k])) for k in r if isinstance(r[k], list)}
        lines.append(
            f"| {r['problem'].upper()} | {names[r['algorithm']]} | {r['run']} | "
            f"{r['generations']} | {med['exact']:.1%} | "
            f"{med['igd+ own']:.4g} | {med['igd+ float64']:.4g} | {med['hv own']:.4g} | "
            f"{med['hv float64']:.4g} | {', '.join(f'{v:.3g}' for v in r['hv float64'])} |"
        )
    lines.append(
        "\nMedians over seeds. At the front exactly: the share of the last population's "
        "distance variables equal, in the run's precision, to their value on the front (ZDT: "
        "0; DTLZ1-6: 1/2; DTLZ7: 0; WFG: `z_i / 2i` = 0.35). As run: the objectives the run "
        "computed (evolax float32: in float32); float64: the same populations re-evaluated by "
        "pymoo's problem in float64. Scored as the `mo` table."
    )
    return "\n".join(lines) + load_note(rows)


def _resumed(args, cases: list) -> dict:
    """The rows of the table's earlier run worth keeping: the same seeds, scale and pymoo
    duplicate setting (an earlier run without that option ran pymoo's default), and pymoo
    scored by its whole population, which rows before ``pymoo_front`` were only where it made
    no difference (all algorithms but NSGA-III)."""
    try:
        earlier = json.loads((RESULTS / f"{args.table}.json").read_text())
    except (OSError, ValueError):
        return {}
    then = earlier.get("args", {})
    same = (then.get("seeds"), then.get("scale"), then.get("pymoo_duplicates", True)) == (
        args.seeds,
        args.scale,
        args.pymoo_duplicates,
    )
    rows = earlier.get("rows", []) if same else []
    return {
        (r["problem"], r["algorithm"]): r
        for r in rows
        if (r["problem"], r["algorithm"]) in cases
        and (r["algorithm"] != "nsga3" or r.get("pymoo_front") == "population")
    }


def mo(args) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    cases = [(n, a) for n in args.problems for a in args.algorithms]
    if args.cases:
        cases = [tuple(case.split("/")) for case in args.cases]
    if args.recheck:
        recheck(args, cases)
        return
    if args.precision:
        precision(args, cases)
        return
    # run the first two algorithms on every problem first (a run cut short has them all)
    first = {
        c: (args.algorithms.index(c[1]) // 2 if c[1] in args.algorithms else 0, i)
        for i, c in enumerate(cases)
    }
    done: dict = {}
    if args.resume:
        done = _resumed(args, cases)
        cases_left = [c for c in cases if c not in done]
    else:
        cases_left = cases
    context = multiprocessing.get_context("spawn")  # JAX is not fork-safe
    with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
        futures = {
            pool.submit(_mo_row, n, a, args.seeds, args.scale, args.pymoo_duplicates): (n, a)
            for n, a in sorted(cases_left, key=first.get)
        }
        table = partial(_mo_table, cases=len(cases), duplicates=args.pymoo_duplicates)
        for future in as_completed(futures):
            done[futures[future]] = row = future.result()
            print(json.dumps(row), flush=True)
            rows = [done[c] for c in cases if c in done]  # the table so far, in order
            out = RESULTS / f"{args.table}.json"
            write_results(out, "fidelity mo", rows, table, args=vars(args))

    print(table(rows))


# ---- speed: CMA-ES per generation against pycma ------------------------------------------


def _evolax_stepper(dim: int, dtype):
    """``step(generations) -> seconds per generation`` of CMA-ES (ask and tell, each jitted,
    the state donated) on the sphere, compiled and warmed up (one eigendecomposition done)."""
    with jax.enable_x64(dtype == jnp.float64):
        algo = CMAES(pop_size=4 + int(3 * np.log(dim)), init_std=0.5)
        ask = jax.jit(algo.ask, donate_argnums=1)
        tell = jax.jit(algo.tell, donate_argnums=1)
        box = {
            "state": algo.init(jax.random.key(0), jnp.ones(dim, dtype)),
            "key": jax.random.key(1),
        }

    def step(generations: int) -> float:
        with jax.enable_x64(dtype == jnp.float64):
            state, key = box["state"], box["key"]
            start = time.perf_counter()
            for _ in range(generations):
                key, k = jax.random.split(key)
                x, state = ask(k, state)
                state, _ = tell(k, state, x, -jnp.sum(x * x, axis=1))
            jax.block_until_ready(state)
            box["state"], box["key"] = state, key
            return (time.perf_counter() - start) / generations

    step(2)  # compile, then warm up
    return step


def _pycma_stepper(dim: int):
    """``step(generations) -> seconds per generation`` of pycma's ``ask`` / ``tell``."""
    import cma

    es = cma.CMAEvolutionStrategy(np.ones(dim), 0.5, {"verbose": -9, "seed": 1})

    def step(generations: int) -> float:
        start = time.perf_counter()
        for _ in range(generations):
            x = es.ask()
            es.tell(x, [float(np.sum(v * v)) for v in x])
        return (time.perf_counter() - start) / generations

    step(2)
    return step


def speed(args) -> None:
    """Rounds alternate pycma, evolax float64 and evolax float32 (each round the same number
    of generations), so that a load on the shared machine hits all three alike; per dimension
    the median over rounds of the seconds per generation."""
    rows = []
    for dim in args.dims:
        steppers = {
            "pycma": _pycma_stepper(dim),
            "float64": _evolax_stepper(dim, jnp.float64),
            "float32": _evolax_stepper(dim, jnp.float32),
        }
        calibration = steppers["pycma"](1)
        per_round = int(min(500, max(2, args.seconds_each / args.rounds / calibration)))
        times: dict[str, list[float]] = {name: [] for name in steppers}
        for _ in range(args.rounds):
            for name, step in steppers.items():
                times[name].append(step(per_round))
        row = {"dim": dim, "generations": per_round * args.rounds, "rounds": args.rounds}
        row.update({name: float(np.median(t)) for name, t in times.items()})
        row["samples"] = times
        rows.append(row)
        print({k: v for k, v in row.items() if k != "samples"}, flush=True)
    pinned = len(os.sched_getaffinity(0)) == 1
    where = f"{cpu()}, one core ({'taskset -c 0' if pinned else 'NOT pinned'}), one BLAS/XLA thread"

    def table(rows):
        lines = [
            "| d | generations timed (rounds) | pycma (float64) s / generation | evolax float64 | "
            "ratio | evolax float32 | ratio |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            lines.append(
                f"| {r['dim']} | {r['generations']} ({r['rounds']}) | {r['pycma']:.2e} | "
                f"{r['float64']:.2e} | {r['float64'] / r['pycma']:.2f}x | {r['float32']:.2e} | "
                f"{r['float32'] / r['pycma']:.2f}x |"
            )
        lines.append(
            f"\n{where}; shared, loaded machine: rounds alternate pycma, evolax float64 and "
            "float32 (the same generations each), medians over rounds. Ratio < 1: evolax faster."
        )
        return "\n".join(lines)

    write_results(RESULTS / "fidelity_speed.json", "fidelity speed", rows, table, args=vars(args))
    print(table(rows))


PARTS = {
    "bbob": bbob,
    "cma32": cma32,
    "evosax32": evosax32,
    "restarts": restarts,
    "mo": mo,
    "qd": qd,
    "speed": speed,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="part")
    sub.add_parser("all", help="every part with its default sizes (also: no part given)")
    p = sub.add_parser("bbob")
    p.add_argument("--dims", type=int, nargs="+", default=[2, 3, 5, 10, 20, 40])
    p.add_argument("--instances", type=int, nargs="+", default=BBOB_INSTANCES)
    p.add_argument("--points", type=int, default=12, help="per problem (a third near x_opt)")
    p.add_argument("--exact-points", type=int, default=8, help="f15, f16: mpmath checks")
    p = sub.add_parser("cma32")
    p.add_argument("--dims", type=int, nargs="+", default=[5, 10, 20])
    p.add_argument("--functions", type=int, nargs="+", default=list(range(1, 25)))
    p.add_argument("--seeds", type=int, nargs="+", default=[5, 3, 3], help="one, or one per --dims")
    p.add_argument(
        "--recheck-seeds",
        type=int,
        default=15,
        help="rerun with this many seeds each row where float32 solved fewer than the others",
    )
    p.add_argument("--algorithms", nargs="+", default=list(CMA32_ALGORITHMS))
    p.add_argument("--budget", type=int, default=10_000, help="evaluations per dimension")
    p.add_argument("--no-float64", dest="float64", action="store_false")
    p.add_argument("--workers", type=int, default=2, help="processes for pycma's runs")
    p.add_argument("--subset-dims", type=int, nargs="*", default=[], help="dims run on a subset")
    p.add_argument(
        "--subset-functions",
        type=int,
        nargs="+",
        default=[1, 5, 7, 8, 9, 11, 14, 21, 22],
        help="the functions at --subset-dims",
    )
    p = sub.add_parser("evosax32")
    p.add_argument("--dims", type=int, nargs="+", default=[10])
    p.add_argument("--functions", type=int, nargs="+", default=[1, 2, 8, 10])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--generations", type=int, default=1000)
    p.add_argument(
        "--algorithms",
        nargs="+",
        default=["SNES", "xNES", "CR-FM-NES", "SimpleES", "OpenES", "PGPE"],
    )
    p = sub.add_parser("restarts")
    p.add_argument("--dims", type=int, nargs="+", default=[5])
    p.add_argument("--functions", type=int, nargs="+", default=[3, 4, *range(15, 25)])
    p.add_argument("--seeds", type=int, default=9)
    p.add_argument(
        "--function-seeds",
        nargs="*",
        default=["3=21"],
        help="FUNCTION=SEEDS: other seed counts for some --functions",
    )
    p.add_argument("--subset-dims", type=int, nargs="*", default=[10])
    p.add_argument("--subset-functions", type=int, nargs="+", default=[16, 17, 21, 22])
    p.add_argument("--subset-seeds", type=int, default=3)
    p.add_argument("--budget", type=int, default=20_000, help="evaluations per dimension")
    p.add_argument("--jobs", type=int, default=1, help="processes (one row each)")
    p = sub.add_parser("mo")
    p.add_argument("--problems", nargs="+", default=list(MO_CASES))
    p.add_argument("--algorithms", nargs="+", default=list(MO_ALGORITHMS))
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--scale", type=float, default=1.0, help="times each case's generations")
    p.add_argument("--jobs", type=int, default=1, help="rows computed at once, in processes")
    p.add_argument("--table", default="fidelity_mo", help="the results' name (docs/results)")
    p.add_argument("--cases", nargs="+", help="PROBLEM/ALGORITHM pairs, instead of all pairs")
    p.add_argument(
        "--pymoo-duplicates",
        action="store_true",
        help="pymoo's default eliminate_duplicates=True (breeding again), not the published one",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep the rows of the table's earlier run with the same settings",
    )
    p.add_argument(
        "--recheck",
        action="store_true",
        help="instead: the runs' last populations re-evaluated in float64 (table TABLE_recheck)",
    )
    add_qd_parser(sub)
    p.add_argument(
        "--precision",
        action="store_true",
        help="instead: each run with its search and its objective in float32 or float64",
    )
    p = sub.add_parser("speed")
    p.add_argument("--dims", type=int, nargs="+", default=[10, 100, 1000, 5000])
    p.add_argument("--seconds-each", type=float, default=30.0, help="pycma's time per dim")
    p.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.part in (None, "all"):  # every table of docs/fidelity.md, each part's defaults
        for part in PARTS:
            print(f"---- {part}", flush=True)
            PARTS[part](parser.parse_args([part]))
    else:
        PARTS[args.part](args)


if __name__ == "__main__":
    main()
