"""Quality diversity over tasks and without grids, against references at equal evaluations:
multi-task MAP-Elites, Dominated Novelty Search and MOME, the median (interquartile range)
over seeds of their final archive metrics beside the reference's.

- ``mt_map_elites``: the 10-joint multi-task arm of Mouret & Maguire (2020), 200 tasks (a CVT
  of joint range and arm length), 20,000 evaluations in batches of 100, against the rules of
  the authors' ``pymap_elites`` (``multitask.py``: tournament of the nearest task, UCB1 over
  tournament sizes) in numpy; coverage is the fraction of tasks solved, QD-score the sum over
  tasks of ``fitness + 2``.
- ``dns``: the 8-joint arm (fitness minus the angles' std, descriptor the tip), 64 children
  for 150 generations, 256 kept, ``k = 3``, against QDax's ``DominatedNoveltyRepertoire``
  rules in numpy (QDax 0.5.0 on PyPI has no DNS); both are measured by a passive 16 x 16 grid
  that took every child (QD-score offset ``-pi``).
- ``mome``: QDax's MOME example problem (two shifted Rastrigins of 6 genes, descriptor the
  first two, an 8 x 8 grid, fronts of 10), 64 children for 300 generations, iso+line in
  both, against QDax 0.5's ``MOME`` (skipped where qdax is not installed); MOQD-score with
  reference point ``(-150, -150)``.

Writes ``benchmarks/results/qd_tasks.json`` and the table docs/algorithms.md includes.

    python benchmarks/qd_tasks.py            # about 4 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

import qd_runs
from cartpole_seeds import median_cell, quartiles
from results_table import RESULTS, write_results

RUNS = {
    "mt_map_elites": (
        "multi-task arm, 200 tasks, 20,000 evaluations",
        "pymap_elites rules (numpy)",
        lambda seed: qd_runs.run_evolax_mt_map_elites(seed, 20_000),
        lambda seed: qd_runs.run_reference_mt_map_elites(seed, 20_000),
        ("coverage", "qd_score"),
    ),
    "dns": (
        "arm, 8 joints, 9,600 evaluations",
        "QDax DNS rules (numpy)",
        lambda seed: qd_runs.run_evolax_dns(seed, 150),
        lambda seed: qd_runs.run_reference_dns(seed, 150),
        ("coverage", "qd_score"),
    ),
    "mome": (
        "two Rastrigins, 19,200 evaluations",
        "QDax 0.5.0 MOME",
        lambda seed: qd_runs.run_evolax_mome(seed, 300),
        lambda seed: qd_runs.run_qdax_mome(seed, 300),
        ("coverage", "moqd_score"),
    ),
}


def measure(name: str, seeds: int) -> dict:
    problem, reference, ours, theirs, metrics = RUNS[name]
    start = time.perf_counter()
    mine = [ours(seed) for seed in range(seeds)]
    try:
        others = [theirs(seed) for seed in range(seeds)]
    except ImportError as error:  # qdax not installed
        print(f"{name}: reference skipped ({error})", flush=True)
        others = []
    return {
        "algo": name,
        "problem": problem,
        "reference": reference,
        "metrics": {
            m: {
                "evolax": quartiles([r[m] for r in mine]),
                "reference": quartiles([r[m] for r in others]) if others else None,
            }
            for m in metrics
        },
        "wall_s": time.perf_counter() - start,
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| `--algo` | problem (equal evaluations) | reference | metric | evolax | reference | "
        "ratio of medians |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        for metric, stats in row["metrics"].items():
            digits = 3 if metric == "coverage" else 1
            ours, theirs = stats["evolax"], stats["reference"]
            other = "not installed" if theirs is None else median_cell(theirs, digits)
            ratio = "" if theirs is None else f"{ours['median'] / theirs['median']:.3f}"
            lines.append(
                f"| `{row['algo']}` | {row['problem']} | {row['reference']} | {metric} | "
                f"{median_cell(ours, digits)} | {other} | {ratio} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algos", nargs="*", help=f"default: all of {', '.join(RUNS)}")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "qd_tasks.json")
    args = parser.parse_args()
    rows = []
    for name in args.algos or list(RUNS):
        rows.append(measure(name, args.seeds))
        print(table(rows[-1:]), flush=True)
    write_results(args.out, "qd_tasks", rows, table, config=vars(args) | {"out": str(args.out)})
    print(table(rows))


if __name__ == "__main__":
    main()
