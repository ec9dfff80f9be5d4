"""Quality diversity on the planar arm (8 joints): coverage and QD-score against generations,
over seeds, for each archive algorithm.

Each algorithm trains the ``arm`` preset (pop 128, the genome the posture itself, fitness
minus the angles' standard deviation, QD-score offset -pi) through ``evolax.train`` with
``--seeds`` seeds (0 and the next ones) as one vmapped run, for ``--generations``:
MAP-Elites on the preset's 32 x 32 grid of end-effector positions, CVT-MAP-Elites on 1,024
centroids, and CMA-MAE on the same grid (4 emitters of 32, threshold_min -pi). Reported at
chosen generations: the median (interquartile range) of the archive's coverage and QD-score
across seeds. Writes ``benchmarks/results/qd_arm.json`` and the table docs/results.md includes.

    python benchmarks/qd_arm.py            # under a minute on 2 cores

The same run from the command line, with the heatmap of its archive:

    evolax train arm run.seeds=5 --run-dir runs/arm && evolax plot runs/arm
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from cartpole_seeds import median_cell, quartiles, train_run
from evolax.config import resolve
from results_table import RESULTS, write_results

OFFSET = -math.pi
ALGORITHMS = {
    "map_elites": [],
    "cvt_map_elites": [
        "algorithm.name=cvt_map_elites",
        "algorithm.n_cells=1024",
        "algorithm.mutation_std=0.01",
        "algorithm.line_std=0.1",
    ],
    "cma_mae": [
        "algorithm.name=cma_mae",
        "algorithm.grid_shape=[32, 32]",
        "algorithm.n_emitters=4",
        f"algorithm.threshold_min={OFFSET}",
    ],
}


def measure(name: str, overrides: list[str], seeds: int, generations: int) -> dict:
    config = resolve(
        "arm",
        [
            *overrides,
            "algorithm.init_std=0.1",
            f"algorithm.qd_offset={OFFSET}",
            f"run.generations={generations}",
            f"run.seeds={seeds}",
            f"run.checkpoint_interval={generations}",
            f"run.test_interval={generations}",
        ],
    )
    _, rows, wall = train_run(config, kind="train")
    curve = {}
    for generation in sorted({r["generation"] for r in rows}):
        at = [r for r in rows if r["generation"] == generation]
        curve[generation] = {
            "coverage": quartiles([r["coverage"] for r in at]),
            "qd_score": quartiles([r["qd_score"] for r in at]),
        }
    return {"algo": name, "settings": overrides, "curve": curve, "wall_s": wall}


def table(rows: list[dict], at=(10, 100, 250, 500, 1000)) -> str:
    lines = [
        "| `--algo` | generation | coverage | QD-score |",
        "|---|---|---|---|",
    ]
    for row in rows:
        for generation in at:
            point = row["curve"].get(generation) or row["curve"].get(str(generation))
            if point is not None:
                lines.append(
                    f"| `{row['algo']}` | {generation} | {median_cell(point['coverage'], 3)} "
                    f"| {median_cell(point['qd_score'], 0)} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algos", nargs="*", help=f"default: all of {', '.join(ALGORITHMS)}")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--generations", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=RESULTS / "qd_arm.json")
    args = parser.parse_args()
    rows = []
    for name in args.algos or list(ALGORITHMS):
        rows.append(measure(name, ALGORITHMS[name], args.seeds, args.generations))
        print(table(rows[-1:]), flush=True)
        write_results(args.out, "qd_arm", rows, table, config=vars(args) | {"out": str(args.out)})
    print(table(rows))


if __name__ == "__main__":
    main()
