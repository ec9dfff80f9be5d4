"""Every registered algorithm on cart-pole swing-up (easy), over many seeds.

Each algorithm runs with the settings of the slow test that checks it reaches 900
(`tests/algorithms/test_cartpole_per_algorithm.py`: pop 64, 4 episodes per individual, its
own step sizes), for 1000 generations, tested every 50 generations on 100 held-out episodes,
with `--seeds` seeds (42 and the next ones) as one vmapped `evolax.train` run. Reported per
algorithm: how many seeds reach a test >= 900, the median and interquartile range of the
generation where they first do (a seed that never does counts as later than all), and of the
best test. Writes `benchmarks/results/cartpole_per_algorithm.json` and `.md` (the table
`docs/results.md` quotes), after every algorithm.

    python benchmarks/cartpole_per_algorithm.py                 # all 13, about 25 minutes
    python benchmarks/cartpole_per_algorithm.py pgpe cma_es
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from pathlib import Path

import evolax
from cartpole_seeds import first_at, quartiles
from evolax.config import build_trainer, resolve
from evolax.logging import read_rows
from evolax.runner import run_seeds, train
from results_table import RESULTS, previous_rows, write_results

TEST = Path(__file__).parents[1] / "tests" / "algorithms" / "test_cartpole_per_algorithm.py"


def settings() -> dict[str, tuple[dict, int]]:
    """The slow test's settings per algorithm (one source for both)."""
    spec = importlib.util.spec_from_file_location("per_algorithm_settings", TEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SETTINGS


def measure(name: str, overrides: dict, n_seeds: int, generations: int) -> dict:
    config = resolve(
        "cartpole_easy",
        {
            "algo": name,
            "pop_size": 64,
            "n_repeats": 4,
            "test_interval": 50,
            "test_episodes": 100,
            "generations": generations,
            "seeds": n_seeds,
            **overrides,
        },
    )
    seeds = run_seeds(config)
    with tempfile.TemporaryDirectory() as run_dir:
        start = time.perf_counter()
        trainer = build_trainer(config)
        train(
            trainer,
            generations,
            seed=seeds,
            log_interval=50,
            test_interval=50,
            n_test_episodes=100,
            run_dir=run_dir,
            config=config,
            progress=False,
            checkpoint_interval=generations,
        )
        wall = time.perf_counter() - start
        tests = [r for r in read_rows(Path(run_dir) / "metrics.jsonl") if r["kind"] == "test"]
    per_seed = []
    for seed in seeds:
        rows = [r for r in tests if r["seed"] == seed]
        per_seed.append(
            {
                "seed": seed,
                "generation_to_900": first_at(rows, 900.0),
                "best": max(r["test_mean"] for r in rows),
            }
        )
    return {
        "algo": name,
        "settings": overrides,
        "seeds": seeds,
        "per_seed": per_seed,
        "generation_to_900": quartiles([s["generation_to_900"] for s in per_seed]),
        "best": quartiles([s["best"] for s in per_seed]),
        "wall_s": wall,
    }


def table(rows: list[dict]) -> str:
    def cell(stats: dict, digits: int = 0) -> str:
        def fmt(x):
            return "never" if x is None or x == float("inf") else f"{x:.{digits}f}"  # JSON: null

        return f"{fmt(stats['median'])} ({fmt(stats['q25'])}-{fmt(stats['q75'])})"

    lines = [
        "| `--algo` | settings | seeds reaching 900 | first test >= 900: generation | best test |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        settings = ", ".join(f"{k} {v}" for k, v in row["settings"].items()) or "EvoJAX's"
        reached = row["generation_to_900"]
        lines.append(
            f"| `{row['algo']}` | {settings} | {reached['reached']} of {reached['of']} "
            f"| {cell(reached)} | {cell(row['best'], 1)} |"
        )
    return "\n".join(lines)


def main() -> None:
    every = settings()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algos", nargs="*", help=f"default: all of {', '.join(every)}")
    parser.add_argument("--seeds", type=int, default=8, help="seeds per algorithm")
    parser.add_argument("--generations", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=RESULTS / "cartpole_per_algorithm.json")
    args = parser.parse_args()
    unknown = sorted(set(args.algos) - set(every))
    if unknown:
        parser.error(f"unknown algorithms {unknown}; choose from {list(every)}")
    evolax.use_cpu_cores()
    rows = {row["algo"]: row for row in previous_rows(args.out)}
    for name in args.algos or list(every):
        rows[name] = measure(name, every[name][0], args.seeds, args.generations)
        ordered = [rows[n] for n in every if n in rows]
        write_results(args.out, "cartpole_per_algorithm", ordered, table)
        print(table(ordered), flush=True)


if __name__ == "__main__":
    main()
