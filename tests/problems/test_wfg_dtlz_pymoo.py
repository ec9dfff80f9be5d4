"""DTLZ5-7 and WFG1-9 against pymoo 0.6.2 at random points of their domains (float64, relative
1e-12), and their sampled fronts against pymoo's (slow). pymoo is a test-only reference."""

import jax
import numpy as np
import pytest

from evolax.problems.multiobjective import MULTIOBJECTIVE_PROBLEMS, domain, pareto_front
from evolax.problems.wfg import wfg1

pytest.importorskip("pymoo")
from pymoo.problems import get_problem

NEW = ["dtlz5", "dtlz6", "dtlz7"] + [f"wfg{i}" for i in range(1, 10)]


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("m", [2, 3])
def test_values_match_pymoo(name, m):
    n = 14 if name.startswith("wfg") else 12  # WFG: k = 4 (or 2 (m - 1)), l = 10 or 8
    theirs = get_problem(name, n_var=n, n_obj=m)
    lower, upper = domain(name, n)
    np.testing.assert_array_equal([lower, upper], [theirs.xl, theirs.xu])
    x = lower + (upper - lower) * np.random.default_rng(m).random((64, n))
    if name.startswith("wfg") and name != "wfg1":  # on the front too (WFG1's is ill-posed there)
        x[:16] = theirs._calc_pareto_set_interior(16)
    with jax.enable_x64(True):
        ours = np.asarray(MULTIOBJECTIVE_PROBLEMS[name](x, n_objectives=m))
    np.testing.assert_allclose(ours, theirs.evaluate(x), rtol=1e-12, atol=1e-12)


def test_wfg_arguments_are_checked():
    with pytest.raises(ValueError, match=r"^wfg1: k must be a positive multiple"):
        wfg1(np.zeros(10), n_objectives=3, k=3)
    with pytest.raises(ValueError, match=r"^wfg2: z must have shape \(\.\.\., n\) with n - k"):
        MULTIOBJECTIVE_PROBLEMS["wfg2"](np.zeros(9))
    assert wfg1(np.zeros((5, 3, 12)), n_objectives=3).shape == (5, 3, 3)


@pytest.mark.slow
@pytest.mark.parametrize("name", NEW)
def test_fronts_cover_pymoos(name):
    """Each point of pymoo's front (its own sampling of the Pareto set) lies on ours: the IGD+
    from ours to pymoo's is below 1e-3, two objectives."""
    from pymoo.indicators.igd_plus import IGDPlus

    n = 24 if name.startswith("wfg") else 12
    theirs = get_problem(name, n_var=n, n_obj=2).pareto_front()
    ours = pareto_front(name, 2000, n_objectives=2)
    assert IGDPlus(theirs)(ours) < 1e-3
