"""An algorithm on a function of its population: ``generations`` of ask, evaluate and tell
as one ``lax.scan`` (:func:`evolve`), the loop every test function, benchmark suite and
reference comparison runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax

from evolax.algorithms.base import Algorithm
from evolax.types import Fitness, Metrics, Params, Population, PRNGKey
from evolax.validation import check_positive_int

Objective = Callable[[Population], Fitness | tuple[Fitness, Mapping[str, Any]]]


def evolve(
    algorithm: Algorithm, objective: Objective, x0: Params, key: PRNGKey, generations: int
) -> tuple[Any, Metrics]:
    """``generations`` of ``ask -> objective -> tell`` from ``x0``, one ``lax.scan``.

    Pure and traced once: ``jax.jit`` it, ``jax.vmap`` it over keys (seeds) or over an
    algorithm's array fields, or call it inside a larger program. The key is split into the
    ``init`` key and one key per generation, each split again into the ``ask`` and ``tell``
    keys.

    Args:
        algorithm: any :class:`~evolax.algorithms.Algorithm`.
        objective: ``population -> fitness`` (maximised: ``[pop]``, or ``[pop, m]`` for a
            multi-objective algorithm), or ``-> (fitness, extra)`` with ``extra`` a mapping of
            ``tell``'s keyword arguments (``{"descriptors": d}`` for quality diversity).
        x0: the initial genome (its shape and dtype are the population's).
        key: PRNG key.
        generations: ``>= 1``, a Python int.
    Returns:
        ``(state, metrics)``: the last state, and ``tell``'s metrics with a leading
        ``[generations]`` axis. ``algorithm.best(state)`` is the best genome told.
    """
    check_positive_int("generations", generations)

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        population, state = algorithm.ask(ask_key, state)
        result = objective(population)
        fitness, extra = result if isinstance(result, tuple) else (result, {})
        return algorithm.tell(tell_key, state, population, fitness, **extra)

    init_key, key = jax.random.split(key)
    state = algorithm.init(init_key, x0)
    return jax.lax.scan(generation, state, jax.random.split(key, generations))
