"""Non-dominated sorting: evolax against pymoo 0.6.2 and EvoX 1.4, side by side in one run.

NSGA-II sorts its parents and children together every generation: ``2 pop`` points. For pop
1,000 and 10,000, 2 and 3 objectives, and two kinds of points (uniform in the unit cube: many
thin fronts, as early in a run; and near the unit sphere's positive octant, radii 1 to 1.05:
fewer, fuller fronts, as later), each library ranks the same points into Pareto fronts:

- evolax: ``evolax.pareto.non_dominated_rank`` (jitted, compiled before timing; blocks of
  512 points, memory ``O(block^2)``);
- pymoo: ``NonDominatedSorting`` with its default ``fast_non_dominated_sort`` and with
  ``efficient_non_dominated_sort`` (NumPy; each builds the ``n x n`` dominance matrix or
  compares point by point);
- EvoX: ``evox.operators.selection.non_dominate_rank`` (PyTorch on the CPU, the ``n x n``
  dominance matrix and a pass over it per front), up to ``--evox-max-points`` points: at
  20,000 one call took minutes.

Every library's ranks must equal evolax's (the run stops otherwise). Timing rounds alternate
between the libraries; each figure is the median of ``--rounds``. Writes
``benchmarks/results/pareto_sort_speed.json`` and the table docs/results.md includes.

    python benchmarks/pareto_sort_speed.py            # about 3 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from evolax.pareto import non_dominated_rank
from results_table import RESULTS, write_results


def sorters(points: np.ndarray, evox: bool) -> dict[str, Callable[[], np.ndarray]]:
    """Each library's ``rank()`` of ``points`` (maximised), ready to time: fronts from 0."""
    import torch
    from evox.operators.selection import non_dominate_rank
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

    ours = jax.jit(non_dominated_rank)
    on_device = jnp.asarray(points)
    jax.block_until_ready(ours(on_device))  # compiled before timing
    minimised = -points  # pymoo and EvoX minimise
    as_tensor = torch.as_tensor(minimised)

    def pymoo(method: str) -> Callable[[], np.ndarray]:
        return lambda: NonDominatedSorting(method=method).do(
            minimised, return_rank=True, n_stop_if_ranked=len(points)
        )[1]

    runs = {
        "evolax": lambda: np.asarray(jax.block_until_ready(ours(on_device))),
        "pymoo fast_non_dominated_sort": pymoo("fast_non_dominated_sort"),
        "pymoo efficient_non_dominated_sort": pymoo("efficient_non_dominated_sort"),
    }
    if evox:
        runs["evox"] = lambda: non_dominate_rank(as_tensor).numpy()
    return runs


def points(kind: str, n: int, m: int, seed: int) -> np.ndarray:
    """``[n, m]`` maximised objectives: ``uniform`` in the unit cube, or ``near front``,
    minus points of the unit sphere's positive octant scaled by 1 to 1.05."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(size=(n, m))
    if kind == "near front":
        radius = 1.0 + 0.05 * rng.uniform(size=(n, 1))
        u = -u / np.linalg.norm(u, axis=1, keepdims=True) * radius
    return u.astype(np.float32)


def table(rows: list[dict]) -> str:
    names = ["evolax", "pymoo fast_non_dominated_sort", "pymoo efficient_non_dominated_sort"]
    names += ["evox"]
    lines = [
        "| NSGA-II pop | points | objectives | kind | fronts | "
        + " | ".join(f"{name} s" for name in names)
        + " | evolax time / fastest other's |",
        "|---" * (6 + len(names)) + "|",
    ]
    for row in rows:
        t = row["seconds"]
        fastest = min(v for k, v in t.items() if k != "evolax")
        cells = [f"{t[name]:.3g}" if name in t else "(not run)" for name in names]
        lines.append(
            f"| {row['pop']:,} | {row['points']:,} | {row['objectives']} | {row['kind']} "
            f"| {row['fronts']} | " + " | ".join(cells) + f" | {t['evolax'] / fastest:.1f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pops", default="1000,10000", help="NSGA-II population sizes")
    parser.add_argument("--objectives", default="2,3")
    parser.add_argument("--kinds", default="uniform,near front")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--evox-max-points", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=RESULTS / "pareto_sort_speed.json")
    args = parser.parse_args()
    rows = []
    cases = [
        (pop, m, kind)
        for pop in map(int, args.pops.split(","))
        for m in map(int, args.objectives.split(","))
        for kind in args.kinds.split(",")
    ]
    for pop, m, kind in cases:
        runs = sorters(points(kind, 2 * pop, m, pop + m), 2 * pop <= args.evox_max_points)
        expected = runs["evolax"]()
        for name, run in runs.items():
            if not np.array_equal(np.asarray(run(), np.int64), expected):
                raise SystemExit(f"{name} ranks {2 * pop} points in {m} objectives otherwise")
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, run in runs.items():
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
        rows.append(
            {
                "pop": pop,
                "points": 2 * pop,
                "objectives": m,
                "kind": kind,
                "fronts": int(expected.max()) + 1,
                "seconds": {name: statistics.median(t) for name, t in times.items()},
                "all_rounds": times,
            }
        )
        print(table(rows), flush=True)
    write_results(
        args.out,
        "non-dominated sorting of 2 pop points",
        rows,
        table,
        versions={name: version(name) for name in ("evolax", "pymoo", "evox", "torch", "jax")},
    )


if __name__ == "__main__":
    main()
