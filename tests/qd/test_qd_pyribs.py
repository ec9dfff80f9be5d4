"""Each QD algorithm pyribs 0.12 also has, against it on the linear-projection sphere
(d = 20, a 100 x 100 grid or 1,000 CVT cells): the median QD-score over 5 seeds after the same
evaluations is within [0.9, 1.15] of pyribs'. pyribs runs the same settings: emitters of 36
candidates from x0 = 0, sigma0 0.5 (MAP-Elites: iso 0.5, line 0.2, batches of 540)."""

import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from evolax.problems import linear_projection_bound
from evolax.qd import cvt_centroids

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import fidelity_qd

pytestmark = pytest.mark.slow
ribs = pytest.importorskip("ribs")

DIM, GENERATIONS, SEEDS = 20, 300, 5
BOUND = linear_projection_bound(DIM)
CENTROIDS = np.asarray(cvt_centroids(jax.random.key(0), 1000, (-BOUND,) * 2, (BOUND,) * 2))


def scores(name: str) -> tuple[list[float], list[float]]:
    """evolax's and pyribs' QD scores per seed, as the fidelity report's ``qd`` part runs them
    (``benchmarks/fidelity_qd.py``): evolax in float32, pyribs in float64."""
    ours = fidelity_qd.evolax_scores(name, "sphere", DIM, GENERATIONS, SEEDS, CENTROIDS, "float32")
    theirs = fidelity_qd.ribs_scores(name, "sphere", DIM, GENERATIONS, SEEDS, CENTROIDS)
    return ours["qd_score"], theirs["qd_score"]


@pytest.mark.parametrize("name", fidelity_qd.QD_ALGORITHMS)
def test_qd_score_within_ratio_of_pyribs(name):
    ours, theirs = scores(name)
    mine, reference = float(np.median(ours)), float(np.median(theirs))
    print(f"{name}: evolax {mine:.0f}, pyribs {reference:.0f}, ratio {mine / reference:.3f}")
    assert 0.9 <= mine / reference <= 1.15
