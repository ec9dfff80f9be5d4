"""Kernels per generation, counted from the compiled HLO: evolax against evosax and EvoJAX.

A GPU launches one kernel per top-level operation of a compiled program, and a small
generation is bound by their number more than by its arithmetic. For each case this compiles
the same work in both libraries on the default backend and counts the kernels with
:func:`evolax.hlo.kernel_counts` (fusions, custom calls, sorts, copies...; each loop's
iteration once):

- the population algorithms (SimpleGA, DE, PSO, CMA-ES, OpenES): one generation, ask +
  evaluate + tell on ``evosax_speed.py``'s shifted sphere and settings, jitted as one program
  that takes the state (donated, as a loop's is) and one key (both libraries' ``ask`` and
  ``tell`` get it: no key split in either) and returns the new state and the metrics
  ``tell`` returns (both report some); the fitness evaluation is included in both. The
  table also counts one iteration of a ``lax.scan`` of generations, the loop a run compiles;
- cart-pole: one step of the episode loop of a whole population (the loop's body and
  condition: policy forward, physics, returns and done masks), from evolax's ``evaluate``
  and EvoJAX's ``SimManager`` rollout, with ``cartpole_speed.py``'s settings (pop 64, 16
  repeats, MLP [64, 64]).

XLA:CPU fuses differently from XLA:GPU (see :mod:`evolax.hlo`): on a CPU the counts compare the
two libraries' programs on that backend; run on a GPU (``benchmarks/accelerator.sh``) the
script counts the GPU's programs. Writes ``benchmarks/results/kernel_counts.json`` and
``docs/results/kernel_counts.md``. Run with ``python benchmarks/kernel_counts.py [--cases ...]``
(needs evosax 0.3.2 and EvoJAX 0.2.17, as ``nox -s bench`` installs).
"""

from __future__ import annotations

import argparse
import logging
import sys
from importlib.metadata import version
from pathlib import Path
from unittest import mock

import jax
import jax.numpy as jnp

from evolax.hlo import KernelCount, kernel_counts
from results_table import RESULTS, write_results

ALGORITHMS = {
    "simple_ga": "SimpleGA",
    "de": "DE",
    "pso": "PSO",
    "cma_es": "CMA-ES",
    "cma_es_lean": "CMA-ES, fitness_history=False, factored=False",
    "open_es": "OpenES",
}
VARIANTS = {"cma_es_lean": ("cma_es", (("fitness_history", False), ("factored", False)))}
"""Cases that are another case's work with evolax options (evosax's side runs as it is)."""
CASES = (*ALGORITHMS, "cartpole")
POP, REPEATS, HIDDEN = 64, 16, (64, 64)  # cartpole_speed.py's
SCANNED = 4
"""Generations in the ``lax.scan`` whose loop body is counted."""
NOTES = {
    "cma_es": "evolax's does more: it records the fitness history of pycma's termination "
    "criteria (about 20 kernels), keeps the float32 mean's rounding error (compensated sum, "
    "4) and its covariance in the last decomposition's frame (factored, about 14), skips a "
    "generation whose update breaks down (a health check, about 15) and reports "
    "5 metrics more (about 10); the lazy eigendecomposition's cond counts at its larger branch",
    "cma_es_lean": "without the termination criteria's fitness history (evosax keeps none) "
    "and the float32 factored covariance (evosax decomposes C by eigh)",
}


def generation_counts(
    case: str, library: str, sizes: tuple[int, int] | None = None, scanned: bool = False
) -> KernelCount:
    """The kernels of one generation of ``case`` in ``library`` (``"evolax"`` or
    ``"evosax"``), jitted with its state donated (as a loop's state is: generation ``g``'s
    buffers become ``g + 1``'s); ``scanned``: the program of :data:`SCANNED` generations in
    one ``lax.scan`` (its loop in :attr:`~evolax.hlo.KernelCount.loops`). ``sizes`` (dim,
    pop) replaces ``evosax_speed.py``'s."""
    import evosax_speed

    case, options = VARIANTS.get(case, (case, ()))
    c = evosax_speed.CASES[case]
    dim, pop = sizes or (c.dim, c.pop)
    options = c.options + options if library == "evolax" else c.options
    evosax_speed.CASES[case] = type(c)(c.evosax, dim, pop, c.std, c.lr, options)
    try:
        if library == "evolax":
            init, generation, _ = evosax_speed.evolax_generation(case)
        else:  # one key for ask and tell, as evolax's harness: no split in either
            init, generation, _ = evosax_speed.evosax_generation(case, split_key=False)
    finally:
        evosax_speed.CASES[case] = c
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts ranks implicitly
        state = init(jax.random.key(0))
        if scanned:
            keys = jax.random.split(jax.random.key(1), SCANNED)
            scan = lambda state, keys: jax.lax.scan(generation, state, keys)  # noqa: E731
            program = jax.jit(scan, donate_argnums=0).lower(state, keys)
        else:
            program = jax.jit(generation, donate_argnums=0).lower(state, jax.random.key(1))
        return kernel_counts(program.compile())


def scan_loop(counts: KernelCount) -> int | None:
    """The kernels of one iteration of a scan of :data:`SCANNED` generations (``None`` where
    the compiler unrolled it)."""
    loops = [kernels for kernels, trip in counts.loops if trip == SCANNED]
    return loops[0] if len(loops) == 1 else None


def episode_loop(counts: KernelCount) -> int:
    """The kernels of one iteration of the program's episode loop: its largest loop."""
    return max(kernels for kernels, _ in counts.loops)


