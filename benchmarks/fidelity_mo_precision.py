"""``python benchmarks/fidelity.py mo --precision``: where a float32 run's difference from
float64 comes from, the search's arithmetic or the objective's.

Per case, evolax runs four ways over the same seeds: the whole program in float64, float64
with the objective computed in float32 (the genome rounded to float32, the objectives cast
back), float32 with the objective computed in float64, and the whole program in float32. Each
run's last population is scored by IGD+ against the problem's front, its objectives computed
in float64. Equal columns in pairs say which precision decides.
"""

from __future__ import annotations

import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from results_table import load_note

VARIANTS = (  # label: (the search's dtype, the objective's dtype)
    ("float64", "float64", "float64"),
    ("float64 search, float32 objective", "float64", "float32"),
    ("float32 search, float64 objective", "float32", "float64"),
    ("float32", "float32", "float32"),
)


def precision_row(name: str, algorithm: str, setup, n_var: int, m: int, seeds: int) -> dict:
    """IGD+ per seed of each of :data:`VARIANTS` on one case (``setup``: ``_mo_setup``'s
    ``(algo, make, generations)``)."""
    from pymoo.indicators.igd_plus import IGDPlus

    from evolax.problems.multiobjective import MULTIOBJECTIVE_PROBLEMS, pareto_front

    algo, _, generations = setup
    problem = MULTIOBJECTIVE_PROBLEMS[name]
    extra = {} if name.startswith("zdt") else {"n_objectives": m}
    igd = IGDPlus(pareto_front(name, 1000, n_objectives=m))
    keys = jax.random.split(jax.random.key(0), seeds)
    row: dict = {"problem": name, "algorithm": algorithm, "generations": generations}
    for label, search, objective in VARIANTS:
        fitness = partial(_fitness, problem, extra, jnp.dtype(objective))
        run = partial(_last_population, algo, fitness, n_var, jnp.dtype(search), generations)
        with jax.enable_x64(True):
            last = np.asarray(jax.jit(jax.vmap(run))(keys), np.float64)
            scores = [float(igd(np.asarray(problem(jnp.asarray(x), **extra)))) for x in last]
        row[label] = scores
    row["load"] = os.getloadavg()[0]
    return row


def _fitness(problem, extra: dict, dtype, x):
    """Minus ``problem``'s objectives computed in ``dtype``, in ``x``'s dtype."""
    return -problem(x.astype(dtype), **extra).astype(x.dtype)


def _last_population(algo, fitness, n_var: int, dtype, generations: int, key):
    """The last population of one run from ``zeros(n_var, dtype)``."""
    from evolax import evolve

    return evolve(algo, fitness, jnp.zeros(n_var, dtype), key, generations)[0].population


def precision_table(rows: list[dict]) -> str:
    names = {"nsga2": "NSGA-II", "nsga3": "NSGA-III", "moead": "MOEA/D", "smsemoa": "SMS-EMOA"}
    labels = [v[0] for v in VARIANTS]
    lines = [
        "| problem | algorithm | generations | " + " | ".join(labels) + " |",
        "|---|---|---|" + "---|" * len(labels),
    ]
    for r in rows:
        cells = []
        for label in labels:
            scores = np.asarray(r[label])
            cells.append(f"{np.median(scores):.4g} ({scores.min():.3g} to {scores.max():.3g})")
        lines.append(
            f"| {r['problem'].upper()} | {names[r['algorithm']]} | {r['generations']} | "
            + " | ".join(cells)
            + " |"
        )
    seeds = len(rows[0][labels[0]]) if rows else 0
    lines.append(
        f"\nIGD+ of the last population (objectives in float64), median (min to max) over "
        f"{seeds} seeds, the same seeds in every column."
    )
    return "\n".join(lines) + load_note(rows)
