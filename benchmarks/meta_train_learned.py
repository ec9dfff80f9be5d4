"""Meta-train LES or LGA with evolax's OpenES on BBOB functions, and compare them with OpenES
and SNES on held-out BBOB functions.

``--mode train`` (Lange et al., 2023a, 2023b: MetaBBO): the network parameters are the genome
of an outer OpenES (``--outer-pop`` members, antithetic, centred ranks, Adam). Each outer
generation, every member runs the learned algorithm (inner loop: ``--inner-pop`` members for
``--inner-generations`` generations) on the same batch of tasks: each meta-training function
(:data:`TRAIN_FUNCTIONS`) in each of ``--dims``, ``--runs`` times, with an instance drawn from
1..``--instances`` and a start point uniform in ``[-4, 4]^d`` (the same tasks, start points
and keys for every member: common random numbers). A run's score is its best precision
``min f - f_opt`` over the run; a member's meta-fitness is the mean over tasks of its score
z-scored across the outer population (the papers' normalisation), taken on
``log10(precision)`` (clipped to ``[1e-8, 1e8]``) because BBOB precisions span many decades.
All inner runs of one outer generation are one compiled program (``vmap`` over members and
tasks, one scan per dimension, float32). Every ``--eval-every`` generations the outer mean is
scored on a fixed validation batch of the training functions (``--validation-runs`` per
function and dimension); the best scored mean is written to ``--out`` (default: the shipped
``src/evolax/algorithms/learned/weights/<algorithm>.npz``), the log to
``benchmarks/results/meta_train_<algorithm>.json``. ``--time-limit`` (default 30 minutes)
bounds the outer loop.

``--mode evaluate``: the shipped (or ``--les-weights``/``--lga-weights``) LES and LGA against
OpenES and SNES with :func:`evolax.coco.bbob_runs` on the HELD-OUT functions (and, for
reference, the training ones) at ``--eval-dim`` 10, 5 seeds, the same population and budget
for all, read at each of ``--budgets`` (evaluations per dimension). OpenES's and SNES's
settings are chosen on the TRAINING functions from a small grid (as the learned algorithms
were fit to those). Writes ``docs/results/learned_es.md`` and
``benchmarks/results/learned_es.json``.

    python benchmarks/meta_train_learned.py --algorithm les --mode train
    python benchmarks/meta_train_learned.py --algorithm lga --mode train
    python benchmarks/meta_train_learned.py --mode evaluate
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from evolax.algorithms import SNES, OpenES
from evolax.algorithms.learned.common import WEIGHTS_DIR, initial_weights
from evolax.algorithms.learned.les import LES, LES_SHAPES
from evolax.algorithms.learned.lga import LGA, LGA_SHAPES
from evolax.coco import BBOBRuns, bbob_runs
from evolax.coco.report import report_tables
from evolax.problems.bbob import BBOB_FUNCTION_NAMES, bbob_problem
from results_table import RESULTS, write_table

TRAIN_FUNCTIONS = (1, 4, 6, 8, 11, 15, 16, 17, 19, 20)
"""The meta-training functions of Lange et al. (2023a), as we read the paper: sphere,
Bueche-Rastrigin, attractive sector, Rosenbrock, discus, Rastrigin, Weierstrass, Schaffer F7
(condition 10), composite Griewank-Rosenbrock and Schwefel."""
HELD_OUT = tuple(f for f in range(1, 25) if f not in TRAIN_FUNCTIONS)

ALGORITHMS = {"les": (LES, LES_SHAPES), "lga": (LGA, LGA_SHAPES)}
LOG_FLOOR, LOG_CEIL = 1e-8, 1e8


def build(name: str, params, pop_size: int):
    cls, _ = ALGORITHMS[name]
    return cls(pop_size=pop_size, params=params)


# ---- the inner loop: every member on every task, one program per dimension ------------------


def task_pool(functions, dims, instances):
    """``{dim: [problems of function f stacked over instances 1..instances]}``."""
    return {
        dim: [
            jax.tree.map(
                lambda *leaves: jnp.stack(leaves),
                *[bbob_problem(f, dim, i) for i in range(1, instances + 1)],
            )
            for f in functions
        ]
        for dim in dims
    }


def inner_runs(name, params, problems, key, dim, pop_size, generations, runs):
    """``[members, functions * runs]``: each member's best precision on each task.

    ``params`` holds the members' network parameters (leading axis ``members``); every member
    runs the same tasks (instances, start points and keys drawn from ``key``)."""
    members = jax.tree.leaves(params)[0].shape[0]
    n_instances = jax.tree.leaves(problems[0])[0].shape[0]
    tasks = len(problems) * runs
    instance_key, x0_key, run_key = jax.random.split(key, 3)
    chosen = jax.random.randint(instance_key, (len(problems), runs), 0, n_instances)
    selected = [
        jax.tree.map(lambda a, i=i: a[chosen[i]], problem) for i, problem in enumerate(problems)
    ]
    x0 = jax.random.uniform(x0_key, (tasks, dim), minval=-4.0, maxval=4.0)
    keys = jax.random.split(run_key, tasks)
    batch = members * tasks
    params_b = jax.tree.map(lambda a: jnp.repeat(a, tasks, axis=0), params)
    x0_b, keys_b = jnp.tile(x0, (members, 1)), jnp.tile(keys, members)

    def algo(p):
        return build(name, p, pop_size)

    def evaluate(x):  # [batch, pop, dim] -> [batch, pop]
        x = x.reshape(members, len(problems), runs, pop_size, dim)
        parts = [
            jax.vmap(jax.vmap(lambda p, xs: p.delta_f(xs)), in_axes=(None, 0))(problem, x[:, f])
            for f, problem in enumerate(selected)
        ]
        return jnp.stack(parts, axis=1).reshape(batch, pop_size)

    states = jax.vmap(lambda p, k, x: algo(p).init(k, x))(params_b, keys_b, x0_b)

    def generation(carry, g):
        states, best = carry
        step = jax.vmap(lambda k: jax.random.split(jax.random.fold_in(k, g)))(keys_b)
        x, states = jax.vmap(lambda p, k, s: algo(p).ask(k, s))(params_b, step[:, 0], states)
        delta = evaluate(x)
        states, _ = jax.vmap(lambda p, k, s, xs, f: algo(p).tell(k, s, xs, f))(
            params_b, step[:, 1], states, x, -delta
        )
        best = jnp.minimum(best, jnp.min(jnp.where(jnp.isfinite(delta), delta, jnp.inf), 1))
        return (states, best), None

    best = jnp.full(batch, jnp.inf)
    (_, best), _ = jax.lax.scan(generation, (states, best), jnp.arange(generations))
    return best.reshape(members, tasks)


def scores(best):
    """``log10`` precision, clipped (a diverged run scores ``log10(1e8)``)."""
    best = jnp.where(jnp.isnan(best), jnp.inf, best)
    return jnp.log10(jnp.clip(best, LOG_FLOOR, LOG_CEIL))


def meta_fitness(best):
    """Each member's mean over tasks of its z-scored (across members) negated log-precision."""
    s = -scores(best)
    z = (s - jnp.mean(s, axis=0)) / (jnp.std(s, axis=0) + 1e-8)
    return jnp.mean(z, axis=1)


