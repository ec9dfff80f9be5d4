"""An evosax-style eager loop against the same loop under ``jax.jit``, side by side.

The loop is evosax's README loop ported to evolax: split the key, ``ask``, evaluate the
population with a jitted function, ``tell``, all called from Python. Four forms of it run in
one process, in alternating rounds, on the same algorithm and problem (a shifted sphere,
maximised as ``-|x - 1|^2``):

- ``eager``: the methods as they are (they compile themselves on the first call);
- ``methods jitted``: ``jax.jit(algo.ask)`` and ``jax.jit(algo.tell)`` by hand, the loop
  otherwise the same (what an evosax user writes, and what evosax's methods do inside);
- ``generation jitted``: one ``jax.jit`` of the whole generation (split, ask, evaluate,
  tell) called from Python;
- ``uncompiled``: the methods' bodies run op by op, as evolax 0.1.0 ran them (fewer
  generations: it is slow).

Sizes: evosax's README (``CMA_ES(popsize=20, num_dims=2)``, the population and dimension of
its example) for OpenES, CMA-ES and SimpleGA, and d = 10,000 (pop 256) for OpenES, SimpleGA
and Sep-CMA-ES; CMA-ES itself would hold a 10,000 x 10,000 covariance there, whose
eigendecomposition takes minutes on a CPU. Each figure is the fastest round's mean seconds per
generation (the forms alternate within each round, in a rotating order, with Python's garbage
collector paused as ``timeit`` pauses it; on a busy machine the fastest round is the least
disturbed one, as ``timeit`` advises); the JSON records the medians too.

Writes ``benchmarks/results/eager_vs_jit.json`` and ``.md`` (the table
docs/guides/own_loop.md quotes).

    python benchmarks/eager_vs_jit.py [--rounds 7] [--generations 50]
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

import evolax
from results_table import RESULTS, write_results

CASES: list[tuple[str, Callable[[int], Any], int, int]] = [
    ("OpenES", lambda pop: evolax.OpenES(pop_size=pop), 20, 2),
    ("CMAES", lambda pop: evolax.CMAES(pop_size=pop), 20, 2),
    ("SimpleGA", lambda pop: evolax.SimpleGA(pop_size=pop), 20, 2),
    ("OpenES", lambda pop: evolax.OpenES(pop_size=pop), 256, 10_000),
    ("SepCMAES", lambda pop: evolax.SepCMAES(pop_size=pop), 256, 10_000),
    ("SimpleGA", lambda pop: evolax.SimpleGA(pop_size=pop), 256, 10_000),
]


@jax.jit
def fitness(population: jax.Array) -> jax.Array:
    return -jnp.sum((population - 1.0) ** 2, axis=-1)


def raw(method: Callable) -> Callable:
    """A compiled method's body, run op by op (bound to the same instance)."""
    return functools.partial(method.__func__.__wrapped_compiled__, method.__self__)


def loops(algo) -> dict[str, Callable]:
    """Each form of the loop: ``(key, state, n) -> state``."""

    def python_loop(ask, tell):
        def loop(key, state, n):
            for _ in range(n):
                key, ask_key, tell_key = jax.random.split(key, 3)
                population, state = ask(ask_key, state)
                state, _ = tell(tell_key, state, population, fitness(population))
            return state

        return loop

    @jax.jit
    def generation(key, state):
        key, ask_key, tell_key = jax.random.split(key, 3)
        population, state = algo.ask(ask_key, state)
        return key, algo.tell(tell_key, state, population, fitness(population))[0]

    def jitted_generations(key, state, n):
        for _ in range(n):
            key, state = generation(key, state)
        return state

    return {
        "eager": python_loop(algo.ask, algo.tell),
        "methods jitted": python_loop(jax.jit(algo.ask), jax.jit(algo.tell)),
        "generation jitted": jitted_generations,
        "uncompiled": python_loop(raw(algo.ask), raw(algo.tell)),
    }


def measure(name: str, make, pop: int, dim: int, rounds: int, generations: int) -> dict:
    algo = make(pop)
    key = jax.random.key(0)
    state = algo.init(key, jnp.zeros(dim))
    forms = loops(algo)
    counts = {form: generations for form in forms} | {"uncompiled": max(2, generations // 10)}
    for loop in forms.values():  # compile, warm up
        jax.block_until_ready(loop(key, state, 2))
    times: dict[str, list[float]] = {form: [] for form in forms}
    order = list(forms)
    gc.disable()  # as timeit does: a collection would land on whichever form runs then
    try:
        for i in range(rounds):
            for form in order[i % len(order) :] + order[: i % len(order)]:  # rotated
                start = time.perf_counter()
                jax.block_until_ready(forms[form](key, state, counts[form]))
                times[form].append((time.perf_counter() - start) / counts[form])
            gc.collect()
    finally:
        gc.enable()
    best = {form: min(t) for form, t in times.items()}
    row = {"algorithm": name, "pop_size": pop, "dim": dim, "seconds_per_generation": best}
    row["median_seconds_per_generation"] = {f: statistics.median(t) for f, t in times.items()}
    row["eager_over_methods_jitted"] = best["eager"] / best["methods jitted"]
    row["eager_over_generation_jitted"] = best["eager"] / best["generation jitted"]
    row["uncompiled_over_eager"] = best["uncompiled"] / best["eager"]
    print(row, flush=True)
    return row


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g}"


def table(rows: list[dict]) -> str:
    lines = [
        "| algorithm | pop | d | eager, ms/gen | methods jitted, ms/gen | eager / methods jitted"
        " | generation jitted, ms/gen | eager / generation jitted | uncompiled (0.1.0) / eager |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        t = row["seconds_per_generation"]
        lines.append(
            f"| {row['algorithm']} | {row['pop_size']} | {row['dim']:,} | {ms(t['eager'])} | "
            f"{ms(t['methods jitted'])} | {row['eager_over_methods_jitted']:.2f}x | "
            f"{ms(t['generation jitted'])} | {row['eager_over_generation_jitted']:.2f}x | "
            f"{row['uncompiled_over_eager']:.0f}x |"
        )
    return "\n".join(lines)


def cpu() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            return next(line.split(":", 1)[1].strip() for line in info if "model name" in line)
    except (OSError, StopIteration):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--generations", type=int, default=50)
    args = parser.parse_args()
    rows = [measure(*case, args.rounds, args.generations) for case in CASES]
    out = RESULTS / "eager_vs_jit.json"
    write_results(
        out, "eager_vs_jit", rows, table, cpu=cpu(), device=str(jax.devices()[0]),
        rounds=args.rounds, generations=args.generations, jax=jax.__version__,
    )  # fmt: skip
    print(table(rows))


if __name__ == "__main__":
    main()
