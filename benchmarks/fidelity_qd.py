"""The ``qd`` part of ``benchmarks/fidelity.py``: MAP-Elites, CVT-MAP-Elites, CMA-ME (its three
rankings) and CMA-MAE against pyribs 0.12's, evolax in float32 and in float64.

Fontaine et al.'s linear-projection sphere (2020, section 5.1; pyribs' sphere tutorial) at
``--dim`` 20 with a 100 x 100 grid (CVT-MAP-Elites: 1,000 cells from one CVT both use), and a
held-out domain, the same projection of Rastrigin's function (as the CMA-ME paper's second
benchmark: ``f = 10 d + sum(x^2 - 10 cos(2 pi x))`` around the same shift, normalised to
``[0, 100]`` by its value at the box's far corner). Both libraries run the same settings: 15
emitters of 36 candidates from ``x0 = 0`` with ``sigma0`` 0.5 (MAP-Elites: one iso+line
emitter of 540, iso 0.5 and line 0.2), ``--generations`` batches of 540 evaluations, and the
archive's QD score (the sum of the elites' objectives, offset 0) and coverage after them,
medians over ``--seeds``; pyribs in float64 as it runs, evolax's whole program in float32 and
in float64 (``jax_enable_x64`` with a float64 ``x0``).
"""

from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from results_table import RESULTS, load_note, write_results

QD_ALGORITHMS = (
    "map_elites",
    "cvt_map_elites",
    "cma_me_improvement",
    "cma_me_optimizing",
    "cma_me_random_direction",
    "cma_mae",
)
QD_DOMAINS = ("sphere", "rastrigin")
NAMES = {
    "map_elites": "MAP-Elites",
    "cvt_map_elites": "CVT-MAP-Elites",
    "cma_me_improvement": "CMA-ME, improvement",
    "cma_me_optimizing": "CMA-ME, optimizing",
    "cma_me_random_direction": "CMA-ME, random direction",
    "cma_mae": "CMA-MAE",
}
EMITTERS, BATCH, CELLS, SIGMA0 = 15, 36, 1000, 0.5


def rastrigin_linear_projection(x):
    """The linear-projection benchmark on Rastrigin's function: fitness in ``[0, 100]`` (100 at
    ``x_i = 2.048``), the descriptors of :func:`evolax.problems.sphere_linear_projection`."""
    from evolax.problems import sphere_linear_projection
    from evolax.problems.linear_projection import BOUND

    _, descriptors = sphere_linear_projection(x)
    x = jnp.asarray(x, jnp.result_type(x, jnp.float32))
    dim, shift = x.shape[-1], 0.4 * BOUND

    def raw(z):
        return 10.0 * dim + jnp.sum(z**2 - 10.0 * jnp.cos(2.0 * jnp.pi * z), axis=-1)

    worst = raw(jnp.full(dim, -BOUND - shift, x.dtype))
    return 100.0 * (1.0 - raw(x - shift) / worst), descriptors


def _problem(domain: str):
    from evolax.problems import sphere_linear_projection

    return sphere_linear_projection if domain == "sphere" else rastrigin_linear_projection


def _ours(name: str, dim: int, centroids: np.ndarray):
    from evolax.algorithms import CMAMAE, CMAME, ArchiveMAPElites
    from evolax.problems import linear_projection_bound
    from evolax.qd import CVTArchive, GridArchive

    bound = linear_projection_bound(dim)
    low, high = (-bound,) * 2, (bound,) * 2
    pop = EMITTERS * BATCH
    if name in ("map_elites", "cvt_map_elites"):
        archive = (
            GridArchive((100, 100), low, high)
            if name == "map_elites"
            else CVTArchive(centroids, low, high)
        )
        return ArchiveMAPElites(pop, archive, mutation_std=0.5, line_std=0.2, init_std=SIGMA0)
    if name == "cma_mae":
        return CMAMAE(pop, (100, 100), low, high, n_emitters=EMITTERS, init_std=SIGMA0)
    ranking = name.removeprefix("cma_me_")
    return CMAME(pop, GridArchive((100, 100), low, high), emitters=(ranking,) * EMITTERS,
                 init_std=SIGMA0)  # fmt: skip


