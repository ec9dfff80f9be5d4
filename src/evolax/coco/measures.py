"""COCO's performance measures, on the host (numpy), from best-so-far precision curves.

A run *reaches* a target ``t`` at the first evaluation whose ``f - f_opt <= t``. Hansen et
al. (2021, "COCO: a platform ...", section 5) define:

- the **expected running time** to a target: the evaluations spent by all runs (successful
  runs until they reach it, the others their whole budget) divided by the number of
  successful runs; infinite when no run reaches it;
- the **ECDF** of runtimes: for a budget ``b``, the fraction of (run, target) pairs reached
  within ``b`` evaluations, over the targets :data:`TARGETS` (and here over functions too).
"""

from __future__ import annotations

import numpy as np

TARGETS = 10.0 ** np.linspace(2, -8, 51)
"""COCO's ``bbob`` targets for ECDFs: precisions ``10^2 .. 10^-8``, five per decade."""


def hitting_evaluations(
    precision: np.ndarray, evaluations: np.ndarray, targets: np.ndarray = TARGETS
) -> np.ndarray:
    """The evaluations each run needed to reach each target (``inf`` if it never did).

    Args:
        precision: ``[..., generations]``, the best ``f - f_opt`` so far after each generation
            (non-increasing).
        evaluations: ``[generations]``, the evaluations spent by the end of each generation.
        targets: ``[T]`` precisions.
    Returns:
        ``[..., T]``.
    """
    precision = np.asarray(precision, np.float64)
    reached = precision[..., None, :] <= np.asarray(targets)[:, None]  # [..., T, G]
    first = np.argmax(reached, axis=-1)
    spent = np.asarray(evaluations, np.float64)[first]
    return np.where(reached.any(axis=-1), spent, np.inf)


def expected_running_time(hits: np.ndarray, budget: float) -> np.ndarray:
    """ERT over runs: ``sum_runs min(hit, budget) / successes``.

    Args:
        hits: ``[runs, ...]``, from :func:`hitting_evaluations`.
        budget: the evaluations each run had.
    Returns:
        ``[...]``, ``inf`` where no run succeeded.
    """
    hits = np.asarray(hits, np.float64)
    successes = np.sum(np.isfinite(hits), axis=0)
    spent = np.sum(np.minimum(hits, budget), axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(successes > 0, spent / np.maximum(successes, 1), np.inf)


def ecdf(hits: np.ndarray, budgets: np.ndarray) -> np.ndarray:
    """The fraction of all (run, target, ...) entries of ``hits`` reached within each budget.

    Args:
        hits: any shape, from :func:`hitting_evaluations`.
        budgets: ``[B]`` evaluation counts.
    Returns:
        ``[B]`` in ``[0, 1]``, non-decreasing in the budget.
    """
    flat = np.sort(np.ravel(hits))
    return np.searchsorted(flat, np.asarray(budgets, np.float64), side="right") / flat.size
