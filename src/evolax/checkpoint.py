"""Checkpoints of a whole :class:`~evolax.trainer.TrainState`: atomic, verified, exact.

A :class:`CheckpointStore` keeps the last ``keep`` checkpoints in ``RUN_DIR/checkpoints`` and the
best-scoring one in ``RUN_DIR/best``, through orbax's ``CheckpointManager`` (which writes each
checkpoint to a temporary folder and renames it into place once complete, so a crash mid-write
never leaves a half-written checkpoint under a step's name). Each checkpoint also records a
SHA-256 of its arrays and a fingerprint of the state's structure: on restore, a checkpoint that
fails to read or to verify is moved to ``RUN_DIR/corrupt/`` (never deleted) with a warning, and
the previous good one is used.

Every array of a training state is replicated (see :mod:`evolax.sharding`), so in a
multi-process run process 0 alone saves and restores, and broadcasts a restored state to the
others: no shared file system is needed.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from evolax.sharding import to_host
from evolax.trainer import TrainState

LATEST, BEST, CORRUPT = "checkpoints", "best", "corrupt"
PARTIAL = ".orbax-checkpoint-tmp"  # orbax's suffix of a checkpoint still being written


class CheckpointError(RuntimeError):
    """No usable checkpoint (none saved, or every one failed to restore)."""


@contextlib.contextmanager
def _quiet_absl() -> Iterator[None]:
    """Silence orbax's log lines about a file it cannot parse: the warning that the
    checkpoint is unreadable says it once, with the reason."""
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _ignore_closed_event_loops() -> None:
    """Drop the "Event loop is closed" errors that reads still in flight report when orbax
    gives up on a corrupt checkpoint (they would print a traceback each, long after the
    failure has been handled); every other unraisable error is reported as before."""
    hook = sys.unraisablehook
    if getattr(hook, "_evolax", False):
        return

    def filtered(unraisable: Any) -> None:
        error = unraisable.exc_value
        if isinstance(error, RuntimeError) and str(error) == "Event loop is closed":
            return
        hook(unraisable)

    filtered._evolax = True  # type: ignore[attr-defined]
    sys.unraisablehook = filtered


def flatten_state(state: TrainState) -> list[np.ndarray]:
    """The state's leaves as NumPy arrays (the PRNG key as its raw ``uint32`` data)."""
    return jax.tree.leaves(to_host(state.replace(key=jax.random.key_data(state.key))))  # type: ignore[attr-defined]


def unflatten_state(like: TrainState, leaves: list[np.ndarray]) -> TrainState:
    """Inverse of :func:`flatten_state`, with ``like`` giving the structure."""
    treedef = jax.tree.structure(like.replace(key=jax.random.key_data(like.key)))  # type: ignore[attr-defined]
    state = jax.tree.unflatten(treedef, leaves)
    return state.replace(key=jax.random.wrap_key_data(state.key))


def _digest(leaves: list[np.ndarray]) -> str:
    sha = hashlib.sha256()
    for leaf in leaves:
        sha.update(str((leaf.dtype.str, leaf.shape)).encode())
        sha.update(np.ascontiguousarray(leaf).tobytes())
    return sha.hexdigest()


def _structure(state: TrainState) -> str:
    template = state.replace(key=jax.random.key_data(state.key))  # type: ignore[attr-defined]
    shapes = [(np.dtype(x.dtype).str, tuple(x.shape)) for x in jax.tree.leaves(template)]
    return hashlib.sha256(str((jax.tree.structure(template), shapes)).encode()).hexdigest()


