"""A two-objective control result: NSGA-II on cart-pole swing-up (easy) with the control
effort as a second objective (``ActionCost``), over seeds.

NSGA-II (pop 64, genomes in ``[-3, 3]``) evolves an MLP [16] policy on
``ActionCost(cartpole)``: objective 0 is the episode's return, objective 1 minus its total
squared force (actions in ``[-1, 1]``, so at most 1000 over 1000 steps); each member's
fitness is the mean over 4 episodes. ``--seeds`` seeds (0 and the next ones) train as one
vmapped ``evolax.train`` run for ``--generations``. From each seed's last population
(``pareto_front.json``) the benchmark reports the median (interquartile range) over seeds
of: the non-dominated members, the hypervolume of the front above (return 0, effort 1000)
divided by 1000 x 1000, the front's best return and that member's effort, and the least
effort of a front member whose return is at least 90% of the best. Writes
``benchmarks/results/pareto_cartpole.json`` and the table docs/results.md includes.

    python benchmarks/pareto_cartpole.py            # about a minute on 2 cores

The same run from the command line, with the plot of each seed's last population:

    evolax train cartpole algorithm.name=evolax.algorithms.multiobjective.nsga2:NSGA2 \\
        algorithm.n_objectives=2 'algorithm.lower=[-3]' 'algorithm.upper=[3]' \\
        task.name=evolax.tasks.action_cost:ActionCost task.task.name=cartpole \\
        'policy.hidden_sizes=[16]' trainer.n_repeats=4 run.generations=300 run.seeds=5 \\
        --run-dir runs/effort && evolax plot runs/effort
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from cartpole_seeds import median_cell, quartiles
from evolax.config import build_trainer, resolve, run_settings
from evolax.pareto import hypervolume
from evolax.runner import FRONT, train
from results_table import RESULTS, write_results

REFERENCE = np.array([0.0, -1000.0])  # return 0, effort 1000: both maximised


def measure(seeds: int, generations: int) -> dict:
    config = resolve(
        "cartpole_easy",
        [
            "algorithm.name=evolax.algorithms.multiobjective.nsga2:NSGA2",
            "algorithm.n_objectives=2",
            "algorithm.pop_size=64",
            "algorithm.lower=[-3]",
            "algorithm.upper=[3]",
            "task.name=evolax.tasks.action_cost:ActionCost",
            "task.task.name=cartpole",
            "policy.hidden_sizes=[16]",
            "trainer.n_repeats=4",
            f"run.generations={generations}",
            "run.seed=0",
            f"run.seeds={seeds}",
            f"run.test_interval={generations}",
            f"run.checkpoint_interval={generations}",
            "run.log_interval=50",
        ],
    )
    trainer = build_trainer(config)
    run = run_settings(config)
    with tempfile.TemporaryDirectory() as run_dir:
        start = time.perf_counter()
        train(
            trainer, run.generations, **run.train_kwargs(), run_dir=run_dir, config=config,
            progress=False,
        )  # fmt: skip
        wall = time.perf_counter() - start
        record = json.loads((Path(run_dir) / FRONT).read_text())
    per_seed = []
    for seed, objectives, front in zip(
        record["seeds"], record["objectives"], record["pareto_front"], strict=True
    ):
        points = np.asarray(objectives, np.float64)[np.asarray(front, bool)]
        points = points[np.all(np.isfinite(points), axis=1)]
        best = points[np.argmax(points[:, 0])]
        good = points[points[:, 0] >= 0.9 * best[0]]
        volume = float(hypervolume(jnp.asarray(points), jnp.asarray(REFERENCE)))
        per_seed.append(
            {
                "seed": seed,
                "front_size": len(points),
                "hypervolume": volume / 1e6,
                "best_return": float(best[0]),
                "effort_at_best": float(-best[1]),
                "least_effort_90": float(-good[:, 1].max()),
                "front": points.tolist(),
            }
        )
    summary = {
        key: quartiles([s[key] for s in per_seed])
        for key in ("front_size", "hypervolume", "best_return", "effort_at_best", "least_effort_90")
    }
    return {"per_seed": per_seed, "summary": summary, "wall_s": wall}


def table(rows: list[dict]) -> str:
    lines = [
        "| non-dominated members | hypervolume / 1e6 | best return | its effort "
        "| least effort at >= 90% of the best return |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        s = row["summary"]
        lines.append(
            f"| {median_cell(s['front_size'], 0)} | {median_cell(s['hypervolume'], 3)} "
            f"| {median_cell(s['best_return'], 1)} | {median_cell(s['effort_at_best'], 1)} "
            f"| {median_cell(s['least_effort_90'], 1)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--generations", type=int, default=300)
    parser.add_argument("--out", type=Path, default=RESULTS / "pareto_cartpole.json")
    args = parser.parse_args()
    rows = [measure(args.seeds, args.generations)]
    write_results(
        args.out, "pareto_cartpole", rows, table, config=vars(args) | {"out": str(args.out)}
    )
    print(table(rows))


if __name__ == "__main__":
    main()
