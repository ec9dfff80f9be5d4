"""Restart strategies for CMA-ES: IPOP (Auger & Hansen, 2005) and BIPOP (Hansen, 2009).

A restart changes the population size, a static shape, so these are host-side drivers over
jitted segments: each run is one compiled ``lax.while_loop`` of ask / evaluate / tell that ends
when the algorithm's ``should_stop`` fires, its evaluation budget is spent or the target fitness
is reached. Segments are compiled once per (algorithm configuration, population size,
``fitness_fn``): numeric hyperparameters such as ``init_std`` are traced, so BIPOP's random
initial step sizes do not recompile.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from evolax.algorithms.base import Algorithm
from evolax.algorithms.cma.cma_family import default_pop_size
from evolax.types import Params, Population, PRNGKey
from evolax.validation import check_non_negative_int, check_positive, check_positive_int

AlgorithmFactory = Callable[[int, float], Algorithm]
"""``factory(pop_size, init_std) -> Algorithm`` with a ``should_stop(state)`` method; the
classes :class:`~evolax.algorithms.cma.cma_es.CMAES` and
:class:`~evolax.algorithms.cma.sep_cma_es.SepCMAES` are factories themselves."""


@dataclasses.dataclass(frozen=True)
class RestartRecord:
    """One run of a restart strategy.

    Attributes:
        regime: ``"ipop"``, or for BIPOP ``"first"`` (the first run, default population and
            step size), ``"large"`` (the doubling regime) or ``"small"``.
        pop_size: its population size.
        init_std: its initial step size.
        budget: the evaluations it was allowed.
        evaluations: the evaluations it used.
        generations: its number of generations.
        best_fitness: the best fitness it evaluated.
        stop_reasons: the termination criteria that fired, plus ``"maxiter"`` (its
            generations ran out: :func:`max_generations`, or a small run's length),
            ``"budget"`` (the evaluations left allowed no further generation) or
            ``"target"`` when those ended it.
    """

    regime: str
    pop_size: int
    init_std: float
    budget: int
    evaluations: int
    generations: int
    best_fitness: float
    stop_reasons: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class RestartResult:
    """Outcome of :func:`ipop` or :func:`bipop`.

    Attributes:
        best_solution: the best genome evaluated over all runs.
        best_fitness: its fitness.
        evaluations: evaluations used in total.
        restarts: one :class:`RestartRecord` per run, in order.
    """

    best_solution: Params
    best_fitness: float
    evaluations: int
    restarts: list[RestartRecord]


def _as_traced(algorithm: Algorithm) -> Algorithm:
    """Turn the module's Python-float fields into arrays, so they are traced, not static."""
    return jax.tree.map(
        lambda v: jnp.asarray(v, jnp.float32) if isinstance(v, float) else v, algorithm
    )


@eqx.filter_jit
def _run_segment(
    algorithm: Algorithm,
    fitness_fn: Callable[[Population], Any],
    x0: Params,
    key: PRNGKey,
    budget: jax.Array,
    target: jax.Array,
):
    """One run: ask / evaluate / tell until ``should_stop``, the budget or the target."""
    pop_size = algorithm.pop_size
    init_key, key = jax.random.split(key)
    state = algorithm.init(init_key, x0)

    def cond(carry):
        state, _, evals = carry
        return (
            ~algorithm.should_stop(state)  # type: ignore[attr-defined]
            & (evals + pop_size <= budget)
            & (state.best_fitness < target)
        )

    def body(carry):
        state, key, evals = carry
        key, ask_key, tell_key = jax.random.split(key, 3)
        population, state = algorithm.ask(ask_key, state)
        fitness = jnp.asarray(fitness_fn(population))
        if fitness.shape != (pop_size,):
            raise ValueError(
                f"fitness_fn must return shape (pop_size,) = ({pop_size},), got {fitness.shape}"
            )
        state, _ = algorithm.tell(tell_key, state, population, fitness)
        return state, key, evals + pop_size

    state, _, evals = jax.lax.while_loop(cond, body, (state, key, jnp.asarray(0, jnp.int32)))
    criteria = algorithm.termination_criteria(state)  # type: ignore[attr-defined]
    return state.best_genome, state.best_fitness, evals, state.generation, criteria


class _Runner:
    """Shared bookkeeping of the restart drivers."""

    def __init__(self, algorithm, fitness_fn, x0, max_evals, target_fitness):
        if not callable(algorithm):
            raise ValueError(
                "algorithm must be a factory (pop_size, init_std) -> Algorithm, such as CMAES, "
                f"got {algorithm!r}"
            )
        if not callable(fitness_fn):
            raise ValueError(f"fitness_fn must be callable, got {fitness_fn!r}")
        check_positive_int("max_evals", max_evals)
        self.factory, self.fitness_fn, self.x0 = algorithm, fitness_fn, x0
        self.max_evals = max_evals
        self.target = math.inf if target_fitness is None else float(target_fitness)
        self.evaluations = 0
        self.best_x: Params = None
        self.best_f = -math.inf
        self.records: list[RestartRecord] = []

    def dim(self, key: PRNGKey) -> int:
        x0 = self.x0(key) if callable(self.x0) else self.x0
        return ravel_pytree(x0)[0].shape[0]

    @property
    def done(self) -> bool:
        return self.evaluations >= self.max_evals or self.best_f >= self.target

    def run(self, key: PRNGKey, regime: str, pop_size: int, init_std: float, generations: int):
        """Run one restart of at most ``generations`` generations; returns its evaluations (0
        if the budget left allows no generation)."""
        left = self.max_evals - self.evaluations
        budget = min(generations * pop_size, left)
        if budget < pop_size:
            return 0
        algorithm = self.factory(pop_size, init_std)
        if not hasattr(algorithm, "should_stop") or not hasattr(algorithm, "termination_criteria"):
            raise ValueError(
                f"{type(algorithm).__name__} has no should_stop / termination_criteria; "
                "restarts need CMAES, SepCMAES or an algorithm with those methods"
            )
        x0_key, run_key = jax.random.split(key)
        x0 = self.x0(x0_key) if callable(self.x0) else self.x0
        best_x, best_f, evals, generations, criteria = jax.device_get(
            _run_segment(
                _as_traced(algorithm),
                self.fitness_fn,
                x0,
                run_key,
                jnp.asarray(budget, jnp.int32),
                jnp.asarray(self.target),  # float64 under jax_enable_x64
            )
        )
        evals, best_f = int(evals), float(best_f)
        reasons = tuple(name for name, fired in criteria.items() if bool(fired))
        if evals + pop_size > budget:
            reasons += ("budget" if budget + pop_size > left else "maxiter",)
        if best_f >= self.target:
            reasons += ("target",)
        self.records.append(
            RestartRecord(
                regime=regime,
                pop_size=pop_size,
                init_std=float(init_std),
                budget=budget,
                evaluations=evals,
                generations=int(generations),
                best_fitness=best_f,
                stop_reasons=reasons,
            )
        )
        self.evaluations += evals
        if best_f > self.best_f or self.best_x is None:
            self.best_x, self.best_f = best_x, best_f
        return evals

    def result(self) -> RestartResult:
        return RestartResult(
            best_solution=self.best_x,
            best_fitness=self.best_f,
            evaluations=self.evaluations,
            restarts=self.records,
        )


def max_generations(dim: int, pop_size: int) -> int:
    """pycma's default MaxIter, ``100 + floor(150 (n + 3)^2 / sqrt(lambda))`` generations.

    pycma evaluates it once, for the first run's population, and keeps it for every restart
    (``fmin`` passes the evaluated option on); :func:`ipop` and :func:`bipop` do the same.
    """
    return 100 + int(150 * (dim + 3) ** 2 // pop_size**0.5)


def small_regime_run(
    default_pop: int,
    large_pop: int,
    large_evals: int,
    generations: int,
    u1: float,
    u2: float,
    init_std: float,
) -> tuple[int, float, int]:
    """BIPOP's small-regime run (Hansen, 2009, and pycma's ``fmin(bipop=True)``).

    Args:
        default_pop: ``lambda_def``, the first run's population.
        large_pop: the latest large run's population (the paper's ``lambda_l / 2``).
        large_evals: the evaluations the large regime has used so far.
        generations: the MaxIter of every run (:func:`max_generations`).
        u1, u2: uniform draws in ``[0, 1)``.
        init_std: ``sigma_0``.

    Returns:
        ``(pop_size, init_std, generations)``: ``floor(lambda_def (lambda_l / (2
        lambda_def))^(u1^2))``, ``sigma_0 10^(-2 u2)``, and as many generations as half the
        large regime's evaluations last, rounded up (pycma's ``maxiter = 0.5 * sum(large) /
        popsize``, the run stopping once ``countiter >= maxiter``), at most MaxIter.
    """
    pop = max(2, int(default_pop * (large_pop / default_pop) ** (u1**2)))
    return pop, init_std * 10 ** (-2 * u2), min(generations, math.ceil(0.5 * large_evals / pop))


def _check_common(init_std, increase_factor, max_restarts, pop_size):
    check_positive("init_std", init_std)
    if not increase_factor > 1:
        raise ValueError(f"increase_factor must be greater than 1, got {increase_factor!r}")
    if max_restarts is not None:
        check_non_negative_int("max_restarts", max_restarts)
    if pop_size is not None:
        check_positive_int("pop_size", pop_size)


def ipop(
    algorithm: AlgorithmFactory,
    fitness_fn: Callable[[Population], Any],
    x0: Params | Callable[[PRNGKey], Params],
    key: PRNGKey,
    max_evals: int,
    *,
    pop_size: int | None = None,
    init_std: float = 1.0,
    increase_factor: float = 2.0,
    max_restarts: int | None = None,
    target_fitness: float | None = None,
) -> RestartResult:
    """IPOP-CMA-ES (Auger & Hansen, 2005, "A Restart CMA Evolution Strategy With Increasing
    Population Size"): run until a termination criterion fires, then restart with the
    population multiplied by ``increase_factor`` (2 in the paper) and the same ``init_std``.

    Args:
        algorithm: ``factory(pop_size, init_std) -> Algorithm`` (e.g. ``CMAES``).
        fitness_fn: maps a population (``x0``'s pytree with a leading pop axis; ``f32[pop, D]``
            for a flat ``x0``) to ``f32[pop]``, maximised; it is traced once per population size.
        x0: the initial mean, or ``x0(key) -> mean`` to draw a new one for every run (the paper
            draws it uniformly in the search region).
        key: PRNG key.
        max_evals: total evaluation budget.
        pop_size: population of the first run; ``None`` for :func:`default_pop_size`.
        init_std: initial step size of every run.
        increase_factor: population multiplier per restart, above 1.
        max_restarts: at most this many restarts after the first run (``None``: until the
            budget is spent).
        target_fitness: stop once a fitness ``>= target_fitness`` is evaluated.

    Every run also ends after :func:`max_generations` for the first run's population (pycma's
    MaxIter, which ``fmin`` evaluates once and keeps for the restarts).
    """
    _check_common(init_std, increase_factor, max_restarts, pop_size)
    runner = _Runner(algorithm, fitness_fn, x0, max_evals, target_fitness)
    key, dim_key = jax.random.split(key)
    dim = runner.dim(dim_key)
    lam = pop_size or default_pop_size(dim)
    generations = max_generations(dim, lam)
    restart = 0
    while not runner.done and (max_restarts is None or restart <= max_restarts):
        key, run_key = jax.random.split(key)
        if runner.run(run_key, "ipop", lam, init_std, generations) == 0:
            break
        lam, restart = int(lam * increase_factor + 0.5), restart + 1
    return runner.result()


def bipop(
    algorithm: AlgorithmFactory,
    fitness_fn: Callable[[Population], Any],
    x0: Params | Callable[[PRNGKey], Params],
    key: PRNGKey,
    max_evals: int,
    *,
    pop_size: int | None = None,
    init_std: float = 1.0,
    increase_factor: float = 2.0,
    max_restarts: int | None = None,
    target_fitness: float | None = None,
) -> RestartResult:
    """BIPOP-CMA-ES (Hansen, 2009, "Benchmarking a BI-Population CMA-ES on the BBOB-2009
    Function Testbed"): after a first run with the default population ``lambda_def``, restarts
    alternate between two regimes, choosing the small one while it has used fewer evaluations
    than the large one.

    - first run: ``lambda_def`` and ``init_std``; its evaluations count toward the small
      regime's budget, as in Hansen's code and pycma (``fmin(..., bipop=True)``), so the
      second run is always the large regime's first.
    - large: ``lambda = lambda_def * 2^i`` at its ``i``-th run (``i = 1, 2, ...``), step size
      ``init_std`` (IPOP).
    - small: :func:`small_regime_run`: ``lambda = floor(lambda_def (lambda_l /
      lambda_def)^(u1^2))`` with ``lambda_l`` the latest large population (the paper's
      ``lambda_l / 2`` of the next one), step size ``init_std * 10^(-2 u2)``, ``u1, u2 ~ U[0,
      1]``, for as many generations as half the large regime's evaluations so far last.

    Every run also ends after :func:`max_generations` (pycma's MaxIter for ``lambda_def``).
    pycma keeps ``lambda_def = 4 + 3 ln n`` unrounded when it doubles it (8.83 at ``n = 5``,
    so 17, 35, 70, ...); here, as in the paper, the integer default is doubled (16, 32, 64).

    Args: as :func:`ipop`; ``pop_size`` is ``lambda_def``, and ``max_restarts`` counts the
    large regime's runs only: the strategy ends when the ``max_restarts``-th ends, as pycma's
    ``fmin(..., restarts=max_restarts, bipop=True)`` (small runs "do not count").
    """
    _check_common(init_std, increase_factor, max_restarts, pop_size)
    runner = _Runner(algorithm, fitness_fn, x0, max_evals, target_fitness)
    key, dim_key = jax.random.split(key)
    dim = runner.dim(dim_key)
    lam_def = pop_size or default_pop_size(dim)
    generations = max_generations(dim, lam_def)
    large_runs, large_evals, small_evals = 0, 0, 0
    lam_large = lam_def
    while not runner.done and (
        max_restarts is None or large_runs < max_restarts or not runner.records
    ):
        key, run_key, draw_key = jax.random.split(key, 3)
        if not runner.records:
            evals = runner.run(run_key, "first", lam_def, init_std, generations)
            small_evals += evals
        elif small_evals >= large_evals:
            large_runs += 1
            lam_large = int(lam_def * increase_factor**large_runs + 0.5)
            evals = runner.run(run_key, "large", lam_large, init_std, generations)
            large_evals += evals
        else:
            u1, u2 = np.asarray(jax.random.uniform(draw_key, (2,)), np.float64)
            lam, std, gens = small_regime_run(
                lam_def, lam_large, large_evals, generations, float(u1), float(u2), init_std
            )
            evals = runner.run(run_key, "small", lam, std, gens)
            small_evals += evals
        if evals == 0:
            break
    return runner.result()
