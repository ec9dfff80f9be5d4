"""Against pymoo 0.6.2 (installed for `nox -s slow` only): non-dominated sorting, crowding
distance, hypervolume, IGD+ and the ZDT/DTLZ problems give pymoo's values."""

import jax.numpy as jnp
import numpy as np
import pytest

from evolax.pareto import crowding_distance, hypervolume, igd_plus, non_dominated_rank
from evolax.problems.multiobjective import MULTIOBJECTIVE_PROBLEMS, pareto_front

pytestmark = pytest.mark.slow
pymoo = pytest.importorskip("pymoo")

from pymoo.indicators.hv import HV  # noqa: E402
from pymoo.indicators.igd_plus import IGDPlus  # noqa: E402
from pymoo.operators.survival.rank_and_crowding.metrics import calc_crowding_distance  # noqa: E402
from pymoo.problems import get_problem  # noqa: E402
from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting  # noqa: E402


@pytest.mark.parametrize("m", [2, 3])
def test_fronts_and_crowding_match_pymoo(m):
    rng = np.random.default_rng(m)
    f = rng.normal(size=(20_000, m))
    fronts = NonDominatedSorting().do(-f)  # pymoo minimises
    expected = np.empty(len(f), int)
    for k, front in enumerate(fronts):
        expected[front] = k
    rank = non_dominated_rank(jnp.asarray(f))
    np.testing.assert_array_equal(rank, expected)
    small = rng.normal(size=(400, m))
    rank = np.asarray(non_dominated_rank(jnp.asarray(small)))
    distance = np.asarray(crowding_distance(jnp.asarray(small), jnp.asarray(rank)))
    for k in range(rank.max() + 1):
        members = np.flatnonzero(rank == k)
        if len(members) < 3:  # pymoo gives every point of a front of 1 or 2 an infinite one
            continue
        ours = distance[members] / m  # pymoo averages over objectives, we sum
        theirs = calc_crowding_distance(-small[members])
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)


@pytest.mark.parametrize(("name", "m"), [("zdt1", 2), ("zdt3", 2), ("dtlz2", 3)])
def test_hypervolume_and_igd_plus_match_pymoo(name, m):
    rng = np.random.default_rng(0)
    problem = get_problem(name, n_var=12, **({"n_obj": m} if name.startswith("dtlz") else {}))
    x = rng.uniform(size=(300, 12))
    f = problem.evaluate(x)
    reference = np.full(m, 1.1) if name.startswith("zdt") else np.full(m, 2.5)
    front = problem.pareto_front()
    ours = hypervolume(jnp.asarray(-f), jnp.asarray(-reference))
    np.testing.assert_allclose(float(ours), HV(ref_point=reference)(f), rtol=1e-5)
    ours = igd_plus(jnp.asarray(-f), jnp.asarray(-front))
    np.testing.assert_allclose(float(ours), IGDPlus(front)(f), rtol=1e-5)


@pytest.mark.parametrize("name", sorted(MULTIOBJECTIVE_PROBLEMS))
def test_problems_give_pymoo_s_objectives(name):
    rng = np.random.default_rng(1)
    kwargs = {"n_var": 12, "n_obj": 3} if name.startswith("dtlz") else {"n_var": 12}
    problem = get_problem(name, **kwargs)
    x = rng.uniform(problem.xl, problem.xu, size=(200, 12))
    extra = {"n_objectives": 3} if name.startswith("dtlz") else {}
    ours = MULTIOBJECTIVE_PROBLEMS[name](jnp.asarray(x, jnp.float32), **extra)
    np.testing.assert_allclose(np.asarray(ours), problem.evaluate(x), rtol=2e-4, atol=1e-4)
    if name in ("zdt1", "zdt2"):  # pymoo's DTLZ fronts are 91 points: hypervolumes differ
        front = pareto_front(name, 500, n_objectives=3)
        reference = np.full(front.shape[1], 1.1)
        theirs = problem.pareto_front()
        np.testing.assert_allclose(
            HV(ref_point=reference)(front), HV(ref_point=reference)(theirs), rtol=1e-2
        )
