"""Quality-diversity speed: evolax against pyribs 0.12, side by side in one run, at an archive
of 10,000 cells and a batch of 1,024 candidates per generation.

Each library runs the same algorithm on the linear-projection sphere (``d`` = 20, the
benchmark of ``tests/qd/test_qd_pyribs.py``): MAP-Elites on a 100 x 100 grid (iso+line
variation), CVT-MAP-Elites on 10,000 centroids (evolax's k-means centroids, handed to both),
CMA-ME (8 improvement emitters of 128) and CMA-MAE (8 emitters of 128, learning rate 0.01).
A generation is ask, evaluate and tell. Both first run ``--warmup`` generations, so the
archive is partly full; then each round times ``--generations`` more (evolax: one jitted
``lax.scan``, compiled before timing; pyribs: its Python loop), alternating libraries. Each
figure is the median over ``--rounds`` of the seconds per generation. Writes
``benchmarks/results/qd_speed.json`` and the table docs/results.md includes.

    python benchmarks/qd_speed.py            # about 2 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import statistics
import time
from importlib.metadata import version

import jax
import jax.numpy as jnp
import numpy as np

from evolax.algorithms import CMAMAE, CMAME, ArchiveMAPElites
from evolax.problems import linear_projection_bound, sphere_linear_projection
from evolax.qd import CVTArchive, GridArchive, cvt_centroids
from results_table import RESULTS, write_results

DIM, BATCH, EMITTERS = 20, 1024, 8
BOUND = linear_projection_bound(DIM)
CASES = ["MAP-Elites (grid)", "CVT-MAP-Elites", "CMA-ME", "CMA-MAE"]


def evolax_runner(case: str, centroids: np.ndarray, warmup: int, generations: int):
    """A function that runs ``generations`` more generations (after ``warmup``), blocking."""
    grid = GridArchive((100, 100), (-BOUND,) * 2, (BOUND,) * 2)
    if case == "MAP-Elites (grid)":
        algo = ArchiveMAPElites(BATCH, grid, mutation_std=0.5, line_std=0.2, init_std=0.5)
    elif case == "CVT-MAP-Elites":
        cvt = CVTArchive(centroids, (-BOUND,) * 2, (BOUND,) * 2)
        algo = ArchiveMAPElites(BATCH, cvt, mutation_std=0.5, line_std=0.2, init_std=0.5)
    elif case == "CMA-ME":
        algo = CMAME(BATCH, grid, emitters=("improvement",) * EMITTERS, init_std=0.5)
    else:
        algo = CMAMAE(BATCH, (100, 100), (-BOUND,) * 2, (BOUND,) * 2, n_emitters=EMITTERS)

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        x, state = algo.ask(ask_key, state)
        fitness, descriptors = sphere_linear_projection(x)
        state, metrics = algo.tell(tell_key, state, x, fitness, descriptors=descriptors)
        return state, metrics["coverage"]

    def run(state, key, n):
        return jax.lax.scan(generation, state, jax.random.split(key, n))

    warm = jax.jit(run, static_argnums=2)
    timed = jax.jit(run, static_argnums=2)
    key = jax.random.key(0)
    state, _ = jax.block_until_ready(warm(algo.init(key, jnp.zeros(DIM)), key, warmup))
    jax.block_until_ready(timed(state, key, generations))  # compiled before timing

    def go():
        out, coverage = timed(state, jax.random.key(1), generations)
        jax.block_until_ready(out)
        return float(coverage[-1])

    return go


def pyribs_runner(case: str, centroids: np.ndarray, warmup: int, generations: int):
    import ribs

    ranges = [(-BOUND, BOUND)] * 2
    result = None
    if case in ("MAP-Elites (grid)", "CVT-MAP-Elites"):
        if case == "MAP-Elites (grid)":
            archive = ribs.archives.GridArchive(solution_dim=DIM, dims=(100, 100), ranges=ranges)
        else:
            archive = ribs.archives.CVTArchive(solution_dim=DIM, centroids=centroids, ranges=ranges)
        emitters = [
            ribs.emitters.IsoLineEmitter(
                archive, x0=np.zeros(DIM), iso_sigma=0.5, line_sigma=0.2, batch_size=BATCH
            )
        ]
    else:
        grid = dict(solution_dim=DIM, dims=(100, 100), ranges=ranges)
        if case == "CMA-ME":
            archive = ribs.archives.GridArchive(**grid)
            rules = dict(ranker="2imp", selection_rule="filter", restart_rule="no_improvement")
        else:
            archive = ribs.archives.GridArchive(**grid, learning_rate=0.01, threshold_min=0.0)
            result = ribs.archives.GridArchive(**grid)
            rules = dict(ranker="imp", selection_rule="mu", restart_rule="basic")
        emitters = [
            ribs.emitters.EvolutionStrategyEmitter(
                archive,
                x0=np.zeros(DIM),
                sigma0=0.5,
                batch_size=BATCH // EMITTERS,
                seed=i,
                **rules,
            )
            for i in range(EMITTERS)
        ]
    scheduler = ribs.schedulers.Scheduler(archive, emitters, result_archive=result)

    def steps(n):
        for _ in range(n):
            x = scheduler.ask()
            fitness, descriptors = sphere_linear_projection(x)
            scheduler.tell(np.asarray(fitness, np.float64), np.asarray(descriptors, np.float64))
        return float((result or archive).stats.coverage)

    steps(warmup)
    return lambda: steps(generations)


def table(rows: list[dict]) -> str:
    lines = [
        "| algorithm | cells | batch | evolax s/gen | pyribs s/gen | pyribs / evolax "
        "| coverage after (evolax, pyribs) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | 10,000 | 1,024 | {r['evolax_s']:.3g} | {r['pyribs_s']:.3g} "
            f"| {r['pyribs_s'] / r['evolax_s']:.1f}x | {r['evolax_coverage']:.2f}, "
            f"{r['pyribs_coverage']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--generations", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=RESULTS / "qd_speed.json")
    args = parser.parse_args()
    centroids = np.asarray(cvt_centroids(jax.random.key(0), 10_000, (-BOUND,) * 2, (BOUND,) * 2))
    rows = []
    for case in CASES:
        runners = {
            "evolax": evolax_runner(case, centroids, args.warmup, args.generations),
            "pyribs": pyribs_runner(case, centroids, args.warmup, args.generations),
        }
        times: dict[str, list[float]] = {name: [] for name in runners}
        coverage = {}
        for _ in range(args.rounds):
            for name, go in runners.items():
                start = time.perf_counter()
                coverage[name] = go()
                times[name].append((time.perf_counter() - start) / args.generations)
        row = {
            "case": case,
            "evolax_s": statistics.median(times["evolax"]),
            "pyribs_s": statistics.median(times["pyribs"]),
            "evolax_coverage": coverage["evolax"],
            "pyribs_coverage": coverage["pyribs"],
        }
        rows.append(row)
        print(table([row]).splitlines()[-1], flush=True)
    write_results(
        args.out,
        "qd_speed",
        rows,
        table,
        config=vars(args) | {"out": str(args.out)},
        versions={"pyribs": version("ribs"), "jax": jax.__version__},
    )
    print(table(rows))


if __name__ == "__main__":
    main()