def make_batch_runs(name, pool, pop_size, generations, runs):
    def all_tasks(params, key):
        return jnp.concatenate(
            [
                inner_runs(
                    name,
                    params,
                    problems,
                    jax.random.fold_in(key, dim),
                    dim,
                    pop_size,
                    generations,
                    runs,
                )
                for dim, problems in pool.items()
            ],
            axis=1,
        )

    return all_tasks


def train(args) -> None:
    name = args.algorithm
    _, shapes = ALGORITHMS[name]
    pool = task_pool(TRAIN_FUNCTIONS, args.dims, args.instances)
    all_tasks = make_batch_runs(name, pool, args.inner_pop, args.inner_generations, args.runs)
    outer = OpenES(
        pop_size=args.outer_pop,
        optimizer=optax.adam(args.outer_lr),
        init_std=args.outer_std,
    )
    key = jax.random.key(args.seed)
    start = {
        k: jnp.asarray(v) for k, v in initial_weights(jax.random.fold_in(key, 1), shapes).items()
    }
    state = outer.init(key, start)

    @jax.jit
    def outer_step(state, key):
        ask_key, task_key, tell_key = jax.random.split(key, 3)
        members, asked = outer.ask(ask_key, state)
        best = all_tasks(members, task_key)
        fitness = meta_fitness(best)
        state, _ = outer.tell(tell_key, asked, members, fitness)
        return state, jnp.mean(scores(best))

    validation_key = jax.random.fold_in(key, 10**6)

    validation_tasks = make_batch_runs(
        name, pool, args.inner_pop, args.inner_generations, args.validation_runs
    )

    @jax.jit
    def validate(mean):
        one = jax.tree.map(lambda a: a[None], mean)
        return jnp.mean(scores(validation_tasks(one, validation_key)))

    print(f"meta-training {name.upper()}: {sum(math.prod(s) for s in shapes.values())} "
          f"parameters, outer OpenES pop {args.outer_pop}, {len(TRAIN_FUNCTIONS)} functions x "
          f"dims {args.dims} x {args.runs} runs, inner pop {args.inner_pop} x "
          f"{args.inner_generations} generations", flush=True)  # fmt: skip
    print(f"load average {os.getloadavg()} on {os.cpu_count()} CPUs", flush=True)
    t0 = time.perf_counter()
    best_score, best_mean, history = validate(outer.best(state)), outer.best(state), []
    best_score = float(best_score)
    history.append((0, best_score, 0.0))
    print(f"gen 0: validation mean log10 precision {best_score:.3f} "
          f"(compile + run {time.perf_counter() - t0:.1f}s)", flush=True)  # fmt: skip
    t_start = time.perf_counter()
    for g in range(1, args.generations + 1):
        state, population_score = outer_step(state, jax.random.fold_in(key, g))
        over_time = args.time_limit and time.perf_counter() - t_start > args.time_limit
        if g % args.eval_every == 0 or g == args.generations or over_time:
            score = float(validate(outer.best(state)))
            elapsed = time.perf_counter() - t_start
            history.append((g, score, elapsed))
            if score < best_score:
                best_score, best_mean = score, outer.best(state)
            print(f"gen {g}: population {float(population_score):.3f}, validation {score:.3f} "
                  f"(best {best_score:.3f}), {elapsed:.0f}s", flush=True)  # fmt: skip
        if over_time:
            print(f"time limit reached after {g} generations", flush=True)
            break
    elapsed = time.perf_counter() - t0
    out = Path(args.out or WEIGHTS_DIR / f"{name}.npz")
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(out, **{k: np.asarray(v, np.float32) for k, v in best_mean.items()})
    log = {
        "algorithm": name,
        "command": " ".join(sys.argv),
        "seconds": elapsed,
        "generations": g,
        "history": history,
        "best_validation": best_score,
        "cpus": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"meta_train_{name}.json").write_text(json.dumps(log, indent=1) + "\n")
    print(f"wrote {out} ({elapsed / 60:.1f} min)", flush=True)


