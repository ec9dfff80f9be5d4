"""Every run of one algorithm on BBOB functions as one compiled program.

A run is a (function, instance, seed) triple: the algorithm starts at ``x0 ~ U[-init_range,
init_range]^dim`` (COCO's region of interest is ``[-5, 5]^dim``) and spends ``budget * dim``
evaluations, a whole number of generations. The runs' algorithm states are ``vmap``-ped
together, so the algorithm is compiled once for all functions; each generation evaluates each
function on its own runs only. Everything runs in float64 (``jax.enable_x64``), so precisions
down to ``1e-8`` are resolved for every ``f_opt``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from evolax.algorithms import Algorithm
from evolax.problems.bbob import bbob_problem
from evolax.validation import check_positive, check_positive_int


@dataclasses.dataclass(frozen=True)
class BBOBRuns:
    """The best precision of every run after each generation.

    Attributes:
        precision: ``f64[functions, runs, generations]``, ``min f - f_opt`` over the
            evaluations so far; runs are ordered instance-major (``instances x seeds``).
        functions: the BBOB function ids, in the order of ``precision``'s first axis.
        instances: COCO instance numbers.
        seeds: the number of seeds per instance.
        dim: the dimension.
        pop_size: evaluations per generation.
    """

    precision: np.ndarray
    functions: tuple[int, ...]
    instances: tuple[int, ...]
    seeds: int
    dim: int
    pop_size: int

    @property
    def evaluations(self) -> np.ndarray:
        """``[generations]``: the evaluations spent by the end of each generation."""
        return self.pop_size * np.arange(1, self.precision.shape[-1] + 1, dtype=np.float64)

    @property
    def budget(self) -> float:
        """The evaluations each run spent."""
        return float(self.evaluations[-1])


def bbob_runs(
    algorithm: Algorithm,
    dim: int,
    *,
    functions: Sequence[int] = tuple(range(1, 25)),
    instances: Sequence[int] = (1,),
    seeds: int = 5,
    budget: float = 1000.0,
    init_range: float = 4.0,
    seed: int = 0,
) -> BBOBRuns:
    """Run ``algorithm`` on every (function, instance, seed) for ``budget * dim`` evaluations.

    Args:
        algorithm: any evolution algorithm without extra ``tell`` inputs.
        dim: the dimension, ``>= 2``.
        functions: BBOB function ids in 1..24.
        instances: COCO instance numbers (``>= 1``).
        seeds: runs per instance.
        budget: evaluations per dimension (rounded up to whole generations).
        init_range: ``x0`` is uniform in ``[-init_range, init_range]^dim``.
        seed: the base of every run's key (``fold_in`` of function, instance and seed index).
    Returns:
        The runs' precision curves.
    """
    if algorithm.extra_inputs:
        raise ValueError(
            f"algorithm must need nothing besides fitness to tell; {type(algorithm).__name__} "
            f"needs {', '.join(algorithm.extra_inputs)}"
        )
    check_positive_int("dim", dim)
    check_positive_int("seeds", seeds)
    check_positive("budget", budget)
    check_positive("init_range", init_range)
    if not functions or not instances:
        raise ValueError("functions and instances must not be empty")
    functions, instances = tuple(int(f) for f in functions), tuple(int(i) for i in instances)
    pop = algorithm.pop_size
    generations = max(1, math.ceil(budget * dim / pop))
    with jax.enable_x64(True):
        problems = [
            jax.tree.map(
                lambda *leaves: jnp.stack(leaves),
                *[bbob_problem(f, dim, i) for i in instances for _ in range(seeds)],
            )
            for f in functions
        ]
        keys = jnp.stack(
            [run_key(seed, f, i, s) for f in functions for i in instances for s in range(seeds)]
        )
        best = _run(algorithm, problems, keys, dim, init_range, generations)
        precision = np.asarray(jax.device_get(best), np.float64)  # [G, N]
    runs = len(instances) * seeds
    return BBOBRuns(
        precision=precision.T.reshape(len(functions), runs, generations),
        functions=functions,
        instances=instances,
        seeds=seeds,
        dim=dim,
        pop_size=pop,
    )


def run_key(seed: int, function_id: int, instance: int, index: int) -> jax.Array:
    """The key of one run: ``key(seed)`` folded with the function, the instance and the seed's
    index. The run draws ``x0`` and its ``init`` key from ``split(fold_in(key,
    generations))`` and generation ``g``'s ask and tell keys from ``split(fold_in(key, g))``."""
    key = jax.random.fold_in(jax.random.key(seed), function_id)
    return jax.random.fold_in(jax.random.fold_in(key, instance), index)


def _run(algorithm, problems, keys, dim, init_range, generations):
    """``[generations, runs]``: every run's best precision after each generation."""
    runs_per_function = keys.shape[0] // len(problems)

    def evaluate(population):  # [N, pop, dim] -> [N, pop], f - f_opt
        parts = [
            jax.vmap(lambda p, x: p.delta_f(x))(
                problem,
                population[k * runs_per_function : (k + 1) * runs_per_function],
            )
            for k, problem in enumerate(problems)
        ]
        return jnp.concatenate(parts)

    def start(key):
        x0_key, init_key = jax.random.split(jax.random.fold_in(key, generations))
        x0 = jax.random.uniform(x0_key, (dim,), jnp.float64, -init_range, init_range)
        return algorithm.init(init_key, x0)

    def generation(carry, g):
        states, best = carry
        step_keys = jax.vmap(lambda k: jax.random.split(jax.random.fold_in(k, g)))(keys)
        population, states = jax.vmap(algorithm.ask)(step_keys[:, 0], states)
        delta = evaluate(population)
        states, _ = jax.vmap(algorithm.tell)(step_keys[:, 1], states, population, -delta)
        finite = jnp.where(jnp.isfinite(delta), delta, jnp.inf)
        best = jnp.minimum(best, jnp.min(finite, axis=1))
        return (states, best), best

    @jax.jit
    def run(keys):
        states = jax.vmap(start)(keys)
        best = jnp.full(keys.shape[0], jnp.inf, jnp.float64)
        _, curves = jax.lax.scan(generation, (states, best), jnp.arange(generations))
        return curves

    return run(keys)
