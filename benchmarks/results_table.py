"""Benchmark results: rows kept across runs, written as JSON and as the Markdown the docs quote."""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path

# where results go: benchmarks/results, or EVOLAX_BENCHMARK_RESULTS (accelerator.sh sends its
# runs to a folder of their own, so they do not replace the CPU tables the docs quote)
RESULTS = Path(os.environ.get("EVOLAX_BENCHMARK_RESULTS") or Path(__file__).parent / "results")


def millions(steps: float | None) -> str:
    """A step count as ``1.23M``; ``None`` or ``inf`` (never reached) as ``never``."""
    return "never" if steps is None or steps == float("inf") else f"{steps / 1e6:.2f}M"


def previous_rows(path: Path) -> list[dict]:
    """The rows of an earlier run of the benchmark (none if absent or unreadable)."""
    try:
        return json.loads(path.read_text())["rows"]
    except (OSError, ValueError, KeyError):
        return []


def jsonable(value):
    """``value`` with non-finite floats (failed runs, their ratios) as ``None``: strict JSON."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return None if isinstance(value, float) and not math.isfinite(value) else value


def write_results(
    out: Path,
    benchmark: str,
    rows: list[dict],
    table: Callable[[list[dict]], str],
    **extra,
):
    """``out`` (JSON: the rows, the machine, and ``extra``'s entries, such as the configuration)
    and ``out`` with ``.md`` (``table(rows)``, the Markdown the docs quote)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "benchmark": benchmark,
        "rows": rows,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "python": sys.version.split()[0],
        **extra,
    }
    out.write_text(json.dumps(jsonable(result), indent=2))
    out.with_suffix(".md").write_text(table(rows) + "\n")
