"""Several algorithms' BBOB runs as tables (JSON and Markdown) and an ECDF plot."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from evolax.coco.measures import TARGETS, ecdf, expected_running_time, hitting_evaluations
from evolax.coco.run import BBOBRuns
from evolax.problems.bbob import BBOB_FUNCTION_NAMES

STEPS_PER_DECADE = 10
"""Budgets at which the ECDF is read: ten per decade of evaluations per dimension."""


def _budgets(runs: BBOBRuns) -> np.ndarray:
    """Evaluation budgets ``dim * 10^(k / 10)`` from ``dim`` up to the runs' budget."""
    decades = math.log10(runs.budget / runs.dim)
    steps = np.arange(0, math.floor(decades * STEPS_PER_DECADE) + 1) / STEPS_PER_DECADE
    return runs.dim * 10.0**steps


def report_tables(results: Mapping[str, BBOBRuns], target: float = 1e-8) -> dict[str, Any]:
    """The measures of each algorithm's runs, as plain data.

    Args:
        results: algorithm label -> its runs (same functions, dimension and runs each).
        target: the precision of the ERT table.
    Returns:
        ``{"dim", "runs", "target", "summary": [row per algorithm], "ert": {label:
        {function id: {"ert_per_dim", "successes"}}}, "ecdf": {label: {"budgets", "fraction"}}}``.
        ``summary`` rows hold ``pop_size``, ``budget_per_dim``, ``targets_reached`` (the
        fraction of (function, run, target) triples reached within the budget, over
        :data:`TARGETS`), ``ecdf_area`` (the mean of the ECDF over log-spaced budgets from
        ``dim`` evaluations up: higher is faster) and ``solved`` (functions whose every run
        reached ``target``).
    """
    if not results:
        raise ValueError("results must hold at least one algorithm's runs")
    first = next(iter(results.values()))
    summary, ert, curves = [], {}, {}
    for label, runs in results.items():
        if (runs.functions, runs.dim, runs.precision.shape[1]) != (
            first.functions,
            first.dim,
            first.precision.shape[1],
        ):
            raise ValueError(f"results[{label!r}] ran other functions, dimension or runs")
        hits = hitting_evaluations(runs.precision, runs.evaluations)  # [F, R, T]
        budgets = _budgets(runs)
        fraction = ecdf(hits, budgets)
        at_target = hitting_evaluations(runs.precision, runs.evaluations, np.array([target]))
        successes = np.sum(np.isfinite(at_target[..., 0]), axis=1)  # [F]
        times = expected_running_time(np.moveaxis(at_target[..., 0], 1, 0), runs.budget)
        ert[label] = {
            f: {
                "ert_per_dim": float(t / runs.dim) if np.isfinite(t) else None,
                "successes": int(n),
            }
            for f, t, n in zip(runs.functions, times, successes, strict=True)
        }
        summary.append(
            {
                "algorithm": label,
                "pop_size": runs.pop_size,
                "budget_per_dim": runs.budget / runs.dim,
                "targets_reached": float(np.mean(np.isfinite(hits))),
                "ecdf_area": float(np.mean(fraction)),
                "solved": int(np.sum(successes == runs.precision.shape[1])),
            }
        )
        curves[label] = {"budgets": budgets.tolist(), "fraction": fraction.tolist()}
    return {
        "dim": first.dim,
        "functions": list(first.functions),
        "runs": int(first.precision.shape[1]),
        "target": target,
        "summary": summary,
        "ert": ert,
        "ecdf": curves,
    }


def markdown(tables: Mapping[str, Any]) -> str:
    """The summary table, then ERT / dim to the target per function (with successes)."""
    runs, labels = tables["runs"], [row["algorithm"] for row in tables["summary"]]
    lines = [
        "| algorithm | pop | budget / dim | targets reached | ECDF area | solved |",
        "|---|---|---|---|---|---|",
    ]
    for row in tables["summary"]:
        lines.append(
            f"| {row['algorithm']} | {row['pop_size']} | {row['budget_per_dim']:.0f} | "
            f"{100 * row['targets_reached']:.1f}% | {row['ecdf_area']:.3f} | "
            f"{row['solved']} / {len(tables['functions'])} |"
        )
    lines += [
        "",
        f"ERT / dim to precision {tables['target']:.0e} (runs that reached it, of {runs}):",
        "",
        "| function | " + " | ".join(labels) + " |",
        "|---|" + "---|" * len(labels),
    ]
    for f in tables["functions"]:
        cells = []
        for label in labels:
            entry = tables["ert"][label][f]
            value = entry["ert_per_dim"]
            shown = "-" if value is None else f"{value:.3g}"
            cells.append(f"{shown} ({entry['successes']})")
        name = BBOB_FUNCTION_NAMES[f].replace("|", "\\|")
        lines.append(f"| f{f} {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_report(
    results: Mapping[str, BBOBRuns], out: str | Path, name: str = "bbob", target: float = 1e-8
) -> dict[str, Any]:
    """Write ``NAME.json``, ``NAME.md`` and ``NAME_ecdf.png`` (the ECDF of every algorithm
    against ``log10(evaluations / dim)``) into the folder ``out``; return the tables."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    tables = report_tables(results, target)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(tables, indent=1) + "\n")
    (out / f"{name}.md").write_text(markdown(tables))
    columns = 1 + (len(tables["ecdf"]) - 1) // 18  # legend columns beside the axes
    figure = Figure(figsize=(7 + 1.8 * columns, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for k, (label, curve) in enumerate(tables["ecdf"].items()):
        style = ("-", "--", ":", "-.")[k // 10 % 4]  # ten colours, then the next line style
        axes.step(np.log10(np.array(curve["budgets"]) / tables["dim"]), curve["fraction"],
                  where="post", label=label, linestyle=style)  # fmt: skip
    axes.set_xlabel("log10(evaluations / dim)")
    axes.set_ylabel(f"fraction of {len(TARGETS)} targets x functions x runs")
    axes.set_ylim(0, 1)
    axes.set_title(f"BBOB, {len(tables['functions'])} functions, d = {tables['dim']}")
    axes.grid(alpha=0.3)
    axes.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1), ncol=columns)
    figure.savefig(out / f"{name}_ecdf.png", bbox_inches="tight")
    return tables
