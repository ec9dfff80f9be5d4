"""Benchmark results: rows kept across runs, written as JSON and as the Markdown the docs quote."""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def previous_rows(path: Path) -> list[dict]:
    """The rows of an earlier run of the benchmark (none if absent or unreadable)."""
    try:
        return json.loads(path.read_text())["rows"]
    except (OSError, ValueError, KeyError):
        return []


def write_results(out: Path, benchmark: str, rows: list[dict], table: Callable[[list[dict]], str]):
    """``out`` (JSON: the rows, the machine) and ``out`` with ``.md`` (``table(rows)``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "benchmark": benchmark,
        "rows": rows,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "python": sys.version.split()[0],
    }
    out.write_text(json.dumps(result, indent=2))
    out.with_suffix(".md").write_text(table(rows) + "\n")
