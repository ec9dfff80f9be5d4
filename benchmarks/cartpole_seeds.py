"""The cart-pole presets over many seeds, against EvoJAX's published scores; and what running
the seeds as one vmapped program saves against one run after another.

For each preset, `evolax.train` runs its configuration (EvoJAX's: PGPE pop 64, 16 repeats,
MLP [64, 64], 1000 generations, a 100-episode test every 100) for `--seeds` seeds (the
preset's seed, 42, and the next ones) as one vmapped program, and the preset's own seed alone
as one run. Per seed it reads the first test at or above the target (900 easy, 600 hard, the
scores EvoJAX's README reports reaching), the final and the best test. Reported: the median
and interquartile range over seeds. Seconds to the target are the seed's generation times the
single run's seconds per generation (its wall time, compilation and tests included, over its
generations): what a run of that seed alone would take. The speed-up of vmapping is the
single run's wall time times the number of seeds over the vmapped run's wall time. Writes
`benchmarks/results/cartpole_seeds.json` and `docs/results/cartpole_seeds.md` (the table
`docs/results.md` includes).

    python benchmarks/cartpole_seeds.py                        # easy and hard, 8 seeds
    python benchmarks/cartpole_seeds.py --optimizer evojax_adam cartpole_easy
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import evolax
from evolax.config import build_trainer, resolve, run_settings
from evolax.logging import read_rows
from evolax.runner import TrainingInterrupted, train
from results_table import RESULTS, previous_rows, write_results

TARGETS = {"cartpole_easy": 900.0, "cartpole_hard": 600.0}
#: EvoJAX 0.2.17's README table (final test scores) and, on this machine, its own run of
#: the easy configuration (one seed): 275 generations and 23.8 minutes to 900.
EVOJAX = {"cartpole_easy": 935.0, "cartpole_hard": 631.0}


def train_run(config: dict, kind: str = "test") -> tuple[dict, list[dict], float]:
    """Summary, ``kind`` rows (``"test"``, ``"train"``) and wall seconds of one `evolax.train`
    run of ``config`` (up to where it stopped, if SIGTERM or SIGINT stopped it)."""
    trainer = build_trainer(config)
    run = run_settings(config)
    with tempfile.TemporaryDirectory() as run_dir:
        start = time.perf_counter()
        try:
            result = train(
                trainer,
                run.generations,
                **run.train_kwargs(),
                run_dir=run_dir,
                config=config,
                progress=False,
            )
        except TrainingInterrupted as stopped:  # SIGTERM (`timeout`): keep what it ran
            result = stopped.result
        wall = time.perf_counter() - start
        rows = [row for row in read_rows(Path(run_dir) / "metrics.jsonl") if row["kind"] == kind]
    return result.summary, rows, wall


def first_at(tests: list[dict], target: float) -> int | None:
    """The generation of the first test at or above ``target`` (``None``: never)."""
    return next((row["generation"] for row in tests if row["test_mean"] >= target), None)


def per_seed_steps(
    tests: list[dict], seeds: list[int], level: float, steps_per_generation: int
) -> list[dict]:
    """Per seed of a run's test rows: the first generation whose test reaches ``level`` and the
    training steps to it (``None``: never), the best test, and every ``(generation, test)``."""
    out = []
    for seed in seeds:
        rows = [row for row in tests if row["seed"] == seed]
        generation = first_at(rows, level)
        out.append(
            {
                "seed": seed,
                "generation": generation,
                "steps": None if generation is None else generation * steps_per_generation,
                "best": max(row["test_mean"] for row in rows),
                "tests": [(row["generation"], row["test_mean"]) for row in rows],
            }
        )
    return out


def quartiles(values: list[float | None]) -> dict:
    """Median and interquartile range (``None`` where a seed never got there)."""
    known = [float(v) for v in values if v is not None]
    # a seed that never reached it counts as worse than all: a stand-in above every value,
    # so a quartile between it and a value is "never", and one on a value is that value
    never = 2 * max(map(abs, known), default=0.0) + 1.0
    quarts = np.percentile(known + [never] * (len(values) - len(known)), [25, 50, 75])
    q25, median, q75 = (np.inf if q > max(known, default=-np.inf) else q for q in quarts)
    return {
        "median": float(median),
        "q25": float(q25),
        "q75": float(q75),
        "reached": sum(v is not None for v in values),
        "of": len(values),
    }


def measure(preset: str, n_seeds: int, optimizer: str | None, generations: int | None) -> dict:
    overrides = [f"algorithm.optimizer.name={optimizer}"] if optimizer else []
    if generations:
        overrides.append(f"run.generations={generations}")
    config = resolve(preset, overrides)
    single_summary, single_tests, single_wall = train_run(config)
    batch = resolve(preset, [*overrides, f"run.seeds={n_seeds}"])
    seeds = run_settings(batch).seed_list
    summary, tests, wall = train_run(batch)
    per_gen = single_wall / config["run"]["generations"]
    target = TARGETS[preset]
    per_seed = []
    for seed in seeds:
        rows = [row for row in tests if row["seed"] == seed]
        generation = first_at(rows, target)
        per_seed.append(
            {
                "seed": seed,
                "generation_to_target": generation,
                "seconds_to_target": None if generation is None else generation * per_gen,
                "final": rows[-1]["test_mean"],
                "best": max(row["test_mean"] for row in rows),
            }
        )
    return {
        "preset": preset,
        "optimizer": config["algorithm"]["optimizer"]["name"],
        "target": target,
        "evojax_final": EVOJAX[preset],
        "seeds": seeds,
        "per_seed": per_seed,
        "generation_to_target": quartiles([s["generation_to_target"] for s in per_seed]),
        "seconds_to_target": quartiles([s["seconds_to_target"] for s in per_seed]),
        "final": quartiles([s["final"] for s in per_seed]),
        "best": quartiles([s["best"] for s in per_seed]),
        "single_run": {
            "seed": config["run"]["seed"],
            "wall_s": single_wall,
            "generation_to_target": first_at(single_tests, target),
            "final": single_summary["final_test_mean"],
        },
        "vmapped_run": {"wall_s": wall, "layout": summary["layout"]},
        "vmap_speedup": single_wall * len(seeds) / wall,
    }


def median_cell(stats: dict, digits: int = 0) -> str:
    """``median (q25-q75)`` of :func:`quartiles`' ``stats``, noting seeds that never got there."""

    def fmt(x):
        return "never" if x is None or x == np.inf else f"{x:.{digits}f}"  # JSON: null

    reached = "" if stats["reached"] == stats["of"] else f" ({stats['reached']} reached)"
    return f"{fmt(stats['median'])} ({fmt(stats['q25'])}-{fmt(stats['q75'])}){reached}"


