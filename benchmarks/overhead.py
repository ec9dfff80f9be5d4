"""What logging and checkpointing cost: the same cart-pole run with and without them.

Both runs use the CLI's defaults (log every 10 generations, test every 100, checkpoint every
100, keep 3 + best) on the population mesh the CLI would use; the bare run writes nothing
(no progress bar, no metrics file, no checkpoints) but still tests. Writes the two wall times
to `benchmarks/results/overhead.json` and `docs/results/overhead.md` (the table docs/results.md
includes) and prints the instrumented run's own time split.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from evolax.sharding import population_mesh, request_cpu_devices
from results_table import RESULTS, write_results

#: The table's name of each run.
RUNS = {"bare": "bare", "logged": "progress bar + metrics + checkpoints"}


def table(rows: list[dict]) -> str:
    """Each run's wall time; the instrumented run's also as a change from the bare run's."""
    bare = rows[0]["wall_s"]
    lines = ["| run | wall time |", "|---|---|"]
    for row in rows:
        change = "" if row["run"] == "bare" else f" ({100 * (row['wall_s'] / bare - 1):+.1f}%)"
        lines.append(f"| {RUNS[row['run']]} | {row['wall_s']:.1f} s{change} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=300)
    parser.add_argument("--out", type=Path, default=RESULTS / "overhead.json")
    args = parser.parse_args()
    request_cpu_devices(os.cpu_count() or 1)

    from evolax.config import build_trainer, resolve
    from evolax.runner import train

    config = resolve("cartpole_easy", [f"run.generations={args.generations}"])
    trainer = build_trainer(config, population_mesh())
    common = dict(seed=0, log_interval=10, test_interval=100, checkpoint_interval=100)
    train(trainer, 10, progress=False, **common)  # compile the chunk and test programs once

    results = {}
    for name in ("bare", "logged", "bare", "logged"):  # alternate, keep the second round
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = Path(tmp) / "run" if name == "logged" else None
            start = time.perf_counter()
            result = train(
                trainer,
                args.generations,
                run_dir=run_dir,
                progress=name == "logged",
                config=config,
                **common,
            )
            results[name] = {"wall_s": time.perf_counter() - start, **result.summary}
    overhead = results["logged"]["wall_s"] / results["bare"]["wall_s"] - 1
    rows = [{"run": name, **results[name]} for name in ("bare", "logged")]
    write_results(
        args.out, "overhead", rows, table, generations=args.generations, overhead=overhead
    )
    print(table(rows))
    logged = results["logged"]
    print(
        f"bare {results['bare']['wall_s']:.1f} s, logged+checkpointed {logged['wall_s']:.1f} s: "
        f"overhead {100 * overhead:+.1f}% (instrumented run: checkpoints "
        f"{logged['checkpoint_s']:.2f} s, logging {logged['log_s']:.2f} s, "
        f"tests {logged['test_s']:.1f} s, run {logged['run_s']:.1f} s)"
    )


if __name__ == "__main__":
    main()
