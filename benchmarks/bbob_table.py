"""Every registered algorithm on the 24 BBOB functions: COCO's measures, the table the docs quote.

Each algorithm runs as `evolax bench bbob` runs it (its defaults for the benchmark: pop_size
4 + 3 ln d rounded up to even, init_std 2, x0 uniform in [-4, 4]^d, plus the few overrides in
`SETTINGS` an algorithm needs to run at all), at d = 10, instance 1, 5 seeds, 1000 d
evaluations per run. Every algorithm's runs are one compiled program (`evolax.coco.bbob_runs`).

Writes, into benchmarks/results:
- `bbob_runs/NAME.npz`: one algorithm's precision curves, kept, so a later run (or a run
  interrupted) only computes the algorithms it lacks;
- `bbob_full.json`, `bbob_full.md`, `bbob_full_ecdf.png`: COCO's report of all of them (ERT per
  function, ECDF);
- `bbob.md`: the summary the docs include (in docs/results), ranked by ECDF area.

    python benchmarks/bbob_table.py                    # every algorithm (about an hour)
    python benchmarks/bbob_table.py cma_es open_es     # some, added to the kept ones
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evolax.algorithms import REGISTRY
from evolax.cli import bench_algorithms
from evolax.coco import BBOBRuns, bbob_runs, report_tables, write_report
from results_table import RESULTS, write_table

DIM, SEEDS, BUDGET = 10, 5, 1000.0
FUNCTIONS = tuple(range(1, 25))

SETTINGS: dict[str, list[str]] = {
    "code": ["code.pop_size=18"],  # three trials for each of 6 members (rand/2 needs 5 others)
    # the paper's c_sigma = 2 pop / d is 2 at d = 10; CMA-ES's (mu_eff + 2) / (d + mu_eff + 5)
    "lm_ma_es": ["lm_ma_es.c_sigma=0.3"],
    "sv_open_es": ["sv_open_es.pop_size=12"],  # antithetic pairs within each of 2 particles
}
"""Overrides an algorithm needs at the benchmark's defaults."""


EXCLUDED = {"map_elites": "it needs behaviour descriptors, which BBOB has not"}


def benchmarked() -> list[str]:
    """The registered algorithms, but those in ``EXCLUDED``."""
    return [name for name in REGISTRY if name not in EXCLUDED]


def run(name: str) -> BBOBRuns:
    """``name``'s runs, from ``bbob_runs/NAME.npz`` when an earlier run of the same benchmark
    kept them."""
    kept = RESULTS / "bbob_runs" / f"{name}.npz"
    algorithm = bench_algorithms([name, *SETTINGS.get(name, [])], DIM)[name]
    if kept.exists():
        saved = np.load(kept)
        if saved["config"].tolist() == [DIM, SEEDS, BUDGET, algorithm.pop_size]:
            return BBOBRuns(saved["precision"], FUNCTIONS, (1,), SEEDS, DIM, algorithm.pop_size)
    start = time.perf_counter()
    runs = bbob_runs(algorithm, DIM, functions=FUNCTIONS, seeds=SEEDS, budget=BUDGET)
    print(f"{name}: {time.perf_counter() - start:.0f} s", flush=True)
    kept.parent.mkdir(parents=True, exist_ok=True)
    config = np.array([DIM, SEEDS, BUDGET, algorithm.pop_size])
    np.savez(kept, precision=runs.precision, config=config)
    return runs


def summary(tables: dict) -> str:
    """The summary rows, best ECDF area first."""
    rows = sorted(tables["summary"], key=lambda row: -row["ecdf_area"])
    lines = [
        f"| algorithm | pop | targets reached | ECDF area | functions solved to "
        f"{tables['target']:.0e} |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['algorithm']} | {row['pop_size']} | {100 * row['targets_reached']:.1f}% | "
            f"{row['ecdf_area']:.3f} | {row['solved']} / {len(tables['functions'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="algorithms to (re)run; default: all")
    names = parser.parse_args().names or benchmarked()
    failed = {}
    for name in names:
        try:
            run(name)
        except ValueError as error:  # one algorithm's settings; the others still run
            failed[name] = str(error)
            print(f"{name}: failed: {error}", flush=True)
    kept = sorted(p.stem for p in (RESULTS / "bbob_runs").glob("*.npz") if p.stem in REGISTRY)
    results = {name: run(name) for name in kept}
    write_report(results, RESULTS, name="bbob_full")
    where = write_table(RESULTS / "bbob.md", summary(report_tables(results)))
    print(f"wrote {where} and {RESULTS}/bbob_full.json, .md, _ecdf.png ({len(results)} algorithms)")
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)} (see above)")


if __name__ == "__main__":
    main()
