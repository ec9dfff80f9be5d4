"""MR15GA against evosax 0.3.2's ``MR15_GA``, generation by generation from the same random
numbers.

Mappings: evosax's ``std_init`` is ``init_std`` (evolax also draws its first generation, the
archive of ``x0`` copies mutated, with it); its ``std_ratio`` is ``success_threshold``; its
fixed factor 2 is ``std_factor = 2``; ``std_min``, ``std_max = inf`` are ``std_min``,
``std_max = None``. evosax minimises, so it is told ``-fitness``; its archive is started from
evolax's after the first generation. evolax's ``ask`` is given evosax's draws
(:class:`EvosaxDrawsMR15`); ``tell`` draws nothing in either.

evosax follows Rechenberg (1973) here: a success is a child strictly fitter than its own parent
and the std grows by 2 above a 1/5 success rate, shrinks by 2 otherwise; the archive is the
plus selection of parents and children. No deviation was found; the rule's threshold is
checked on both sides and a NaN child is handled alike (never a success, never kept).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.ga.mr15_ga import MR15GA

evosax = pytest.importorskip("evosax.algorithms")

POP, DIM = 10, 8


class EvosaxDrawsMR15(MR15GA):
    """MR15GA fed the random numbers evosax's ``MR15_GA._ask`` draws from the same key: one key
    per member (``jax.random.split(key, pop)``), each drawing its child's ``jax.random.normal``
    noise."""

    def draws(self, key, like):
        keys = jax.random.split(key, self.pop_size)
        return jax.vmap(lambda k: jax.random.normal(k, like.shape, like.dtype))(keys)


def quadratic(x):
    """A fixed random ellipsoid, maximised at a random target, with member 3 failing (NaN)."""
    rng = np.random.default_rng(0)
    scales = jnp.asarray(rng.uniform(0.5, 3.0, DIM), jnp.float32)
    target = jnp.asarray(3.0 * rng.normal(size=DIM), jnp.float32)
    return (-jnp.sum(scales[None] * (x - target[None]) ** 2, axis=1)).at[3].set(jnp.nan)


@pytest.mark.slow  # reference check against evosax (nox -s slow)
def test_generations_match_evosax():
    algo = EvosaxDrawsMR15(POP, init_std=0.3)
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        es = evosax.MR15_GA(POP, jnp.zeros(DIM))
        params = es.default_params
        assert float(params.std_ratio) == 0.2 and float(params.std_max) == np.inf

    state = algo.init(jax.random.key(0), jnp.zeros(DIM))
    x, state = algo.ask(jax.random.key(1), state)
    state, _ = algo.tell(jax.random.key(2), state, x, quadratic(x))
    assert float(state.mutation_std) == pytest.approx(0.3)  # the first generation keeps it
    with jax.numpy_rank_promotion("allow"):
        es_state = es.init(jax.random.key(2), state.population, -state.fitness, params)
    es_state = es_state.replace(std=state.mutation_std)

    ask, tell = jax.jit(algo.ask), jax.jit(algo.tell)
    factors = set()
    for generation in range(8):
        ask_key, tell_key = jax.random.split(jax.random.key(10 + generation))
        x, state = ask(ask_key, state)
        with jax.numpy_rank_promotion("allow"):
            es_x, es_state = es.ask(ask_key, es_state, params)
        np.testing.assert_allclose(x, es_x, rtol=1e-6, atol=1e-6)

        fitness = quadratic(x)
        before = float(state.mutation_std)
        state, _ = tell(tell_key, state, x, fitness)
        with jax.numpy_rank_promotion("allow"):
            es_state, _ = es.tell(tell_key, x, -fitness, es_state, params)
        assert float(state.mutation_std) == float(es_state.std)
        factors.add(float(state.mutation_std) / before)
        np.testing.assert_array_equal(state.population, es_state.population)
        np.testing.assert_array_equal(
            state.fitness, np.nan_to_num(-np.asarray(es_state.fitness), nan=-np.inf)
        )
        assert np.all(np.isfinite(state.fitness))  # the NaN child is never kept
    assert factors == {0.5, 2.0}  # both sides of the 1/5 threshold
