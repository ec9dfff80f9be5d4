"""GESMRGA against evosax 0.3.2's ``GESMR_GA``, generation by generation from the same random
numbers.

Mappings: evosax's ``num_groups`` is ``n_groups`` (``(pop_size - 1) / num_groups`` children per
group; evosax's default is one group, in which the single std only drifts by
``std_meta ** U(-1, 1)``); its ``elite_ratio = 0.5`` is ``n_parents = pop_size // 2``; its
single unmutated elite is ``n_elites = 1``; its ``std_ratio = 0.5`` is the ``max(1, n_groups //
2)`` std parents; ``std_meta`` is ``std_meta``; its clip ``[std_min, std_max] = [0, 10]`` is set
to ``[0, inf]``, evolax's default (Kumar et al. clip nothing). evosax minimises, so it is told
``-fitness``. evolax's ``ask`` is given evosax's draws (:class:`EvosaxDrawsGESMR`); evolax's
``tell`` already makes evosax's calls (``jax.random.choice`` of the std parents, ``uniform`` of
``n_groups`` exponents from the same key).

One deviation from Kumar et al. (2022), whose code keeps the best std unchanged
(``run_evolution_ours`` in github.com/akarshkumar0101/evolved-neuroevolution, ``optim.py``:
``calc_npop_log_uniform`` copies the elite, as it does for solutions): evosax multiplies it by
``std_meta ** u_0`` too. So after each ``tell`` the stds agree except the first, where
evosax's equals evolax's times ``std_meta ** u_0``; before each ``ask`` evosax's stds are set
to evolax's.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.ga.gesmr_ga import GESMRGA

evosax = pytest.importorskip("evosax.algorithms")

POP, DIM, GROUPS = 13, 8, 4  # 12 children: 4 groups of 3


class EvosaxDrawsGESMR(GESMRGA):
    """GESMRGA fed the random numbers evosax's ``GESMR_GA._ask`` draws from the same key: the
    key split into (parent, noise) keys, each child's parent rank by ``jax.random.choice``
    among the ``num_elites`` best, and ``jax.random.normal`` noise for every row."""

    def draws(self, key, like):
        choice_key, noise_key = jax.random.split(key)
        choice = jax.random.choice(choice_key, self.n_parents, (self.pop_size - 1,))
        return choice, jax.random.normal(noise_key, (self.pop_size, like.shape[0]), like.dtype)


def quadratic(x):
    """A fixed random ellipsoid, maximised at a random target: no ties between members."""
    rng = np.random.default_rng(0)
    scales = jnp.asarray(rng.uniform(0.5, 3.0, DIM), jnp.float32)
    target = jnp.asarray(rng.normal(size=DIM), jnp.float32)
    return -jnp.sum(scales[None] * (x - target[None]) ** 2, axis=1)


@pytest.mark.slow  # reference check against evosax (nox -s slow)
def test_generations_match_evosax_but_for_the_elite_std():
    algo = EvosaxDrawsGESMR(POP, n_groups=GROUPS, mutation_std_low=0.01, mutation_std_high=3.0)
    assert algo.n_parents == 6 and algo.n_std_parents == 2
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        es = evosax.GESMR_GA(POP, jnp.zeros(DIM), num_groups=GROUPS)
        params = es.default_params.replace(std_max=jnp.inf)
        assert es.num_elites == 6 and es.num_std_elites == 2 and es.members_per_group == 3

    # the first generation (evolax's own, around x0) is told to both
    state = algo.init(jax.random.key(0), jnp.zeros(DIM))
    x, state = algo.ask(jax.random.key(1), state)
    state, _ = algo.tell(jax.random.key(2), state, x, quadratic(x))
    np.testing.assert_allclose(state.mutation_std, np.logspace(-2, np.log10(3.0), 4), rtol=1e-5)
    with jax.numpy_rank_promotion("allow"):
        es_state = es.init(jax.random.key(2), x, -quadratic(x), params)
    ask, tell = jax.jit(algo.ask), jax.jit(algo.tell)
    elite_moved = []
    for generation in range(6):
        ask_key, tell_key = jax.random.split(jax.random.key(10 + generation))
        es_state = es_state.replace(std=state.mutation_std)
        x, state = ask(ask_key, state)
        with jax.numpy_rank_promotion("allow"):
            es_x, es_state = es.ask(ask_key, es_state, params)
        np.testing.assert_allclose(x, es_x, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(state.parent_fitness, -es_state.fitness)

        fitness = quadratic(x)
        before = np.asarray(state.mutation_std)
        state, _ = tell(tell_key, state, x, fitness)
        with jax.numpy_rank_promotion("allow"):
            es_state, _ = es.tell(tell_key, x, -fitness, es_state, params)
        np.testing.assert_array_equal(state.population, es_state.population)
        np.testing.assert_array_equal(state.fitness, -es_state.fitness)
        np.testing.assert_allclose(state.mutation_std[1:], es_state.std[1:], rtol=1e-6)
        # the best group's std (largest improvement over the parent), unchanged in evolax ...
        change = np.asarray(fitness - state.parent_fitness)[1:].reshape(GROUPS, -1).max(axis=1)
        assert float(state.mutation_std[0]) == before[np.argmax(change)]
        # ... and mutated by evosax
        u0 = jax.random.uniform(jax.random.split(tell_key)[1], (GROUPS,), minval=-1, maxval=1)[0]
        np.testing.assert_allclose(es_state.std[0], state.mutation_std[0] * 2.0**u0, rtol=1e-6)
        elite_moved.append(abs(float(u0)) > 1e-3)
    assert all(elite_moved)
    assert float(jnp.max(state.mutation_std) / jnp.min(state.mutation_std)) > 1.5  # varied
