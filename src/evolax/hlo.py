"""Kernels in a compiled program: what a generation costs in launches, read from XLA's HLO.

On a GPU each top-level operation of a compiled program is a kernel launch (or a memory copy
the driver schedules like one), and a small generation is bound by their number, not by its
arithmetic. :func:`kernel_count` reads the optimised HLO of a compiled program
(``jax.jit(fn).lower(...).compile()``) and counts the operations that launch:

- counted: the top-level instructions of the entry computation that do work, each once:
  fusions (XLA's merged element-wise, reduction and copy work), custom calls (a GEMM, a
  Cholesky or ``eigh`` from a vendor library), sorts, unfused reductions, dots, copies,
  random-bit generators, scatters, gathers, collectives (an asynchronous one counts at its
  ``-start``);
- not counted: what moves no data on the device: ``parameter``, ``constant``, ``tuple``,
  ``get-tuple-element``, ``bitcast``, the ``-done`` half of asynchronous pairs, and the
  control-flow shells themselves;
- control flow: a ``while`` loop's condition and body are counted once, as one iteration,
  and also reported apart (:attr:`KernelCount.loops`: kernels per iteration, with XLA's trip
  count where it knows one); a ``conditional`` counts its largest branch (what the worst
  generation launches); a ``call`` counts what it calls (XLA:CPU outlines small loops into
  calls; XLA:GPU gathers kernels into command buffers, CUDA graphs, which launch them
  together but still run each).

The same program fuses differently on each backend: XLA:GPU merges more (sibling and
multi-output fusions, Threefry's rounds unrolled into one fusion) where XLA:CPU keeps small
scalar fusions apart and rolls Threefry into a loop. A CPU count is therefore a proxy for the
GPU's, good for comparing two programs compiled on the same backend and for catching growth,
not a prediction of the GPU's number; ``benchmarks/kernel_counts.py`` prints both where a GPU
is present.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from typing import Any

__all__ = ["KernelCount", "kernel_count", "kernel_counts"]

FREE = frozenset(
    {
        "parameter",
        "constant",
        "tuple",
        "get-tuple-element",
        "bitcast",
        "after-all",
        "add-dependency",
        "opt-barrier",
        "partition-id",
        "replica-id",
        "domain",
    }
)
"""Opcodes that launch nothing: they name, group or reinterpret buffers."""

_COMPUTATION = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.*)$")
_CALLED = re.compile(r"\b(calls|to_apply|condition|body)=%?([\w.\-]+)")
_BRANCHES = re.compile(r"\b(?:branch_computations=\{([^}]*)\}|true_computation=%?([\w.\-]+)"
                       r"|false_computation=%?([\w.\-]+))")  # fmt: skip
_TRIP_COUNT = re.compile(r'"known_trip_count":\{"n":"(\d+)"')


@dataclasses.dataclass(frozen=True)
class KernelCount:
    """The kernels of one compiled program (see the module's docstring for what counts).

    Attributes:
        by_opcode: kernels by opcode, a fusion by its kind too (``fusion:kLoop``), every loop
            body counted once.
        loops: each outermost ``while`` loop's kernels per iteration (condition and body,
            the loops inside it once), with XLA's trip count where it knows one (else
            ``None``), in program order.
    """

    by_opcode: Counter[str]
    loops: tuple[tuple[int, int | None], ...] = ()

    @property
    def total(self) -> int:
        """All kernels, each loop's iteration counted once."""
        return self.by_opcode.total()

    def __int__(self) -> int:
        return self.total

    def summary(self, top: int = 6) -> str:
        """``total (n fusion, n copy, ...)``: the most frequent ``top`` opcodes."""
        parts = ", ".join(f"{n} {op}" for op, n in self.by_opcode.most_common(top))
        return f"{self.total} ({parts})"


def _parse(text: str) -> tuple[dict[str, list[str]], str]:
    """The computations of an HLO module's text, each a list of its instructions' right-hand
    sides (``type opcode(operands), attributes``), and the entry's name."""
    computations: dict[str, list[str]] = {}
    entry, current = "", None
    for line in text.splitlines():
        if current is None:
            match = _COMPUTATION.match(line)
            if match and not line.startswith("HloModule"):
                current = match.group(2)
                computations[current] = []
                if match.group(1):
                    entry = current
        elif line.strip() == "}":
            current = None
        else:
            match = _INSTRUCTION.match(line)
            if match:
                computations[current].append(match.group(1))
    if not entry:
        raise ValueError("compiled must be an HLO module's text with an ENTRY computation")
    return computations, entry


def _opcode(rhs: str) -> str:
    """The opcode of an instruction's right-hand side ``type opcode(...)...``."""
    if rhs.startswith("("):  # a tuple type: skip to its closing parenthesis
        depth = 0
        for i, char in enumerate(rhs):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0:
                rhs = rhs[i + 1 :]
                break
    else:
        rhs = rhs.split(" ", 1)[1] if " " in rhs else rhs
    return rhs.strip().split("(", 1)[0].strip()


def _count(
    name: str, computations: dict[str, list[str]], loops: list[tuple[int, int | None]] | None
) -> Counter[str]:
    """The kernels of computation ``name``; the loops outside any other loop are appended to
    ``loops`` (``None`` inside a loop)."""
    counts: Counter[str] = Counter()
    for rhs in computations[name]:
        op = _opcode(rhs)
        called = dict(
            (role, target) for role, target in _CALLED.findall(rhs) if target in computations
        )
        if op == "while":
            body = _count(called["condition"], computations, None)
            body += _count(called["body"], computations, None)
            trip = _TRIP_COUNT.search(rhs)
            if loops is not None:
                loops.append((body.total(), int(trip.group(1)) if trip else None))
            counts += body
        elif op == "conditional":
            names = [
                branch.strip().lstrip("%")
                for group in _BRANCHES.findall(rhs)
                for branch in ",".join(group).split(",")
                if branch.strip()
            ]
            branches = []
            for branch in names:
                inner: list[tuple[int, int | None]] | None = None if loops is None else []
                branches.append((_count(branch, computations, inner), inner))
            largest, inner = max(branches, key=lambda b: b[0].total(), default=(Counter(), []))
            counts += largest
            if loops is not None and inner:
                loops.extend(inner)
        elif op == "call":
            counts += _count(called["to_apply"], computations, loops)
        elif op in FREE or op.endswith("-done") or op == "async-update":
            continue
        elif op == "fusion":
            kind = re.search(r"kind=(\w+)", rhs)
            counts[f"fusion:{kind.group(1)}" if kind else "fusion"] += 1
        else:
            counts[op.removesuffix("-start")] += 1
    return counts


def kernel_counts(compiled: Any) -> KernelCount:
    """The kernels of ``compiled`` (a ``jax.stages.Compiled``, or its ``as_text()``), by
    opcode and loop; see the module's docstring for what is counted."""
    text = compiled if isinstance(compiled, str) else compiled.as_text()
    computations, entry = _parse(text)
    loops: list[tuple[int, int | None]] = []
    by_opcode = _count(entry, computations, loops)
    return KernelCount(by_opcode=by_opcode, loops=tuple(loops))


def kernel_count(compiled: Any) -> int:
    """The number of kernels ``compiled`` launches per run, every loop's iteration counted
    once (:func:`kernel_counts` for the breakdown)."""
    return kernel_counts(compiled).total
