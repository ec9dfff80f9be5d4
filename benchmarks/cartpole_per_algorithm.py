"""Every registered algorithm on cart-pole swing-up (easy), over many seeds.

Each algorithm runs with the settings of the slow test that checks it reaches 900
(`tests/algorithms/test_cartpole_per_algorithm.py`: pop 64, 4 episodes per individual, its
own step sizes), for 1000 generations, tested every 50 generations on 100 held-out episodes,
with `--seeds` seeds (42 and the next ones) as one vmapped `evolax.train` run. Reported per
algorithm: how many seeds reach a test >= 900, the median and interquartile range of the
generation where they first do (a seed that never does counts as later than all), and of the
best test. Writes `benchmarks/results/cartpole_per_algorithm.json` and
`docs/results/cartpole_per_algorithm.md` (the table `docs/results.md` includes), after every
algorithm.

    python benchmarks/cartpole_per_algorithm.py                 # every registered one: hours
    python benchmarks/cartpole_per_algorithm.py pgpe cma_es
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import evolax
from cartpole_seeds import first_at, quartiles
from evolax.config import build_trainer, resolve, run_settings
from evolax.legacy import from_flat
from evolax.logging import read_rows
from evolax.runner import train
from results_table import RESULTS, previous_rows, write_results

TEST = Path(__file__).parents[1] / "tests" / "algorithms" / "test_cartpole_per_algorithm.py"


Settings = Mapping[str, object] | Sequence[str]


def settings() -> dict[str, tuple[Settings, int]]:
    """The slow test's settings per algorithm (one source for both)."""
    spec = importlib.util.spec_from_file_location("per_algorithm_settings", TEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SETTINGS


def configuration(name: str, overrides: Settings, n_seeds: int, generations: int) -> dict:
    """The test's configuration of ``name``, run for ``generations`` with ``n_seeds`` seeds.

    ``overrides`` are dotted assignments (``algorithm.init_std=0.5``, or a mapping of dotted
    keys) on the preset, or 0.1.0's flat keys (``init_std``), built as 0.1.0 built them."""
    run = [
        f"run.generations={generations}",
        "run.seed=42",
        f"run.seeds={n_seeds}",
        "run.log_interval=50",
        "run.test_interval=50",
        "run.test_episodes=100",
        f"run.checkpoint_interval={generations}",
    ]
    if isinstance(overrides, Mapping) and not any("." in key for key in overrides):
        return resolve(from_flat({"algo": name, "pop_size": 64, "n_repeats": 4, **overrides}), run)
    if isinstance(overrides, Mapping):
        overrides = [f"{key}={value}" for key, value in overrides.items()]
    algorithm = [f"algorithm.name={name}", "algorithm.pop_size=64", "trainer.n_repeats=4"]
    return resolve("cartpole_easy", [*algorithm, *overrides, *run])


def measure(name: str, overrides: Settings, n_seeds: int, generations: int) -> dict:
    config = configuration(name, overrides, n_seeds, generations)
    run = run_settings(config)
    seeds = run.seed_list
    with tempfile.TemporaryDirectory() as run_dir:
        start = time.perf_counter()
        trainer = build_trainer(config)
        train(
            trainer,
            run.generations,
            **run.train_kwargs(),
            run_dir=run_dir,
            config=config,
            progress=False,
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
        given = row["settings"]
        pairs = given.items() if isinstance(given, dict) else (a.split("=", 1) for a in given)
        settings = ", ".join(f"{k} {v}" for k, v in pairs) or "EvoJAX's"
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
