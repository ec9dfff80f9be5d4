"""NSGA-II speed: evolax against pymoo 0.6.2 and EvoX 1.4 (PyTorch on the CPU), side by side
in one run, at populations of 1,000 and 10,000.

Each library runs its NSGA-II on DTLZ2 (3 objectives, 12 variables in ``[0, 1]``, the
problem EvoX and pymoo both ship): a generation is the variation, the evaluation of
``pop`` children and the survival of ``pop`` of the ``2 pop`` (non-dominated sorting and
crowding distance). Each library first runs ``--warmup`` generations, then each round times
``--generations`` more (evolax: one jitted ``lax.scan``, compiled before timing; pymoo: its
``next()`` loop; EvoX: its ``StdWorkflow.step()`` loop), alternating libraries; each figure
is the median over ``--rounds`` of the seconds per generation. EvoX is left out above
``--evox-max-pop`` (its sort of 20,000 points took minutes). The hypervolume of each final
population (reference point 1.1 in every objective) is printed as a check that the runs
are alike. Writes ``benchmarks/results/nsga2_speed.json`` and the table docs/results.md
includes.

    python benchmarks/nsga2_speed.py            # a few minutes on 2 cores
"""

from __future__ import annotations

import argparse
import statistics
import time
from importlib.metadata import version

import jax
import jax.numpy as jnp
import numpy as np

from evolax.algorithms.multiobjective.nsga2 import NSGA2
from evolax.pareto import hypervolume
from evolax.problems.multiobjective import MULTIOBJECTIVE_PROBLEMS
from results_table import RESULTS, write_results

N_VAR, M, REFERENCE = 12, 3, 1.1


def evolax_runner(pop: int, warmup: int, generations: int):
    algo = NSGA2(pop_size=pop, n_objectives=M, lower=0.0, upper=1.0, mutation_rate=1 / N_VAR)
    problem = MULTIOBJECTIVE_PROBLEMS["dtlz2"]

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        x, state = algo.ask(ask_key, state)
        state, _ = algo.tell(tell_key, state, x, -problem(x, n_objectives=M))
        return state, None

    def run(state, key, n):
        return jax.lax.scan(generation, state, jax.random.split(key, n))[0]

    warm, timed = jax.jit(run, static_argnums=2), jax.jit(run, static_argnums=2)
    key = jax.random.key(0)
    state = jax.block_until_ready(warm(algo.init(key, jnp.full(N_VAR, 0.5)), key, warmup))
    jax.block_until_ready(timed(state, key, generations))  # compiled before timing
    box = {"state": state}

    def go():
        box["state"] = jax.block_until_ready(timed(box["state"], jax.random.key(1), generations))
        return float(hypervolume(box["state"].fitness, jnp.full(M, -REFERENCE)))

    return go


def pymoo_runner(pop: int, warmup: int, generations: int):
    from pymoo.algorithms.moo.nsga2 import NSGA2 as PymooNSGA2
    from pymoo.indicators.hv import HV
    from pymoo.problems import get_problem

    algorithm = PymooNSGA2(pop_size=pop)
    algorithm.setup(get_problem("dtlz2", n_var=N_VAR, n_obj=M), seed=1, verbose=False)
    for _ in range(warmup):
        algorithm.next()

    def go():
        for _ in range(generations):
            algorithm.next()
        return float(HV(ref_point=np.full(M, REFERENCE))(algorithm.pop.get("F")))

    return go


def evox_runner(pop: int, warmup: int, generations: int):
    import torch
    from evox.algorithms import NSGA2 as EvoxNSGA2
    from evox.problems.numerical import DTLZ2
    from evox.workflows import StdWorkflow
    from pymoo.indicators.hv import HV

    torch.manual_seed(1)
    algorithm = EvoxNSGA2(pop, M, torch.zeros(N_VAR), torch.ones(N_VAR))
    workflow = StdWorkflow(algorithm, DTLZ2(d=N_VAR, m=M))
    workflow.init_step()
    for _ in range(warmup - 1):
        workflow.step()

    def go():
        for _ in range(generations):
            workflow.step()
        fitness = algorithm.fit.detach().cpu().numpy()
        return float(HV(ref_point=np.full(M, REFERENCE))(fitness[np.all(np.isfinite(fitness), 1)]))

    return go


def table(rows: list[dict]) -> str:
    lines = [
        "| pop | evolax s/gen | pymoo s/gen | EvoX s/gen | pymoo / evolax | EvoX / evolax "
        "| hypervolume (evolax, pymoo, EvoX) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        evox = r.get("evox_s")
        hv = ", ".join(
            f"{r[k]:.3f}" if r.get(k) is not None else "-"
            for k in ("evolax_hv", "pymoo_hv", "evox_hv")
        )
        ours = r["evolax_s"]
        evox_s = "-" if evox is None else f"{evox:.3g}"
        evox_ratio = "-" if evox is None else f"{evox / ours:.1f}x"
        lines.append(
            f"| {r['pop']:,} | {ours:.3g} | {r['pymoo_s']:.3g} | {evox_s} "
            f"| {r['pymoo_s'] / ours:.1f}x | {evox_ratio} | {hv} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pops", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--generations", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--evox-max-pop", type=int, default=1000)
    parser.add_argument("--out", default=RESULTS / "nsga2_speed.json")
    args = parser.parse_args()
    rows = []
    for pop in args.pops:
        runners = {
            "evolax": evolax_runner(pop, args.warmup, args.generations),
            "pymoo": pymoo_runner(pop, args.warmup, args.generations),
        }
        if pop <= args.evox_max_pop:
            runners["evox"] = evox_runner(pop, args.warmup, args.generations)
        times: dict[str, list[float]] = {name: [] for name in runners}
        hv = {}
        for _ in range(args.rounds):
            for name, go in runners.items():
                start = time.perf_counter()
                hv[name] = go()
                times[name].append((time.perf_counter() - start) / args.generations)
        row = {"pop": pop} | {f"{n}_s": statistics.median(t) for n, t in times.items()}
        row |= {f"{n}_hv": v for n, v in hv.items()}
        rows.append(row)
        print(table([row]).splitlines()[-1], flush=True)
    versions = {"pymoo": version("pymoo"), "evox": version("evox"), "jax": jax.__version__}
    write_results(
        args.out, "nsga2_speed", rows, table, config=vars(args) | {"out": str(args.out)},
        versions=versions,
    )  # fmt: skip
    print(table(rows))


if __name__ == "__main__":
    main()