class CheckpointStore:
    """Saves and restores training states under a run folder.

    Args:
        run_dir: the run folder; checkpoints go to ``run_dir/checkpoints`` and ``run_dir/best``.
        keep: how many of the most recent checkpoints to keep (the best is kept apart).
    """

    def __init__(self, run_dir: str | Path, keep: int = 3):
        if keep < 1:
            raise ValueError(f"keep must be at least 1, got {keep}")
        self.run_dir = Path(run_dir).absolute()
        for folder in (LATEST, BEST):
            (self.run_dir / folder).mkdir(parents=True, exist_ok=True)
        options = dict(
            create=False,
            enable_async_checkpointing=False,
            # Only the calling process writes (the state is replicated): no cross-process barriers.
            multiprocessing_options=ocp.options.MultiprocessingOptions(
                primary_host=jax.process_index(), active_processes={jax.process_index()}
            ),
        )
        self._latest = ocp.CheckpointManager(
            self.run_dir / LATEST, options=ocp.CheckpointManagerOptions(max_to_keep=keep, **options)
        )
        self._best = ocp.CheckpointManager(
            self.run_dir / BEST, options=ocp.CheckpointManagerOptions(max_to_keep=1, **options)
        )

    def save(
        self, state: TrainState, metadata: dict[str, Any], latest: bool = True, best: bool = False
    ) -> None:
        """Save ``state`` under its generation: among the latest and/or as the best one."""
        leaves = flatten_state(state)
        step = int(np.max(to_host(state.generation)))  # the seeds of a batch share it
        meta = {
            **metadata,
            "generation": step,
            "sha256": _digest(leaves),
            "structure": _structure(state),
            "saved_at": time.time(),
        }
        arrays = {f"{i:05d}": leaf for i, leaf in enumerate(leaves)}
        for manager, wanted in ((self._latest, latest), (self._best, best)):
            if not wanted:
                continue
            if step in manager.all_steps():  # a resumed run re-reaching a saved generation
                manager.delete(step)
            manager.save(
                step,
                args=ocp.args.Composite(
                    state=ocp.args.StandardSave(arrays), meta=ocp.args.JsonSave(meta)
                ),
            )
            manager.wait_until_finished()

    def steps(self, which: str = LATEST) -> list[int]:
        """Saved generations, oldest first, in ``"checkpoints"`` or ``"best"``."""
        return sorted(self._manager(which).all_steps())

    def metadata(self, which: str = LATEST) -> dict[str, Any]:
        """The metadata of the newest checkpoint whose metadata reads (its arrays are not
        read, nor verified); ``{}`` where none does."""
        manager = self._manager(which)
        for step in sorted(manager.all_steps(), reverse=True):
            try:
                with _quiet_absl():
                    restored = manager.restore(
                        step, args=ocp.args.Composite(meta=ocp.args.JsonRestore())
                    )
                return dict(restored["meta"])
            except Exception:  # unreadable: restore() reports it and takes an older one
                continue
        return {}

    def restore(self, like: TrainState, which: str = LATEST) -> tuple[TrainState, dict[str, Any]]:
        """The newest checkpoint that reads back and verifies, and its metadata.

        Args:
            like: a state of the same structure (e.g. ``trainer.init(key)``) to restore into.
            which: ``"checkpoints"`` (latest) or ``"best"``.
        """
        manager = self._manager(which)
        expected = _structure(like)
        problems = []
        _ignore_closed_event_loops()
        for step in sorted(manager.all_steps(), reverse=True):
            try:
                with _quiet_absl():
                    restored = manager.restore(
                        step,
                        args=ocp.args.Composite(
                            state=ocp.args.StandardRestore(), meta=ocp.args.JsonRestore()
                        ),
                    )
                meta = dict(restored["meta"])
                leaves = [np.asarray(restored["state"][k]) for k in sorted(restored["state"])]
                if _digest(leaves) != meta.get("sha256"):
                    raise ValueError("its arrays do not match the recorded SHA-256")
            except Exception as error:  # unreadable: orbax/tensorstore errors or a bad digest
                problems.append(self._quarantine(manager, which, step, error))
                continue
            if meta.get("structure") != expected:  # intact, but not this run's: never skip it
                raise CheckpointError(
                    f"checkpoint {self.run_dir / which / str(step)} holds a differently shaped "
                    "training state (another configuration?)"
                )
            return unflatten_state(like, leaves), meta
        detail = "; ".join(problems) if problems else "none saved"
        raise CheckpointError(f"no usable checkpoint in {self.run_dir / which}: {detail}")

    def _manager(self, which: str) -> ocp.CheckpointManager:
        if which not in (LATEST, BEST):
            raise ValueError(f"which must be {LATEST!r} or {BEST!r}, got {which!r}")
        return self._latest if which == LATEST else self._best

    def _quarantine(self, manager, which: str, step: int, error: Exception) -> str:
        source = self.run_dir / which / str(step)
        target = self.run_dir / CORRUPT / f"{which}-{step}-{time.strftime('%Y%m%d-%H%M%S')}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(source), str(target))
        with _quiet_absl():
            manager.reload()
        reason = f"{type(error).__name__}: {error}"
        message = f"checkpoint {source} is unreadable ({reason}); moved to {target}"
        older = [s for s in manager.all_steps() if s < step]
        then = "trying the previous one" if older else f"no older checkpoint in {which}/"
        warnings.warn(f"{message}; {then}", stacklevel=3)
        return message

    def remove_partial(self) -> list[Path]:
        """Delete the checkpoints whose writing never finished (orbax's temporary folders,
        left by a run that died or was stopped mid-save); the paths removed. Only the run
        folder's writer (the holder of its :class:`~evolax.runlock.RunLock`) may call it: a
        live writer's temporary folder is its checkpoint in the making."""
        removed = []
        for folder in (LATEST, BEST):
            for partial in sorted((self.run_dir / folder).glob(f"*{PARTIAL}*")):
                shutil.rmtree(partial, ignore_errors=True)
                removed.append(partial)
        return removed

    def close(self) -> None:
        self._latest.close()
        self._best.close()
