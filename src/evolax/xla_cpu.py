"""XLA's CPU code generation, set for the machine when evolax is imported.

XLA vectorises CPU loops for 256-bit registers unless told otherwise, also on CPUs with
512-bit ones (AVX-512). On such a CPU evolax asks for 512-bit vectors: the dense layers and
``tanh`` of an MLP policy, which are most of a cart-pole generation, then run about 20%
faster (``benchmarks/cartpole_speed.py``). The request is an ``XLA_FLAGS`` entry, so it takes
effect only if evolax is imported before JAX's first computation, and a width already set in
``XLA_FLAGS`` is left alone: ``XLA_FLAGS=--xla_cpu_prefer_vector_width=256`` keeps XLA's
default.
"""

from __future__ import annotations

import os
import re
from collections.abc import MutableMapping
from pathlib import Path

VECTOR_WIDTH_FLAG = "--xla_cpu_prefer_vector_width"


def has_avx512(cpuinfo: str | None = None) -> bool:
    """Whether the CPU has AVX-512 (``avx512f`` in ``/proc/cpuinfo``'s flags, or in
    ``cpuinfo`` when given); ``False`` where there is no ``/proc/cpuinfo``."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return False
    return re.search(r"^flags\s*:.*\bavx512f\b", cpuinfo, re.MULTILINE) is not None


def prefer_wide_vectors(
    environ: MutableMapping[str, str] = os.environ, cpuinfo: str | None = None
) -> bool:
    """Ask XLA for 512-bit vectors on a CPU with AVX-512, unless ``XLA_FLAGS`` already sets a
    width. Returns whether the request was added to ``environ["XLA_FLAGS"]``."""
    flags = environ.get("XLA_FLAGS", "")
    if VECTOR_WIDTH_FLAG in flags or not has_avx512(cpuinfo):
        return False
    environ["XLA_FLAGS"] = f"{flags} {VECTOR_WIDTH_FLAG}=512".strip()
    return True
