"""Rebuild a run from its folder: the trainer its recorded configuration builds and the state
its checkpoints hold."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evolax.checkpoint import BEST, LATEST, CheckpointError, CheckpointStore
from evolax.config import build_trainer, complete, run_settings
from evolax.legacy import translate
from evolax.runner import CONFIG, initial_states
from evolax.trainer import Trainer, TrainState


def read_config(run_dir: str | Path) -> dict[str, Any]:
    """The configuration a run folder records, complete (a run recorded by evolax 0.1.0, one
    flat mapping, translated by :func:`~evolax.legacy.translate`)."""
    path = Path(run_dir) / CONFIG
    if not path.exists():
        raise ValueError(f"{run_dir} is not an evolax run folder (no {CONFIG})")
    config = translate(json.loads(path.read_text()))
    for folder in config.get("host", {}).get("import_paths", []):  # the user's own modules
        if folder not in sys.path:
            sys.path.insert(0, folder)
    missing = [s for s in ("algorithm", "policy", "task") if s not in config]
    if missing:
        raise ValueError(
            f"{path} does not record a configuration (no {missing}): the run was written by "
            "evolax.train without config=, so it cannot be rebuilt from its folder; pass "
            "config=evolax.config.resolve(...) with the trainer it builds, or restore the "
            "checkpoints with evolax.checkpoint.CheckpointStore and your own trainer"
        )
    return complete(config)


def load_run(
    run_dir: str | Path,
    which: str = "latest",
    check: Callable[[Trainer], None] | None = None,
) -> tuple[dict[str, Any], Trainer, TrainState, dict[str, Any]]:
    """Rebuild a run from its folder: ``(config, trainer, state, checkpoint metadata)``, the
    metadata's ``"checkpoint"`` saying which was loaded (``"best"`` or ``"latest"``); the
    state of a run of several seeds has a leading seed axis (``run.seeds`` of them).

    Args:
        run_dir: a folder written by :func:`evolax.train`.
        which: ``"latest"`` (newest good checkpoint) or ``"best"`` (best test score; the
            latest when the run has no best checkpoint yet).
        check: called with the trainer before any state is made or read (a command's
            checks of what it needs, before it works).
    """
    if which not in ("latest", "best"):
        raise ValueError(f"which must be 'latest' or 'best', got {which!r}")
    path = Path(run_dir)
    config = read_config(path)
    trainer = build_trainer(config)
    if check is not None:
        check(trainer)
    run = run_settings(config)
    store = CheckpointStore(path, keep=run.keep_checkpoints)
    like = initial_states(trainer, run.seed_list)
    try:
        if which == "best" and store.steps(BEST):
            try:
                state, meta = store.restore(like=like, which=BEST)
                return config, trainer, state, {**meta, "checkpoint": "best"}
            except CheckpointError as error:  # the latest checkpoints may still be intact
                if not store.steps(LATEST):
                    raise
                warnings.warn(f"{error}; using the latest checkpoint instead", stacklevel=2)
        state, meta = store.restore(like=like, which=LATEST)
    finally:
        store.close()
    return config, trainer, state, {**meta, "checkpoint": "latest"}


__all__ = ["load_run", "read_config"]
