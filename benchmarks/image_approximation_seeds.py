"""The image-approximation preset (concrete painting) over many seeds.

`evolax.train` runs the `image_approximation` preset (EvoJAX's concrete-painting notebook: 50
triangles on a 200 x 200 canvas fitted to Grace Hopper's photograph, PGPE pop 256 with ClipUp)
for `--generations` generations, testing the centre's painting every `--test-interval`, for
`--seeds` seeds (the preset's seed, 0, and the next ones) as one vmapped program, and the
preset's seed alone as one run. Reported per tested generation: the median and interquartile
range of the loss (mean squared pixel error, minus the test score) over seeds, and the seconds
a run of one seed alone takes to get there (the single run's wall time, compilation and tests
included, over its generations). Writes `benchmarks/results/image_approximation_seeds.json`
and `.md` (the table `docs/results.md` includes).

    python benchmarks/image_approximation_seeds.py           # 8 seeds, 1000 generations
"""

from __future__ import annotations

import argparse
from pathlib import Path

import evolax
from cartpole_seeds import quartiles, train_run
from evolax.config import resolve, run_settings
from results_table import RESULTS, write_results

PRESET = "image_approximation"


def measure(n_seeds: int, generations: int, test_interval: int) -> dict:
    overrides = [
        f"run.generations={generations}",
        f"run.test_interval={test_interval}",
        f"run.checkpoint_interval={generations}",
    ]
    config = resolve(PRESET, overrides)
    _, _, single_wall = train_run(config)
    batch = resolve(PRESET, [*overrides, f"run.seeds={n_seeds}"])
    seeds = run_settings(batch).seed_list
    summary, tests, wall = train_run(batch)
    per_gen = single_wall / generations
    loss = {}
    for generation in sorted({row["generation"] for row in tests}):
        at = [-row["test_mean"] for row in tests if row["generation"] == generation]
        assert len(at) == len(seeds), (generation, len(at))
        loss[generation] = quartiles(at)
    return {
        "preset": PRESET,
        "seeds": seeds,
        "loss": loss,
        "seconds_per_generation": per_gen,
        "single_run": {"seed": config["run"]["seed"], "wall_s": single_wall},
        "vmapped_run": {"wall_s": wall, "layout": summary["layout"]},
        "vmap_speedup": single_wall * len(seeds) / wall,
    }


def table(rows: list[dict]) -> str:
    (row,) = rows
    generations = list(row["loss"])
    loss = [row["loss"][g] for g in generations]
    seconds = [int(g) * row["seconds_per_generation"] for g in generations]
    one_by_one = row["single_run"]["wall_s"] * len(row["seeds"])
    return "\n".join(
        [
            "| generation | " + " | ".join(str(g) for g in generations) + " |",
            "|---|" + "---|" * len(generations),
            "| seconds, one seed alone (incl. compile) | "
            + " | ".join(f"{s:.0f}" for s in seconds)
            + " |",
            f"| loss, median (IQR) over {len(row['seeds'])} seeds | "
            + " | ".join(f"{q['median']:.4f} ({q['q25']:.4f}-{q['q75']:.4f})" for q in loss)
            + " |",
            "",
            f"{len(row['seeds'])} seeds as one vmapped run: {row['vmapped_run']['wall_s']:.0f} s; "
            f"one run per seed: {one_by_one:.0f} s ({row['vmap_speedup']:.2f}x).",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--generations", type=int, default=1000)
    parser.add_argument("--test-interval", type=int, default=250)
    parser.add_argument("--out", type=Path, default=RESULTS / "image_approximation_seeds.json")
    args = parser.parse_args()
    evolax.use_cpu_cores()
    row = measure(args.seeds, args.generations, args.test_interval)
    write_results(args.out, "image_approximation_seeds", [row], table)
    print(table([row]), flush=True)


if __name__ == "__main__":
    main()