# ---- held-out comparison ---------------------------------------------------------------------

BASELINE_GRIDS = {
    "OpenES": [
        dict(
            init_std=s,
            optimizer=optax.adam(lr),
            std_decay=d,
            std_min=0.0,
            label=f"init_std={s}, adam({lr}), std_decay={d}",
        )
        for s, lr, d in itertools.product((0.3, 1.0), (0.03, 0.1, 0.3, 1.0), (1.0, 0.99, 0.98))
    ],
    "SNES": [dict(init_std=s, label=f"init_std={s}") for s in (0.3, 1.0, 2.0)],
}


def truncated(runs: BBOBRuns, budget: float) -> BBOBRuns:
    """The runs as if they had stopped after ``budget * dim`` evaluations."""
    generations = max(1, math.ceil(budget * runs.dim / runs.pop_size))
    return dataclasses.replace(runs, precision=runs.precision[..., :generations])


def evaluate(args) -> None:
    pop, dim = args.eval_pop, args.eval_dim
    common = dict(dim=dim, seeds=args.seeds, budget=max(args.budgets))
    t0 = time.perf_counter()
    chosen = {}
    for label, grid in BASELINE_GRIDS.items():
        cls = {"OpenES": OpenES, "SNES": SNES}[label]
        best = None
        for config in grid:
            kwargs = {k: v for k, v in config.items() if k != "label"}
            runs = bbob_runs(cls(pop_size=pop, **kwargs), functions=TRAIN_FUNCTIONS, **common)
            area = report_tables({label: runs})["summary"][0]["ecdf_area"]
            print(f"  {label} {config['label']}: training ECDF area {area:.3f}", flush=True)
            if best is None or area > best[0]:
                best = (area, config)
        chosen[label] = best[1]
    print(f"baselines tuned ({time.perf_counter() - t0:.0f}s)", flush=True)

    contenders = {
        "LES": LES(pop_size=pop, params=args.les_weights),
        "LGA": LGA(pop_size=pop, params=args.lga_weights),
    }
    evosax_les = evosax_les_weights()
    if evosax_les is not None:
        contenders["LES, evosax's weights"] = LES(pop_size=pop, params=evosax_les)
    settings = {}
    for label, config in chosen.items():
        cls = {"OpenES": OpenES, "SNES": SNES}[label]
        kwargs = {k: v for k, v in config.items() if k != "label"}
        contenders[label] = cls(pop_size=pop, **kwargs)
        settings[label] = config["label"]

    results = {}
    for label, algorithm in contenders.items():
        for split, functions in (("held-out", HELD_OUT), ("training", TRAIN_FUNCTIONS)):
            results.setdefault(split, {})[label] = bbob_runs(
                algorithm, functions=functions, **common
            )
        print(f"  {label}: done ({time.perf_counter() - t0:.0f}s)", flush=True)
    table = {"settings": settings, "budgets": list(args.budgets), "splits": {}}
    for split, by_label in results.items():
        for budget in args.budgets:
            view = {label: truncated(runs, budget) for label, runs in by_label.items()}
            tables = report_tables(view)
            tables["median_log10_precision"] = {
                label: {
                    int(f): float(np.median(np.log10(np.maximum(runs.precision[i, :, -1], 1e-8))))
                    for i, f in enumerate(runs.functions)
                }
                for label, runs in view.items()
            }
            table["splits"][f"{split}, {budget:g} x d"] = tables
    table["seconds"] = time.perf_counter() - t0
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "learned_es.json").write_text(json.dumps(table, indent=1) + "\n")
    where = write_table(RESULTS / "learned_es.md", markdown(table, args))
    print(f"wrote {where} ({time.perf_counter() - t0:.0f}s)")


