"""NSGA-II against pymoo 0.6.2's (installed for `nox -s slow` only): the hypervolume after the
same number of evaluations (pop 100, SBX eta 15 p 0.9, polynomial mutation eta 20) is within
2% of pymoo's, median over 5 seeds, on ZDT1-3 (30 variables), DTLZ2 (3 objectives, 12
variables) and ZDT6 (10 variables). pymoo mutates a child with probability 0.9, then each
variable with 1/n: evolax's ``mutation_rate`` is set to 0.9/n. pymoo also discards duplicate
children and breeds again; evolax keeps them."""

from functools import partial

import numpy as np
import pytest

from evolax.algorithms.multiobjective.nsga2 import NSGA2
from pymoo_reference import evolax_hypervolumes, pymoo_hypervolumes

pytestmark = pytest.mark.slow
pytest.importorskip("pymoo")

from pymoo.algorithms.moo.nsga2 import NSGA2 as PymooNSGA2  # noqa: E402

SEEDS, POP = 5, 100
CASES = {  # name: (variables, objectives, generations)
    "zdt1": (30, 2, 200),
    "zdt2": (30, 2, 200),
    "zdt3": (30, 2, 200),
    "dtlz2": (12, 3, 250),
    # biased, unevenly dense front, optimum on the lower bound: before SBX and polynomial
    # mutation were exact in float32 near the bounds, evolax reached 0.453 against 0.495
    "zdt6": (10, 2, 250),
}


def hypervolumes(name: str) -> tuple[np.ndarray, np.ndarray]:
    """evolax's and pymoo's hypervolumes per seed (reference point 1.1)."""
    n_var, m, generations = CASES[name]
    algo = NSGA2(pop_size=POP, n_objectives=m, lower=0.0, upper=1.0, mutation_rate=0.9 / n_var)
    ours = evolax_hypervolumes(algo, name, n_var, generations, SEEDS, 1.1)
    make = partial(PymooNSGA2, pop_size=POP)
    return ours, pymoo_hypervolumes(make, name, n_var, m, generations, SEEDS, 1.1)


@pytest.mark.parametrize("name", sorted(CASES))
def test_hypervolume_within_two_percent_of_pymoo(name):
    ours, theirs = (np.median(h) for h in hypervolumes(name))
    assert abs(ours - theirs) <= 0.02 * theirs, (ours, theirs)
