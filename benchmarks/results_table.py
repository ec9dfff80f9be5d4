"""Benchmark results: rows kept across runs, written as JSON and as the tables the docs include.

The JSON goes to ``benchmarks/results`` (not committed); the table, with a caption naming the
machine, the date and the command, to ``docs/results/NAME.md`` (committed), which the pages
include (``--8<-- "docs/results/NAME.md"``): a run replaces the figures the docs show.
``EVOLAX_BENCHMARK_RESULTS`` sends both to a folder of its own (``accelerator.sh`` does, so that
its runs do not replace the CPU tables).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

_OWN_FOLDER = os.environ.get("EVOLAX_BENCHMARK_RESULTS")
RESULTS = Path(_OWN_FOLDER or Path(__file__).parent / "results")
TABLES = Path(_OWN_FOLDER or Path(__file__).resolve().parents[1] / "docs" / "results")


def machine() -> str:
    """The CPU's model and core count, and the accelerator JAX uses, if any."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line for line in info if line.startswith("model name")).split(":")[1]
    except (OSError, StopIteration):
        pass
    where = f"{os.cpu_count()} cores of an {cpu.strip()}"
    jax = sys.modules.get("jax")
    if jax is not None and jax.default_backend() != "cpu":
        where = f"{jax.devices()[0].device_kind}, {where}"
    return where


def caption() -> str:
    """The line under a table: where and when it was measured, and the command that did."""
    command = shlex.join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])
    return f"_Measured on {machine()}, {datetime.date.today()}. Reproduce: `{command}`._"


def write_table(path: Path, markdown: str) -> Path:
    """``markdown`` and its :func:`caption` to ``path``, or to ``docs/results`` where ``path``
    is in ``benchmarks/results`` (the default place); returns where it went."""
    if path.parent.resolve() == RESULTS.resolve():
        path = TABLES / path.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown.rstrip() + "\n\n" + caption() + "\n")
    return path


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
    and ``table(rows)``, the Markdown the docs include (:func:`write_table` of ``out`` with
    ``.md``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "benchmark": benchmark,
        "rows": rows,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "python": sys.version.split()[0],
        **extra,
    }
    out.write_text(json.dumps(jsonable(result), indent=2))
    write_table(out.with_suffix(".md"), table(rows))


def load_note(rows: list[dict]) -> str:
    """ "Shared, loaded" and the load averages the rows recorded, where above the core count."""
    loads = [r["load"] for r in rows if "load" in r]
    if not loads or max(loads) <= (os.cpu_count() or 1):
        return ""
    return (
        f"\n\nShared, loaded machine: 1-minute load average {min(loads):.0f} to "
        f"{max(loads):.0f} on {os.cpu_count()} cores as the rows finished."
    )