def evosax_les_weights():
    """evosax 0.3.2's own LES checkpoint (``2023_10_les_v2.pkl``) in evolax's names, or
    ``None`` without evosax."""
    try:
        from evosax.algorithms import LearnedES
    except ImportError:
        return None
    tree = LearnedES(population_size=2, solution=jnp.zeros(2)).les_params
    layers = {
        "recomb_weights": ("recombination.key", "recombination.query", "recombination.value"),
        "lrate_modulation": ("lr.hidden", "lr.mean", "lr.std"),
    }
    return {
        f"{prefix}.{leaf}": np.asarray(tree[net]["params"][f"Dense_{i}"][leaf])
        for net, prefixes in layers.items()
        for i, prefix in enumerate(prefixes)
        for leaf in ("kernel", "bias")
    }


def markdown(table, args) -> str:
    settings = "; ".join(f"{k}: {v}" for k, v in table["settings"].items())
    lines = [
        f"`python benchmarks/meta_train_learned.py --mode evaluate`: d = {args.eval_dim}, "
        f"{args.seeds} seeds, instance 1, population {args.eval_pop} for every algorithm, the "
        f"same budget for all (read at {' and '.join(f'{b:g}' for b in args.budgets)} x d "
        "evaluations of one run), x0 uniform in [-4, 4]^d, float64. LES and LGA were "
        f"meta-trained on f{', f'.join(map(str, TRAIN_FUNCTIONS))} (d = 2, 5, 10, 100 "
        f"generations of 16); the held-out functions are the other {len(HELD_OUT)}. OpenES's and "
        "SNES's settings were chosen from a small grid by their ECDF area on the training "
        f"functions ({settings}). \"LES, evosax's weights\" is evolax's LES with the "
        "checkpoint evosax 0.3.2 ships (`2023_10_les_v2.pkl`, trained by evosax's author).",
        "",
        "Targets reached: the fraction of (function, run, COCO target 1e2..1e-8) triples "
        "reached; ECDF area: its mean over log-spaced budgets (higher is faster); solved: "
        "functions whose every run reached 1e-8.",
        "",
    ]
    for name, tables in table["splits"].items():
        labels = [row["algorithm"] for row in tables["summary"]]
        lines += [
            f"**{name[0].upper()}{name[1:]}**",
            "",
            "| algorithm | targets reached | ECDF area | solved (1e-8) |",
            "|---|---|---|---|",
        ]
        for row in tables["summary"]:
            lines.append(
                f"| {row['algorithm']} | {100 * row['targets_reached']:.1f}% | "
                f"{row['ecdf_area']:.3f} | {row['solved']} / {len(tables['functions'])} |"
            )
        if not name.startswith("held-out"):
            lines.append("")
            continue
        lines += [
            "",
            "Median over seeds of log10(best f - f_opt) (lower is better; -8 = solved; the best "
            "in bold):",
            "",
            "| function | " + " | ".join(labels) + " |",
            "|---|" + "---|" * len(labels),
        ]
        medians = tables["median_log10_precision"]
        for f in tables["functions"]:
            values = [round(medians[label][f], 2) for label in labels]
            cells = [f"**{v:.2f}**" if v == min(values) else f"{v:.2f}" for v in values]
            lines.append(f"| f{f} {BBOB_FUNCTION_NAMES[f]} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algorithm", choices=sorted(ALGORITHMS), default="les")
    parser.add_argument("--mode", choices=("train", "evaluate"), default="train")
    parser.add_argument("--generations", type=int, default=2000, help="outer generations")
    parser.add_argument(
        "--time-limit", type=float, default=1800.0, help="stop after SECONDS (0: no limit)"
    )
    parser.add_argument("--outer-pop", type=int, default=32)
    parser.add_argument("--outer-std", type=float, default=0.1)
    parser.add_argument("--outer-lr", type=float, default=0.02)
    parser.add_argument("--inner-pop", type=int, default=16)
    parser.add_argument("--inner-generations", type=int, default=100)
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10])
    parser.add_argument("--runs", type=int, default=1, help="runs per function and dimension")
    parser.add_argument("--validation-runs", type=int, default=4)
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--eval-every", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="weights file (default: the shipped one)")
    parser.add_argument("--eval-dim", type=int, default=10)
    parser.add_argument("--eval-pop", type=int, default=16)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--budgets", type=float, nargs="+", default=[100.0, 1000.0], help="evaluations / dim"
    )
    parser.add_argument("--les-weights", help="LES weights to evaluate (default: shipped)")
    parser.add_argument("--lga-weights", help="LGA weights to evaluate (default: shipped)")
    args = parser.parse_args()
    train(args) if args.mode == "train" else evaluate(args)


if __name__ == "__main__":
    main()
