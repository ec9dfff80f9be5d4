"""EvoX 1.4 (PyTorch, on the CPU) as the reference for the DE and PSO variants.

EvoX draws its random numbers inside ``step`` with ``torch``'s generator, so no update can be
replayed from the same samples; the check is the issue's other one: the final precision on BBOB
functions, median over 5 seeds, at most a stated factor worse than EvoX's, at the same number of
evaluations and from the same initial population distribution (``x0 ~ U[-4, 4]^d`` per run, the
population ``x0 + N(0, I)``, as :func:`evolax.coco.bbob_runs` and evolax's ``init_std = 1``
give). EvoX's search box is COCO's ``[-5, 5]^d``.

``nox -s slow`` installs ``evox`` and the CPU build of ``torch`` (the ``reference-torch`` extra);
the tests that use this module import it inside the test, so the default run never needs them.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np

from evolax.algorithms import Algorithm
from evolax.coco import bbob_runs
from evolax.problems.bbob import bbob_problem

FLOOR = 1e-8
"""Precisions below COCO's last target count as solved (``1e-8``)."""


def evox_precisions(
    make: Callable[..., object],
    function_id: int,
    dim: int,
    evaluations: int,
    seeds: int = 5,
    pop_size: int | None = None,
    population_attr: str | None = "pop",
) -> np.ndarray:
    """``[seeds]``: the best ``f - f_opt`` an EvoX algorithm reached on BBOB ``function_id``
    (instance 1) within ``evaluations`` evaluations, one run per seed.

    Args:
        make: ``make(lb=..., ub=...)`` builds the EvoX algorithm (``torch`` tensors ``[dim]``).
        evaluations: the budget; the run stops after the step that reaches it.
        pop_size: the population to overwrite with ``x0 + N(0, I)`` before the first step
            (``None``: keep EvoX's own initial population).
        population_attr: the algorithm's attribute holding the population.
    """
    import torch

    with jax.enable_x64(True):
        problem = bbob_problem(function_id, dim, 1)
        delta_f = jax.jit(lambda x: problem.delta_f(x))
        best = np.full(seeds, np.inf)
        for seed in range(seeds):
            torch.manual_seed(seed)
            rng = np.random.default_rng(seed)
            algorithm = make(lb=torch.full((dim,), -5.0), ub=torch.full((dim,), 5.0))
            if pop_size is not None and population_attr is not None:
                x0 = rng.uniform(-4.0, 4.0, dim)
                start = x0 + rng.standard_normal((pop_size, dim))
                setattr(algorithm, population_attr, torch.tensor(start, dtype=torch.float32))
            spent = 0

            def evaluate(population, seed=seed):
                nonlocal spent
                values = np.asarray(delta_f(population.detach().cpu().numpy().astype(np.float64)))
                spent += values.shape[0]
                best[seed] = min(best[seed], float(values.min()))
                return torch.tensor(values, dtype=population.dtype)

            algorithm.evaluate = evaluate
            algorithm.init_step()
            while spent < evaluations:
                algorithm.step()
    return best


def evolax_precisions(
    algorithm: Algorithm, function_id: int, dim: int, evaluations: int, seeds: int = 5
) -> np.ndarray:
    """``[seeds]``: the best ``f - f_opt`` evolax's ``algorithm`` reached on BBOB
    ``function_id`` (instance 1) within ``evaluations`` evaluations (whole generations)."""
    runs = bbob_runs(algorithm, dim, functions=[function_id], seeds=seeds, budget=evaluations / dim)
    return runs.precision[0, :, -1]


def assert_not_worse(ours: np.ndarray, reference: np.ndarray, factor: float) -> None:
    """evolax's median precision (floored at ``1e-8``) is at most ``factor`` times EvoX's.

    One-sided: EvoX's variants simplify their papers in places (documented by each test), and
    evolax, which follows the papers (checked draw by draw against transcriptions of their
    pseudocode in the default tests), often does much better; a broken update does worse."""
    a = max(float(np.median(ours)), FLOOR)
    b = max(float(np.median(reference)), FLOOR)
    assert a <= factor * b, (
        f"median precision {a:.3g} (evolax) is more than {factor}x EvoX's {b:.3g}; "
        f"evolax {np.sort(ours)}, EvoX {np.sort(reference)}"
    )
