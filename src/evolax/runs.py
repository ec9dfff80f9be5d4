"""Rebuild a run from its folder: the trainer its recorded configuration builds and the state
its checkpoints hold."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from evolax.checkpoint import BEST, LATEST, CheckpointError, CheckpointStore
from evolax.config import build_trainer
from evolax.runner import initial_states, read_config, run_seeds
from evolax.trainer import Trainer, TrainState


def load_run(
    run_dir: str | Path, which: str = "latest"
) -> tuple[dict[str, Any], Trainer, TrainState, dict[str, Any]]:
    """Rebuild a run from its folder: ``(config, trainer, state, checkpoint metadata)``, the
    metadata's ``"checkpoint"`` saying which was loaded (``"best"`` or ``"latest"``); the
    state of a run of several seeds has a leading seed axis (:func:`~evolax.runner.run_seeds`).

    Args:
        run_dir: a folder written by :func:`evolax.train`.
        which: ``"latest"`` (newest good checkpoint) or ``"best"`` (best test score; the
            latest when the run has no best checkpoint yet).
    """
    if which not in ("latest", "best"):
        raise ValueError(f"which must be 'latest' or 'best', got {which!r}")
    path = Path(run_dir)
    config = read_config(path)
    trainer = build_trainer(config)
    store = CheckpointStore(path, keep=config["keep_checkpoints"])
    like = initial_states(trainer, run_seeds(config))
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


__all__ = ["load_run"]