def evolax_cartpole(pop: int = POP, repeats: int = REPEATS) -> KernelCount:
    """The kernels of evolax's ``evaluate`` of cart-pole swing-up (per loop iteration in
    :attr:`~evolax.hlo.KernelCount.loops`)."""
    import evolax
    from evolax.rollout.evaluate import evaluate

    policy, task = evolax.MLP(hidden_sizes=HIDDEN), evolax.CartPoleSwingUp()
    params = policy.init(jax.random.key(0), task.obs_shape, task.action_shape)
    population = jax.tree.map(lambda leaf: jnp.zeros((pop, *leaf.shape), leaf.dtype), params)
    run = jax.jit(lambda population, key: evaluate(policy, task, population, key, repeats))
    return kernel_counts(run.lower(population, jax.random.key(1)).compile())


def evojax_cartpole(pop: int = POP, repeats: int = REPEATS) -> KernelCount:
    """The same for EvoJAX's ``SimManager`` rollout of its cart-pole task and MLP policy."""
    if not hasattr(jax, "tree_map"):  # EvoJAX still calls jax.tree_map
        jax.tree_map = jax.tree.map
    from evojax.policy import MLPPolicy
    from evojax.sim_mgr import SimManager
    from evojax.task.cartpole import CartPoleSwingUp

    logger = logging.getLogger("evojax-kernels")
    logger.setLevel(logging.WARNING)
    policy = MLPPolicy(input_dim=5, hidden_dims=list(HIDDEN), output_dim=1, logger=logger)
    task = CartPoleSwingUp()
    # one device's program, as evolax's here (EvoJAX would pmap over every device it sees)
    with mock.patch.object(jax, "local_device_count", lambda *args: 1):
        sim = make_sim(SimManager, policy, task, pop, repeats, logger)
    params = jnp.zeros((pop * repeats, policy.num_params))
    with jax.numpy_rank_promotion("allow"):  # as EvoJAX is written
        task_state = task.reset(jax.random.split(jax.random.key(1), pop * repeats))
        policy_state = policy.reset(task_state)
        program = jax.jit(sim._train_rollout_fn).lower(
            task_state, policy_state, params, sim.obs_params
        )
        return kernel_counts(program.compile())


def make_sim(SimManager, policy, task, pop: int, repeats: int, logger):
    """EvoJAX's ``SimManager`` for ``pop`` members of ``repeats`` episodes each."""
    from evojax.task.cartpole import CartPoleSwingUp

    return SimManager(
        n_repeats=repeats,
        test_n_repeats=1,
        pop_size=pop,
        n_evaluations=1,
        policy_net=policy,
        train_vec_task=task,
        valid_vec_task=CartPoleSwingUp(test=True),
        seed=0,
        logger=logger,
    )


def measure(case: str) -> dict:
    """One row: both libraries' counts (and their breakdowns) for ``case``."""
    if case == "cartpole":
        ours, theirs = evolax_cartpole(), evojax_cartpole()
        return {
            "case": case,
            "reference": f"EvoJAX {version('evojax')}",
            "evolax": episode_loop(ours),
            "other": episode_loop(theirs),
            "breakdown": {"evolax": ours.summary(), "other": theirs.summary()},
        }
    ours, theirs = generation_counts(case, "evolax"), generation_counts(case, "evosax")
    return {
        "case": case,
        "reference": f"evosax {version('evosax')}",
        "evolax": ours.total,
        "other": theirs.total,
        "evolax_scanned": scan_loop(generation_counts(case, "evolax", scanned=True)),
        "other_scanned": scan_loop(generation_counts(case, "evosax", scanned=True)),
        "breakdown": {"evolax": ours.summary(), "other": theirs.summary()},
    }


def label(case: str) -> str:
    import evosax_speed

    if case == "cartpole":
        return f"cart-pole, one episode step (pop {POP} x {REPEATS} repeats, MLP {list(HIDDEN)})"
    c = evosax_speed.CASES[VARIANTS.get(case, (case,))[0]]
    return f"{ALGORITHMS[case]}, one generation (d = {c.dim:,}, pop {c.pop:,})"


def table(rows: list[dict]) -> str:
    backend = jax.default_backend().upper()
    lines = [
        f"| work ({backend}) | reference | evolax kernels | reference's | evolax / reference "
        f"| in a lax.scan: evolax, reference | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        scanned = ""
        if row.get("evolax_scanned") and row.get("other_scanned"):
            scanned = f"{row['evolax_scanned']}, {row['other_scanned']}"
        lines.append(
            f"| {label(row['case'])} | {row['reference']} | {row['evolax']} | {row['other']} "
            f"| {row['evolax'] / row['other']:.2f} | {scanned} | {NOTES.get(row['case'], '')} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated")
    parser.add_argument("--out", type=Path, default=RESULTS / "kernel_counts.json")
    args = parser.parse_args()
    rows = []
    for case in args.cases.split(","):
        if case not in CASES:
            sys.exit(f"unknown case {case!r}; choose from {list(CASES)}")
        rows.append(measure(case))
        print(rows[-1], flush=True)
    write_results(
        args.out,
        "kernels per generation, counted from the compiled HLO",
        rows,
        table,
        backend=jax.default_backend(),
        versions={name: version(name) for name in ("evolax", "evosax", "evojax", "jax")},
    )
    print(table(rows))


if __name__ == "__main__":
    main()
