"""``evolax plot``: a run's learning curves (and its front or archive) as PNGs."""

from __future__ import annotations

import argparse
from pathlib import Path


def command(args: argparse.Namespace) -> int:
    """Write ``args.run_dir``'s plots; the exit status."""
    from evolax.render import plot_learning_curves

    out = args.out or args.run_dir / "learning_curves.png"
    plot_learning_curves(args.run_dir / "metrics.jsonl", out)
    print(f"wrote {out}")
    front = args.run_dir / "pareto_front.json"  # a multi-objective run's last population
    if front.exists():
        from evolax.render import plot_pareto_front

        print(f"wrote {plot_pareto_front(front, Path(out).with_name('pareto_front.png'))}")
    archive = args.run_dir / "archive.json"  # a quality-diversity run's elites
    if archive.exists():
        from evolax.render import plot_archive

        print(f"wrote {plot_archive(archive, Path(out).with_name('archive.png'))}")
    return 0