def evolax_scores(name, domain, dim, generations, seeds, centroids, dtype) -> dict:
    """QD score and coverage per seed, one jitted program vmapped over seeds."""
    from evolax import evolve

    problem = _problem(domain)

    def objective(x):
        fitness, descriptors = problem(x)
        return fitness, {"descriptors": descriptors}

    algo = _ours(name, dim, centroids)
    with jax.enable_x64(dtype == "float64"):
        x0 = jnp.zeros(dim, dtype)
        run = jax.jit(jax.vmap(lambda k: evolve(algo, objective, x0, k, generations)[1]))
        metrics = run(jax.random.split(jax.random.key(1), seeds))
        return {
            "qd_score": np.asarray(metrics["qd_score"][:, -1], np.float64).tolist(),
            "coverage": np.asarray(metrics["coverage"][:, -1], np.float64).tolist(),
        }


def ribs_scores(name, domain, dim, generations, seeds, centroids) -> dict:
    """pyribs' QD score and coverage per seed (seeds 0 to ``seeds - 1``)."""
    import ribs

    from evolax.problems import linear_projection_bound

    problem = _problem(domain)
    bound = linear_projection_bound(dim)
    ranges = [(-bound, bound)] * 2
    out: dict = {"qd_score": [], "coverage": []}
    for seed in range(seeds):
        grid = dict(solution_dim=dim, dims=(100, 100), ranges=ranges, seed=seed)
        result = None
        if name in ("map_elites", "cvt_map_elites"):
            archive = (
                ribs.archives.GridArchive(**grid)
                if name == "map_elites"
                else ribs.archives.CVTArchive(
                    solution_dim=dim, centroids=centroids, ranges=ranges, seed=seed
                )
            )
            emitters = [
                ribs.emitters.IsoLineEmitter(
                    archive,
                    x0=np.zeros(dim),
                    iso_sigma=0.5,
                    line_sigma=0.2,
                    batch_size=EMITTERS * BATCH,
                    seed=seed,
                )
            ]
        else:
            if name == "cma_mae":
                archive = ribs.archives.GridArchive(**grid, learning_rate=0.01, threshold_min=0.0)
                result = ribs.archives.GridArchive(**grid)
                rules = dict(ranker="imp", selection_rule="mu", restart_rule="basic")
            else:
                archive = ribs.archives.GridArchive(**grid)
                ranker = {"improvement": "2imp", "optimizing": "2obj", "random_direction": "2rd"}
                rules = dict(
                    ranker=ranker[name.removeprefix("cma_me_")],
                    selection_rule="filter",
                    restart_rule="no_improvement",
                )
            emitters = [
                ribs.emitters.EvolutionStrategyEmitter(
                    archive,
                    x0=np.zeros(dim),
                    sigma0=SIGMA0,
                    batch_size=BATCH,
                    seed=1000 * seed + i,
                    **rules,
                )
                for i in range(EMITTERS)
            ]
        scheduler = ribs.schedulers.Scheduler(archive, emitters, result_archive=result)
        for _ in range(generations):
            x = scheduler.ask()
            fitness, descriptors = problem(np.asarray(x, np.float64))
            scheduler.tell(np.asarray(fitness, np.float64), np.asarray(descriptors, np.float64))
        stats = (result or archive).stats
        out["qd_score"].append(float(stats.qd_score))
        out["coverage"].append(float(stats.coverage))
    return out


