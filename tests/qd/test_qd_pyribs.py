"""Each QD algorithm pyribs 0.12 also has, against it on the linear-projection sphere
(d = 20, a 100 x 100 grid or 1,000 CVT cells): the median QD-score over 5 seeds after the same
evaluations is within [0.9, 1.15] of pyribs'. pyribs runs the same settings: emitters of 36
candidates from x0 = 0, sigma0 0.5 (MAP-Elites: iso 0.5, line 0.2, batches of 540)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms import CMAMAE, CMAME, ArchiveMAPElites
from evolax.problems import linear_projection_bound, sphere_linear_projection
from evolax.qd import CVTArchive, GridArchive, cvt_centroids
from helpers import qd_run

pytestmark = pytest.mark.slow
ribs = pytest.importorskip("ribs")

DIM, EMITTERS, BATCH, GENERATIONS, SEEDS = 20, 15, 36, 300, 5
BOUND = linear_projection_bound(DIM)
RANGES = [(-BOUND, BOUND)] * 2
CENTROIDS = np.asarray(cvt_centroids(jax.random.key(0), 1000, (-BOUND,) * 2, (BOUND,) * 2))


def ours(name):
    grid = GridArchive((100, 100), (-BOUND,) * 2, (BOUND,) * 2)
    pop = EMITTERS * BATCH
    if name == "map_elites":
        return ArchiveMAPElites(pop, grid, mutation_std=0.5, line_std=0.2, init_std=0.5)
    if name == "cvt_map_elites":
        cvt = CVTArchive(CENTROIDS, (-BOUND,) * 2, (BOUND,) * 2)
        return ArchiveMAPElites(pop, cvt, mutation_std=0.5, line_std=0.2, init_std=0.5)
    if name == "cma_mae":
        return CMAMAE(pop, (100, 100), (-BOUND,) * 2, (BOUND,) * 2, n_emitters=EMITTERS)
    kind = name.removeprefix("cma_me_")
    return CMAME(pop, grid, emitters=(kind,) * EMITTERS, init_std=0.5)


def our_scores(name):
    run = qd_run(ours(name), sphere_linear_projection, jnp.zeros(DIM), GENERATIONS)
    keys = jax.random.split(jax.random.key(1), SEEDS)
    return np.asarray(jax.jit(jax.vmap(lambda k: run(k)[1]["qd_score"][-1]))(keys))


def ribs_objective(x):
    fitness, descriptors = sphere_linear_projection(x)
    return np.asarray(fitness, np.float64), np.asarray(descriptors, np.float64)


def ribs_score(name, seed):
    grid = dict(solution_dim=DIM, dims=(100, 100), ranges=RANGES, seed=seed)
    result = None
    if name in ("map_elites", "cvt_map_elites"):
        if name == "map_elites":
            archive = ribs.archives.GridArchive(**grid)
        else:
            archive = ribs.archives.CVTArchive(
                solution_dim=DIM, centroids=CENTROIDS, ranges=RANGES, seed=seed
            )
        emitters = [
            ribs.emitters.IsoLineEmitter(
                archive,
                x0=np.zeros(DIM),
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
                x0=np.zeros(DIM),
                sigma0=0.5,
                batch_size=BATCH,
                seed=1000 * seed + i,
                **rules,
            )
            for i in range(EMITTERS)
        ]
    scheduler = ribs.schedulers.Scheduler(archive, emitters, result_archive=result)
    for _ in range(GENERATIONS):
        x = scheduler.ask()
        scheduler.tell(*ribs_objective(x))
    return float((result or archive).stats.qd_score)


@pytest.mark.parametrize(
    "name",
    [
        "map_elites",
        "cvt_map_elites",
        "cma_me_improvement",
        "cma_me_optimizing",
        "cma_me_random_direction",
        "cma_mae",
    ],
)
def test_qd_score_within_ratio_of_pyribs(name):
    mine = float(np.median(our_scores(name)))
    theirs = float(np.median([ribs_score(name, seed) for seed in range(SEEDS)]))
    print(f"{name}: evolax {mine:.0f}, pyribs {theirs:.0f}, ratio {mine / theirs:.3f}")
    assert 0.9 <= mine / theirs <= 1.15
