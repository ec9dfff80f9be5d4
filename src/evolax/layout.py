"""Where and how a population's evaluation runs, as a value: a :class:`Layout` (how many
devices, how many individuals each evaluates at once, and the :class:`EpisodeLoop` its
episodes step in) and the :class:`Choice` that picked it. A :class:`~evolax.trainer.Trainer`
is given a layout; :mod:`evolax.placement` chooses one."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

#: The episode loop's forms: stop once every episode has ended, a fixed-length scan, scanned
#: blocks with a test between them, or blocks of steps fused into one kernel launch.
FORMS = ("while", "scan", "chunked", "fused")


def _check_count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


@dataclasses.dataclass(frozen=True)
class EpisodeLoop:
    """The loop an evaluation's episodes step in; every form gives the same returns.

    - ``"while"``: a ``lax.while_loop`` of one step per iteration that stops once every
      episode has ended (or at ``task.max_steps``).
    - ``"scan"``: a ``lax.scan`` over all ``task.max_steps`` steps, those after an episode's
      end masked out: no test per step, ``unroll`` steps per iteration, and reverse-mode
      ``jax.grad`` goes through it (``fixed_length``).
    - ``"chunked"``: a ``lax.while_loop`` whose body scans ``block`` steps, testing after
      each block whether every episode has ended; steps past ``task.max_steps`` in the last
      block change nothing.
    - ``"fused"``: ``block`` steps per launch of a Pallas kernel
      (:func:`~evolax.rollout.fused.run_fused_episodes`), for the policies and tasks
      :func:`~evolax.rollout.fused.fused_supported` accepts; the returns equal the other
      forms' to float32 round-off. ``interpret`` runs the kernel as XLA operations (a CPU's
      only way: for tests); otherwise it compiles for a GPU.

    An accelerator runs a loop iteration per host-visible test: the scan and the chunked
    forms run few, and fuse steps. :mod:`evolax.placement` measures which is fastest.

    Attributes:
        form: ``"while"``, ``"scan"`` or ``"chunked"``.
        unroll: steps per iteration of the scan (``"scan"``, ``"chunked"``), positive; ``1``
            for ``"while"``.
        block: steps between tests (``"chunked"``), or per kernel launch (``"fused"``),
            positive; ``None`` otherwise.
        interpret: ``"fused"`` only: the kernel as XLA operations.
    """

    form: str = "while"
    unroll: int = 1
    block: int | None = None
    interpret: bool = False

    def __post_init__(self):
        if self.form not in FORMS:
            raise ValueError(
                f"form must be one of {', '.join(map(repr, FORMS))}, got {self.form!r}"
            )
        _check_count("unroll", self.unroll)
        if self.form == "while" and self.unroll != 1:
            raise ValueError(
                f"unroll must be 1 for form='while' (it steps once per iteration), got "
                f"{self.unroll!r}: take form='scan' or 'chunked' to unroll"
            )
        if self.form in ("chunked", "fused"):
            _check_count("block", self.block)
        elif self.block is not None:
            raise ValueError(
                f"block is for form='chunked' or 'fused' only, got block={self.block!r} with "
                f"form={self.form!r}"
            )
        if self.form == "fused" and self.unroll != 1:
            raise ValueError(f"unroll must be 1 for form='fused', got {self.unroll!r}")
        if self.interpret and self.form != "fused":
            raise ValueError(f"interpret is for form='fused' only, got form={self.form!r}")

    @classmethod
    def read(cls, record: Mapping[str, Any] | None) -> EpisodeLoop:
        """The loop a record (:func:`dataclasses.asdict`'s mapping) describes; ``None`` (a
        record made before loops were recorded): the while loop."""
        return cls() if record is None else cls(**record)


def loop_for(loop: EpisodeLoop | None, fixed_length: bool = False) -> EpisodeLoop:
    """The loop an evaluation runs: ``loop`` (``None``: the while loop), or with
    ``fixed_length`` the scan (``loop``'s unroll where it is a scan already)."""
    loop = EpisodeLoop() if loop is None else loop
    if fixed_length and loop.form != "scan":
        return EpisodeLoop("scan")
    return loop


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where, in which groups and in which loop a population is evaluated.

    Attributes:
        devices: devices sharing the evaluation (``1``: no sharding).
        pop_chunk: individuals evaluated at once on each device.
        loop: the loop the episodes step in (default: the while loop).
    """

    devices: int
    pop_chunk: int
    loop: EpisodeLoop = EpisodeLoop()

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> Layout:
        """The layout a record (:func:`dataclasses.asdict`'s mapping, as a run folder holds
        it) describes; one without a ``loop`` (older runs) means the while loop."""
        loop = EpisodeLoop.read(record.get("loop"))
        return cls(int(record["devices"]), int(record["pop_chunk"]), loop)


@dataclasses.dataclass(frozen=True)
class Choice:
    """The layout :func:`choose` picked and what it cost to pick.

    Attributes:
        layout: the fastest layout measured.
        seconds: its estimated evaluation time per generation.
        tuning_seconds: wall time spent compiling and timing candidates.
        timings: every candidate measured, with its estimated time per generation.
        source: ``"measured"``, ``"cost model"`` (its start, where measuring costs too
            much), ``"cache"`` (an earlier process's choice), ``"unmeasured"`` (the most
            devices, whole shares) or ``"explicit"`` (set by the user).
    """

    layout: Layout
    seconds: float
    tuning_seconds: float
    timings: tuple[tuple[Layout, float], ...]
    source: str = "measured"
