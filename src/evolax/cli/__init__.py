"""The ``evolax`` command line: train, eval, plot, render, bench, configs, describe.

:mod:`~evolax.cli.parser` holds the argument parser (the flags and the fields they set),
:mod:`~evolax.cli.common` what the subcommands share, and each subcommand is a module of its
own (:mod:`~evolax.cli.train`, ...) whose ``command(args)`` runs it; :func:`main` dispatches.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence

from evolax.cli import bench, configs, describe, plot, render, train
from evolax.cli import eval as eval_
from evolax.cli.bench import bench_algorithms
from evolax.cli.common import EVAL_STREAM, fail, one_line_warning, print_if
from evolax.cli.parser import SHORTHANDS, parse_args

__all__ = ["EVAL_STREAM", "SHORTHANDS", "bench_algorithms", "main", "parse_args", "print_if"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``evolax`` command."""
    args = parse_args(argv)
    commands = {
        "train": train.command,
        "eval": eval_.command,
        "render": render.command,
        "plot": plot.command,
        "bench": bench.command,
        "configs": configs.command,
        "describe": describe.command,
    }
    formatwarning, warnings.formatwarning = warnings.formatwarning, one_line_warning
    try:
        return commands[args.command](args)
    except KeyboardInterrupt as interrupt:  # a stopped `train` says where to resume
        print(f"evolax {args.command}: {interrupt or 'interrupted'}", file=sys.stderr)
        return 130
    except Exception as error:
        if args.debug:
            raise
        return fail(args.command, error)
    finally:
        warnings.formatwarning = formatwarning