def table(rows: list[dict]) -> str:
    lines = [
        "| preset | optimizer | seeds | first test >= target: generation | seconds | final "
        "| best | EvoJAX final | vmapped run / one run per seed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        one_by_one = row["single_run"]["wall_s"] * len(row["seeds"])
        lines.append(
            f"| {row['preset']} (target {row['target']:.0f}) | {row['optimizer']} "
            f"| {len(row['seeds'])} | {median_cell(row['generation_to_target'])} "
            f"| {median_cell(row['seconds_to_target'])} | {median_cell(row['final'], 1)} "
            f"| {median_cell(row['best'], 1)} | {row['evojax_final']:.0f} "
            f"| {row['vmapped_run']['wall_s']:.0f} s / {one_by_one:.0f} s "
            f"= {row['vmap_speedup']:.2f}x faster |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", help=f"of {list(TARGETS)} (default: all)")
    parser.add_argument("--seeds", type=int, default=8, help="seeds per preset")
    parser.add_argument("--optimizer", help="centre optimizer instead of the preset's")
    parser.add_argument("--generations", type=int, help="instead of the preset's (smoke tests)")
    parser.add_argument("--out", type=Path, default=RESULTS / "cartpole_seeds.json")
    args = parser.parse_args()
    evolax.use_cpu_cores()

    rows = {(r["preset"], r["optimizer"]): r for r in previous_rows(args.out)}
    for preset in args.presets or list(TARGETS):
        if preset not in TARGETS:
            parser.error(f"unknown preset {preset!r}; choose from {list(TARGETS)}")
        row = measure(preset, args.seeds, args.optimizer, args.generations)
        rows[(row["preset"], row["optimizer"])] = row
        ordered = sorted(rows.values(), key=lambda r: (r["preset"], r["optimizer"]))
        write_results(args.out, "cartpole_seeds", ordered, table)  # after every preset
        print(table(ordered), flush=True)


if __name__ == "__main__":
    main()
