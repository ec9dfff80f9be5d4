"""SimpleES against evosax 0.3.2's ``SimpleES``, update by update.

evosax's ``SimpleES`` implements the same update as evolax's: its fitness shaping hands the
``mu = floor(lambda / 2)`` best (by rank) the weight ``1 / mu`` and the others 0, its default
optimizer ``optax.sgd(1.0)`` moves the mean by ``sum_i w_i (x_i - mean)`` (intermediate
recombination), and ``std <- (1 - c_std) std + c_std sqrt(sum_i w_i (x_i - mean)^2)`` per
coordinate. Mappings: evolax's ``init_std`` is evosax's ``std_init``, ``std_lr`` its ``c_std``
(both 0.1 by default), and ``n_parents = mu`` is evosax's ``weights = 1 / mu`` for the ``mu``
best (its default ``mu`` is evolax's). Both start from the same mean and spread; evolax asks,
both are told that population (evosax the negated fitness), and after every tell the means and
the spreads agree to float32 accuracy. The fitness is a continuous random quadratic, so no two
samples tie (evosax ranks ties by their mean rank, evolax by position).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.es.simple_es import SimpleES

pytestmark = pytest.mark.slow
evosax = pytest.importorskip("evosax.algorithms")

DIM = 8
RTOL, ATOL = 2e-5, 2e-6


def quadratic(x):
    """A fixed random ellipsoid, maximised at a random target: no ties between samples."""
    rng = np.random.default_rng(0)
    scales = jnp.asarray(rng.uniform(0.5, 3.0, DIM), jnp.float32)
    target = jnp.asarray(rng.normal(size=DIM), jnp.float32)
    return -jnp.sum(scales[None] * (x - target[None]) ** 2, axis=1)


@pytest.mark.parametrize(
    ("pop", "n_parents", "init_std", "std_lr"),
    [(10, None, 1.0, 0.1), (9, None, 0.4, 0.3), (12, 3, 0.7, 0.5)],
    ids=["defaults", "odd-pop", "three-parents"],
)
def test_simple_es_matches_evosax(pop, n_parents, init_std, std_lr):
    ours = SimpleES(pop_size=pop, init_std=init_std, std_lr=std_lr, n_parents=n_parents)
    x0 = jnp.linspace(-1.0, 1.0, DIM)
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        theirs = evosax.SimpleES(pop, jnp.zeros(DIM))
        params = theirs.default_params.replace(std_init=init_std, c_std=std_lr)
        if n_parents is not None:
            mu = n_parents
            params = params.replace(weights=jnp.where(jnp.arange(pop) < mu, 1.0 / mu, 0.0))
        else:  # evosax's own weights are evolax's
            np.testing.assert_allclose(params.weights, ours.weights, rtol=1e-7)
        their_state = theirs.init(jax.random.key(0), x0, params)

    key = jax.random.key(0)
    state = ours.init(key, x0)
    np.testing.assert_allclose(their_state.std, state.std)
    tell = jax.jit(ours.tell)
    moved = []
    for step in range(5):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, step))
        population, _ = ours.ask(ask_key, state)
        fitness = quadratic(population)
        new, _ = tell(tell_key, state, population, fitness)
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(tell_key, population, -fitness, their_state, params)
        err = f"generation {step}"
        np.testing.assert_allclose(new.mean, their_state.mean, rtol=RTOL, atol=ATOL, err_msg=err)
        np.testing.assert_allclose(new.std, their_state.std, rtol=RTOL, atol=ATOL, err_msg=err)
        moved.append(float(jnp.max(jnp.abs(new.std - state.std))))
        state = new
    assert min(moved) > 1e-3  # every update changed the spread
