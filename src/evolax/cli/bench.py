"""``evolax bench``: benchmark algorithms on the BBOB functions with COCO's measures."""

from __future__ import annotations

import argparse
import time
from typing import Any


def bench_algorithms(settings: list[str], dim: int) -> dict[str, Any]:
    """The algorithms ``evolax bench bbob`` runs: ``settings`` are algorithm names, then
    ``ALGO.FIELD=VALUE`` overrides of the benchmark's defaults (``pop_size`` 4 + 3 ln ``dim``
    rounded up to even, ``init_std`` 2)."""
    from evolax import schema
    from evolax.algorithms import REGISTRY
    from evolax.algorithms.cma.cma_family import default_pop_size
    from evolax.config import REGISTRIES, override

    names = [a for a in settings if "=" not in a]
    if not names:
        raise ValueError(f"name at least one algorithm to benchmark ({', '.join(REGISTRY)})")
    if len(set(names)) < len(names):
        raise ValueError(f"each algorithm once, got {names}")
    pop = default_pop_size(dim) + default_pop_size(dim) % 2
    specs: dict[str, Any] = {}
    for name in names:
        target, _ = schema.find(name, REGISTRY, "algorithm")
        fields = {f.name for f in schema.fields(target)}
        specs[name] = {"name": name, "pop_size": pop}
        if "init_std" in fields:
            specs[name]["init_std"] = 2.0
    for assignment in [a for a in settings if "=" in a]:
        label = assignment.partition(".")[0]
        if label not in specs:
            raise ValueError(f"{assignment}: {label} is not one of the algorithms given {names}")
        specs = override(specs, assignment)
    return {name: schema.build(spec, REGISTRY, REGISTRIES, name) for name, spec in specs.items()}


def command(args: argparse.Namespace) -> int:
    """Benchmark the algorithms ``args`` name and write the report; the exit status."""
    from evolax.coco import bbob_runs, write_report

    algorithms = bench_algorithms(args.settings, args.dim)
    results = {}
    for name, algorithm in algorithms.items():
        start = time.perf_counter()
        results[name] = bbob_runs(
            algorithm,
            args.dim,
            functions=args.functions,
            instances=args.instances,
            seeds=args.seeds,
            budget=args.budget,
        )
        print(f"{name}: {time.perf_counter() - start:.1f} s", flush=True)
    write_report(results, args.out, target=args.target)
    print(f"wrote {args.out}/bbob.json, bbob.md and bbob_ecdf.png")
    return 0
