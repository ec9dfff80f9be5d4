"""RandomSearch against evosax 0.3.2's ``RandomSearch``, update by update (slow: ``nox -s
slow``).

evosax takes a ``sampling_fn(key) -> solution``; here it gets evolax's distribution (uniform in
the box ``x0 +- init_std``, or ``x0 + init_std * N(0, I)``), drawn with ``jax.random``. Both
start from ``x0``; evolax asks, and both are told the SAME population (evolax its fitness,
evosax the negated fitness: evosax minimises). After every tell the incumbent (evolax
``population[0]`` and :meth:`best`, evosax ``mean``: its best shaped solution) and its fitness
(evolax ``fitness[0]``, evosax ``-best_fitness_shaped``) must agree. evosax's own samples
(from the mapped ``sampling_fn``) must fill the same box as evolax's. The fitness is a
continuous random quadratic, so no two samples tie.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from evolax.algorithms.baselines.random_search import RandomSearch
from helpers import X0, quadratic

pytestmark = pytest.mark.slow
evosax = pytest.importorskip("evosax.algorithms")

DIM, N_STEPS = 8, 16


def sampling_fn(distribution, init_std):
    """evolax's sampling distribution as evosax's ``sampling_fn`` (one solution per key)."""
    center, unravel = ravel_pytree(X0)

    def sample(key):
        if distribution == "uniform":
            noise = jax.random.uniform(key, center.shape, minval=-1.0, maxval=1.0)
        else:
            noise = jax.random.normal(key, center.shape)
        return unravel(center + init_std * noise)

    return sample


@pytest.mark.parametrize("distribution", ["uniform", "normal"])
def test_random_search_matches_evosax(distribution):
    pop, init_std = 3, 1.5
    ours = RandomSearch(pop_size=pop, distribution=distribution, init_std=init_std)
    theirs = evosax.RandomSearch(pop, X0, sampling_fn=sampling_fn(distribution, init_std))
    params = theirs.default_params
    key = jax.random.key(0)
    state = ours.init(key, X0)
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        their_state = theirs.init(key, X0, params)
    np.testing.assert_array_equal(their_state.mean, state.population[0])
    tell = jax.jit(ours.tell)
    improved = []
    for step in range(N_STEPS):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, step))
        population, state = ours.ask(ask_key, state)
        fitness = quadratic(population)
        state, metrics = tell(tell_key, state, population, fitness)
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(tell_key, population, -fitness, their_state, params)
        err = f"generation {step}"
        np.testing.assert_array_equal(state.population[0], their_state.mean, err_msg=err)
        np.testing.assert_array_equal(ravel_pytree(ours.best(state))[0], their_state.mean)
        np.testing.assert_array_equal(state.fitness[0], -their_state.best_fitness_shaped)
        improved.append(float(metrics["improved"]))
    assert 1 < sum(improved) < N_STEPS, improved  # both branches compared

    # evosax's samples from the mapped sampling_fn and evolax's: the same distribution
    big_ours = RandomSearch(pop_size=4000, distribution=distribution, init_std=init_std)
    big_theirs = evosax.RandomSearch(4000, X0, sampling_fn=sampling_fn(distribution, init_std))
    mine, _ = big_ours.ask(key, big_ours.init(key, X0))
    with jax.numpy_rank_promotion("allow"):
        their_samples, _ = big_theirs.ask(key, big_theirs.init(key, X0, params), params)
    center = np.asarray(ravel_pytree(X0)[0])
    for samples in (mine, their_samples):
        flat = (np.asarray(jax.vmap(lambda x: ravel_pytree(x)[0])(samples)) - center) / init_std
        np.testing.assert_allclose(flat.mean(0), 0.0, atol=0.07)
        np.testing.assert_allclose(
            flat.var(0), 1 / 3 if distribution == "uniform" else 1.0, rtol=0.1
        )
        if distribution == "uniform":
            assert np.abs(flat).max() <= 1.0
