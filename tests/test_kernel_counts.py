"""Kernels per generation (evolax.hlo): the counter on a hand-written HLO module, and the
counts of one generation of SimpleGA, DE, PSO, CMA-ES and OpenES and of one cart-pole episode
step, pinned so that growth fails, and (slow) against evosax's and EvoJAX's programs for the
same work (``benchmarks/kernel_counts.py``, at small sizes)."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from evolax.hlo import kernel_count, kernel_counts

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import kernel_counts as bench

MODULE = """HloModule jit_example, entry_computation_layout={(f32[8]{0})->(f32[8]{0}, f32[])}

%fused_add (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %c = f32[] constant(1)
  %b = f32[8]{0} broadcast(%c), dimensions={}
  ROOT %a = f32[8]{0} add(%p, %b)
}

%body (t: (s32[], f32[8])) -> (s32[], f32[8]) {
  %t = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %x = f32[8]{0} get-tuple-element(%t), index=1
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %y = f32[8]{0} fusion(%x), kind=kLoop, calls=%fused_add
  %s = f32[8]{0} sort(%y), dimensions={0}, to_apply=%less
  ROOT %r = (s32[], f32[8]{0}) tuple(%j, %s)
}

%cond (t: (s32[], f32[8])) -> pred[] {
  %t = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%less (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %lt = pred[] compare(%a, %b), direction=LT
}

%small (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  ROOT %y = f32[8]{0} fusion(%x), kind=kLoop, calls=%fused_add
}

%large (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %y = f32[8]{0} fusion(%x), kind=kLoop, calls=%fused_add
  %z = f32[8]{0} custom-call(%y), custom_call_target="eigh"
  ROOT %w = f32[8]{0} copy(%z)
}

%outlined (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  ROOT %y = f32[8]{0} fusion(%x), kind=kLoop, calls=%fused_add
}

ENTRY %main (x: f32[8]) -> (f32[8], f32[]) {
  %x = f32[8]{0} parameter(0)
  %zero = s32[] constant(0)
  %start = s32[] copy(%zero)
  %init = (s32[], f32[8]{0}) tuple(%start, %x)
  %loop = (s32[], f32[8]{0}) while(%init), condition=%cond, body=%body, TRIPS
  %v = f32[8]{0} get-tuple-element(%loop), index=1
  %flag = pred[] constant(true)
  %picked = f32[8]{0} conditional(%flag, %v, %v), true_computation=%small, false_computation=%large
  %called = f32[8]{0} call(%picked), to_apply=%outlined
  %flat = f32[8]{0} bitcast(%called)
  %c0 = f32[] constant(0)
  %sum = f32[] reduce(%flat, %c0), dimensions={0}, to_apply=%less
  ROOT %out = (f32[8]{0}, f32[]) tuple(%flat, %sum)
}
""".replace("TRIPS", 'backend_config={"known_trip_count":{"n":"5"}}')


def test_the_counter_counts_what_launches_on_a_hand_written_module():
    """Entry: the copy, the conditional's larger branch (fusion, custom call, copy), the
    called fusion and the reduce; the loop's iteration once: its fusion, sort and the
    unfused add and compare (condition). Parameters, constants, tuples,
    get-tuple-elements and bitcasts launch nothing."""
    counts = kernel_counts(MODULE)
    assert counts.by_opcode == Counter(
        {"copy": 2, "fusion:kLoop": 3, "custom-call": 1, "reduce": 1, "sort": 1, "add": 1,
         "compare": 1}
    )  # fmt: skip
    assert counts.total == kernel_count(MODULE) == 10
    assert counts.loops == ((4, 5),)  # add, fusion, sort and the condition's compare; 5 trips
    assert counts.summary(2).startswith("10 (3 fusion:kLoop, 2 copy")


def test_the_counter_reads_a_compiled_program():
    """One element-wise fusion, one sort, one loop of 3 iterations over a fusion."""
    x = jnp.linspace(0.0, 1.0, 16)

    def loop(x):
        return jax.lax.fori_loop(0, 3, lambda i, y: jnp.sin(y) * 2.0 + 1.0, x)

    elementwise = jax.jit(lambda x: jnp.exp(x) * 2.0 + 1.0).lower(x).compile()
    assert kernel_count(elementwise) == 1
    assert kernel_counts(jax.jit(jnp.sort).lower(x).compile()).by_opcode["sort"] == 1
    looped = kernel_counts(jax.jit(loop).lower(x).compile())
    assert [trips for _, trips in looped.loops] == [3]
    assert looped.loops[0][0] >= 1
    with pytest.raises(ValueError, match="ENTRY"):
        kernel_counts("HloModule empty")


SIZES = (32, 16)  # dimension, population: a small compile of each program
PINNED = {
    "simple_ga": 96,
    "de": 45,
    "pso": 47,
    "cma_es": 133,
    "cma_es_lean": 101,
    "open_es": 71,
    "cartpole": 21,
}
"""evolax's kernels at ``SIZES`` on the CPU backend (cart-pole: pop 8, 2 repeats), as counted
when recorded (main before they were cut: SimpleGA 96, DE 45, PSO 47, CMA-ES 136, OpenES 70,
cart-pole 21; CMA-ES 117 and 99 before its float32 covariance was kept factored, 16 kernels,
and ``C`` was symmetrised inside the decomposition's ``cond``, 1; 133 before float32 CMA-ES
updated only its whitened covariance, not ``C`` beside it, 2 fewer; 131 before it decomposed a
mildly conditioned ``C`` by ``eigh`` instead of the SVD, 1 more; 132 before ``W`` was
symmetrised only when decomposed, inside the ``cond``, 1 more, as ``C`` in float64). A change
that adds kernels fails here: record the new number only if the kernels it adds are worth their
launches."""
LEGACY_EMITTER = {"cma_es": 137, "cma_es_lean": 105, "open_es": 75}
"""The counts that differ where XLA:CPU generates code with its older elemental fusion emitter
(``--xla_cpu_use_fusion_emitters=false``, how the default suite compiles: tests/conftest.py),
which fuses a few of the update's operations differently."""


def pinned(case: str) -> int:
    """The recorded count for ``case`` under this process's XLA flags."""
    legacy = "--xla_cpu_use_fusion_emitters=false" in os.environ.get("XLA_FLAGS", "")
    return LEGACY_EMITTER.get(case, PINNED[case]) if legacy else PINNED[case]


def own_count(case: str, sizes: tuple[int, int] | None = SIZES) -> int:
    if case == "cartpole":
        return bench.episode_loop(bench.evolax_cartpole(*((8, 2) if sizes else ())))
    return bench.generation_counts(case, "evolax", sizes).total


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the pinned counts are XLA:CPU's")
@pytest.mark.parametrize("case", list(PINNED))
def test_kernels_per_generation_do_not_grow(case):
    count = own_count(case)
    assert count <= pinned(case), (
        f"{case}: one generation compiles to {count} kernels on the CPU, more than the "
        f"{pinned(case)} recorded; see benchmarks/kernel_counts.py and evolax.hlo"
    )


LEAN_CMA = pytest.mark.xfail(
    strict=True,
    reason="CMA-ES without its fitness history and factored float32 covariance: 111 kernels "
    "against evosax's 110 since C is symmetrised only when decomposed, inside the lax.cond "
    "(one copy kernel; 3 of 5 seconds a generation at d = 5000 saved)",
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=LEAN_CMA) if c == "cma_es_lean" else c for c in PINNED if c != "cma_es"],
)
def test_evolax_launches_no_more_kernels_than_evosax_or_evojax(case):
    """The same work in evosax 0.3.2 (EvoJAX 0.2.17 for cart-pole) on the same backend, at
    the sizes of the table in docs/results.md. CMA-ES with its defaults does more than
    evosax's (the table's notes), so it is compared without the fitness history."""
    if case == "cartpole":
        pytest.importorskip("evojax")
        other = bench.episode_loop(bench.evojax_cartpole())
    else:
        pytest.importorskip("evosax")
        other = bench.generation_counts(case, "evosax").total
    assert own_count(case, None) <= other, case
