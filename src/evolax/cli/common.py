"""What the subcommands share: one-line errors and warnings, output, run folder checks."""

from __future__ import annotations

import os
import sys
from pathlib import Path

EVAL_STREAM = 2  # key stream of `evolax eval` / `render` episodes (training uses 0, tests 1)


def print_if(condition: bool, text: str) -> None:
    if condition:
        print(text, flush=True)


def fail(command: str, error: Exception) -> int:
    """Print ``error`` as one line; errors a user causes (flags, files, data, installs) carry
    their whole story in the message, anything else also names its type."""
    from evolax.checkpoint import CheckpointError

    message = " ".join(str(error).split()) or type(error).__name__
    if not isinstance(error, (ValueError, OSError, ImportError, CheckpointError)):
        message = f"{type(error).__name__}: {message} (--debug shows the traceback)"
    print(f"evolax {command}: error: {message}", file=sys.stderr)
    return 2


def over_episodes(n: int, task: object) -> str:
    """What a test of ``n`` episodes on ``task`` scored: a whole test set (MNIST's, every
    episode the same batch) is named as such, not counted in episodes."""
    from evolax.tasks import MNIST

    if isinstance(task, MNIST) and task.test:
        return f"on the test set ({task.batch_size} images)"
    return f"over {n} episode{'' if n == 1 else 's'}"


def one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"evolax: warning: {' '.join(str(message).split())}\n"


def check_run_dir(run_dir: Path) -> None:
    """A run folder that can be made and written, before any work starts."""
    if run_dir.exists() and not run_dir.is_dir():
        raise ValueError(f"--run-dir {run_dir} is a file, expected a folder for the run")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"--run-dir {run_dir} cannot be made: {error.strerror}") from None
    if not os.access(run_dir, os.W_OK | os.X_OK):
        raise ValueError(f"--run-dir {run_dir} is not writable")
