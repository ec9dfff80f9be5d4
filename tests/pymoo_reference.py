"""pymoo 0.6.2 as the reference for the multi-objective algorithms: the hypervolume each
library reaches on a ZDT or DTLZ problem after the same number of evaluations, over seeds.

``nox -s slow`` installs pymoo (the ``reference-qd-mo`` extra); pymoo is imported inside the
functions, so the default run never needs it.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from evolax.algorithms import Algorithm, evolve
from evolax.pareto import hypervolume
from evolax.problems.multiobjective import MULTIOBJECTIVE_PROBLEMS


def evolax_hypervolumes(
    algo: Algorithm, name: str, n_var: int, generations: int, seeds: int, reference: float
) -> np.ndarray:
    """The hypervolume above ``reference`` (in every minimised objective) of ``algo``'s
    population after ``generations`` on problem ``name``, per seed (one vmapped program).
    pymoo counts its first population as generation 1: the same ``pop * generations``
    evaluations."""
    m = algo.objectives_shape[0]
    extra = {"n_objectives": m} if name.startswith("dtlz") else {}
    problem = MULTIOBJECTIVE_PROBLEMS[name]

    def run(key):
        objective = lambda x: -problem(x, **extra)  # noqa: E731
        state, _ = evolve(algo, objective, jnp.zeros(n_var), key, generations)
        return hypervolume(state.fitness, jnp.full(m, -reference))

    keys = jax.random.split(jax.random.key(0), seeds)
    return np.asarray(jax.jit(jax.vmap(run))(keys))


def pymoo_hypervolumes(
    make_algorithm: Callable[[], object],
    name: str,
    n_var: int,
    m: int,
    generations: int,
    seeds: int,
    reference: float,
    evaluations: int | None = None,
) -> np.ndarray:
    """The same for pymoo's algorithm (``make_algorithm()``, seeds 0 to ``seeds - 1``);
    with ``evaluations``, each run must have made exactly that many."""
    from pymoo.indicators.hv import HV
    from pymoo.optimize import minimize
    from pymoo.problems import get_problem

    kwargs = {"n_var": n_var, **({"n_obj": m} if name.startswith("dtlz") else {})}
    values = []
    for seed in range(seeds):
        result = minimize(
            get_problem(name, **kwargs),
            make_algorithm(),
            ("n_gen", generations),
            seed=seed,
            verbose=False,
        )
        if evaluations is not None:
            assert result.algorithm.evaluator.n_eval == evaluations
        values.append(HV(ref_point=np.full(m, reference))(result.pop.get("F")))
    return np.asarray(values)
