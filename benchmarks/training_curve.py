"""A training run's learning curve as the table the docs quote: the test score and the wall
time at chosen generations, read from the run folder's ``metrics.jsonl``.

The long runs the docs report (MNIST to generation 5000, WaterWorld, the multi-agent pool)
take hours on a CPU, so the run and the table are separate steps: ``--train`` starts
``evolax train`` with the arguments that follow ``--`` (given a folder that holds a run, it
resumes it: ``-- run.generations=6000``); without it the script only reads the folder.
Writes ``benchmarks/results/NAME.json`` and ``docs/results/NAME.md``.

    python benchmarks/training_curve.py mnist_curve --run-dir runs/mnist-5000 --train -- \\
        mnist run.generations=5000 run.test_interval=100 run.log_interval=50
    python benchmarks/training_curve.py mnist_curve --run-dir runs/mnist-5000 \\
        --generations 100,500,1000,2000,5000
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
from pathlib import Path

from results_table import RESULTS, write_results


def test_rows(run_dir: Path) -> list[dict]:
    """The run's test rows, one per generation (the last written wins, as after a resume)."""
    rows: dict[int, dict] = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("kind") == "test" and "seed" not in row:
            rows[row["generation"]] = row
    return [rows[g] for g in sorted(rows)]


def curve(run_dir: Path, generations: list[int] | None) -> list[dict]:
    """``{generation, test_mean, test_std, minutes}`` at ``generations`` (default: every
    test); a generation the run has not tested is left out."""
    rows = test_rows(run_dir)
    if generations:
        wanted = set(generations)
        rows = [r for r in rows if r["generation"] in wanted]
    return [
        {
            "generation": r["generation"],
            "test_mean": r["test_mean"],
            "test_std": r.get("test_std"),
            "minutes": r["wall_time"] / 60,
        }
        for r in rows
    ]


def table(rows: list[dict], every: list[dict] | None = None) -> str:
    """The ``rows`` shown; the best and the last test are taken from ``every`` test."""
    every = every or rows
    head = "| generation | " + " | ".join(str(r["generation"]) for r in rows) + " |"
    rule = "|---|" + "---|" * len(rows)
    score = "| test score | " + " | ".join(f"{r['test_mean']:.4g}" for r in rows) + " |"
    minutes = "| wall time (min) | " + " | ".join(f"{r['minutes']:.1f}" for r in rows) + " |"
    best, last = max(every, key=lambda r: r["test_mean"]), every[-1]
    note = (
        f"Best test {best['test_mean']:.4g} at generation {best['generation']}; the last, "
        f"{last['test_mean']:.4g} at generation {last['generation']}."
    )
    return "\n".join([head, rule, score, minutes, "", note])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the table's name: benchmarks/results/NAME.md")
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--generations", help="comma-separated generations (default: every test)")
    parser.add_argument("--train", action="store_true", help="run `evolax train` first")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.train_args = argv[split + 1 :]  # after --: evolax train's arguments
    if args.train:
        resuming = (args.run_dir / "config.json").exists()
        command = [sys.executable, "-m", "evolax.cli", "train", "--no-progress"]
        if resuming:
            command += ["--resume", str(args.run_dir), *args.train_args]
        else:
            command += [*args.train_args, "--run-dir", str(args.run_dir)]
        returncode = subprocess.run(command).returncode
        if returncode:  # evolax train said why (and, if stopped, how to resume) in one line
            sys.exit(returncode)
    generations = [int(g) for g in args.generations.split(",")] if args.generations else None
    rows, every = curve(args.run_dir, generations), curve(args.run_dir, None)
    if not rows:
        sys.exit(f"{args.run_dir} has no tests at {args.generations or 'any generation'}")
    config = json.loads((args.run_dir / "config.json").read_text())
    out = RESULTS / f"{args.name}.json"
    show = functools.partial(table, every=every)
    write_results(out, "training_curve", rows, show, config=config, run_dir=str(args.run_dir))
    print(show(rows))


if __name__ == "__main__":
    main()