def _qd_row(name: str, domain: str, dim: int, generations: int, seeds: int) -> dict:
    """One row: evolax float32, float64 and pyribs, scored per seed."""
    jax.config.update("jax_enable_x64", True)  # a fresh worker process
    from evolax.problems import linear_projection_bound
    from evolax.qd import cvt_centroids

    bound = linear_projection_bound(dim)
    centroids = np.asarray(
        cvt_centroids(jax.random.key(0), CELLS, (-bound,) * 2, (bound,) * 2), np.float64
    )
    row: dict = {"algorithm": name, "domain": domain, "dim": dim, "generations": generations}
    start = time.perf_counter()
    for dtype in ("float32", "float64"):
        row[dtype] = evolax_scores(name, domain, dim, generations, seeds, centroids, dtype)
    row["evolax_s"] = time.perf_counter() - start
    start = time.perf_counter()
    row["pyribs"] = ribs_scores(name, domain, dim, generations, seeds, centroids)
    row["pyribs_s"] = time.perf_counter() - start
    row["load"] = os.getloadavg()[0]
    return row


def qd_table(rows: list[dict], cases: int = 0) -> str:
    """The ``qd`` table: medians over seeds, and float32 over pyribs."""
    lines = [
        "| domain | algorithm | QD score float32 | float64 | pyribs | ratio | "
        "coverage float32 | float64 | pyribs | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        med = {
            k: {i: float(np.median(r[k][i])) for i in ("qd_score", "coverage")}
            for k in ("float32", "float64", "pyribs")
        }
        cells = []
        for item, fmt in (("qd_score", "{:,.0f}"), ("coverage", "{:.3f}")):
            values = [med[k][item] for k in ("float32", "float64", "pyribs")]
            ratio = values[0] / values[2] if values[2] > 0 else float("nan")
            flag = " **!**" if not 1 / 1.1 <= ratio <= 1.1 else ""
            cells += [fmt.format(v) for v in values] + [f"{ratio:.3f}{flag}"]
        domain = f"{r['domain']}, d = {r['dim']}, {r['generations']} x {EMITTERS * BATCH}"
        lines.append(f"| {domain} | {NAMES[r['algorithm']]} | " + " | ".join(cells) + " |")
    seeds = len(rows[0]["pyribs"]["qd_score"]) if rows else 0
    lines.append(
        f"\nMedians over {seeds} seeds of the archive's QD score (the sum of its elites' "
        "objectives, in [0, 100] each) and coverage (the share of its 10,000 cells, "
        "CVT-MAP-Elites' 1,000, holding an elite) after the same evaluations; ratio: evolax "
        "float32 over pyribs 0.12, **!** outside 1.1x. CMA-MAE is scored by its result archive "
        "(pyribs' `result_archive`, evolax's best elites)."
    )
    if cases > len(rows):
        lines.append(f"\nA partial run: {len(rows)} of the {cases} cases asked for.")
    return "\n".join(lines) + load_note(rows)


def qd(args) -> None:
    import json
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    cases = [(d, a) for d in args.domains for a in args.algorithms]
    done: dict = {}
    context = multiprocessing.get_context("spawn")  # JAX is not fork-safe
    with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
        futures = {
            pool.submit(_qd_row, a, d, args.dim, args.generations, args.seeds): (d, a)
            for d, a in cases
        }
        for future in as_completed(futures):
            done[futures[future]] = row = future.result()
            print(json.dumps(row), flush=True)
            rows = [done[c] for c in cases if c in done]
            write_results(
                RESULTS / "fidelity_qd.json",
                "fidelity qd",
                rows,
                lambda rows: qd_table(rows, cases=len(cases)),
                args=vars(args),
            )
    print(qd_table([done[c] for c in cases]))


def add_parser(sub) -> None:
    """The ``qd`` subcommand's options."""
    p = sub.add_parser("qd")
    p.add_argument("--domains", nargs="+", default=list(QD_DOMAINS))
    p.add_argument("--algorithms", nargs="+", default=list(QD_ALGORITHMS))
    p.add_argument("--dim", type=int, default=20)
    p.add_argument("--generations", type=int, default=300)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--jobs", type=int, default=1, help="rows computed at once, in processes")
