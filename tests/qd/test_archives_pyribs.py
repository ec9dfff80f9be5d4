"""The grid and CVT archives against pyribs 0.12's: the same batches give the same statuses,
values, elites and thresholds, with MAP-Elites' acceptance and with CMA-MAE's annealing."""

import jax.numpy as jnp
import numpy as np
import pytest

from evolax.qd import CVTArchive, GridArchive

pytestmark = pytest.mark.slow
ribs = pytest.importorskip("ribs")


def batches(rng, n_batches=6, pop=64, dim=3, n_desc=2):
    for _ in range(n_batches):
        solution = rng.normal(size=(pop, dim)).astype(np.float32)
        objective = rng.integers(0, 20, size=pop).astype(np.float32)  # ties, repeated cells
        measures = rng.uniform(-1.2, 1.2, size=(pop, n_desc)).astype(np.float32)
        yield solution, objective, measures


def contents(archive):
    data = archive.data()
    order = np.argsort(data["index"])
    return {k: np.asarray(data[k])[order] for k in ("index", "objective", "threshold", "solution")}


@pytest.mark.parametrize("learning_rate, threshold_min", [(1.0, -np.inf), (0.1, 0.0), (1.0, 5.0)])
@pytest.mark.parametrize("kind", ["grid", "cvt"])
def test_add_matches_pyribs(kind, learning_rate, threshold_min):
    rng = np.random.default_rng(1)
    rules = dict(learning_rate=learning_rate, threshold_min=threshold_min)
    if kind == "grid":
        theirs = ribs.archives.GridArchive(
            solution_dim=3, dims=(8, 6), ranges=[(-1, 1), (-1, 1)], dtype=np.float32, **rules
        )
        ours = GridArchive((8, 6), (-1, -1), (1, 1), **rules)
    else:
        centroids = rng.uniform(-1, 1, size=(40, 2)).astype(np.float32)
        theirs = ribs.archives.CVTArchive(
            solution_dim=3,
            centroids=centroids,
            ranges=[(-1, 1), (-1, 1)],
            dtype=np.float32,
            **rules,
        )
        ours = CVTArchive(centroids, (-1, -1), (1, 1), **rules)
    state = ours.init(jnp.zeros(3))
    for solution, objective, measures in batches(rng):
        info = theirs.add(solution, objective, measures)
        state, added = ours.add(state, jnp.asarray(solution), jnp.asarray(objective), measures)
        np.testing.assert_array_equal(added.status, info["status"])
        np.testing.assert_allclose(added.value, info["value"], rtol=1e-6, atol=1e-6)
        expected = contents(theirs)
        cells = np.flatnonzero(np.asarray(state.occupied))
        np.testing.assert_array_equal(cells, expected["index"])
        np.testing.assert_array_equal(np.asarray(state.fitness)[cells], expected["objective"])
        np.testing.assert_allclose(
            np.asarray(state.threshold)[cells], expected["threshold"], rtol=1e-6, atol=1e-6
        )
        np.testing.assert_array_equal(np.asarray(state.genomes)[cells], expected["solution"])
