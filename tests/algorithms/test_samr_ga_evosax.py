"""SAMRGA against evosax 0.3.2's ``SAMR_GA``, one generation at a time from the same state and
the same random numbers.

Mappings: evosax's ``elite_ratio = 0.5`` is ``n_parents = pop_size // 2``; ``std_meta`` is
``std_meta``; its clip ``[std_min, std_max] = [0, 10]`` is set to ``[0, inf]``, evolax's default
(Kumar et al. clip nothing); evosax minimises, so it is told ``-fitness``. evolax's ``ask`` is
given evosax's draws (:class:`EvosaxDrawsSAMR`). evosax's ``tell`` only stores the generation,
as evolax's does.

evosax departs from the SAMR of Kumar et al. (2022), as their code runs it
(``run_evolution_ns`` in github.com/akarshkumar0101/evolved-neuroevolution, ``optim.py``), in
two places:

- it keeps no elite: row 0, a copy of the best member, is mutated like the children (its std by
  ``std_meta ** u_0``, its genome by that new std), where Kumar et al. copy the best member and
  its std unchanged (``n_elites = 1``);
- a child's genome moves by its own new std, ``x_p + sigma_p beta^u N(0, I)`` (Bäck's
  self-adaptation order), where Kumar et al. move it by its parent's, ``x_p + sigma_p N(0,
  I)``, and pass ``sigma_p beta^u`` on to its children. ``mutate_std_first=True`` gives
  evosax's order.

So rows 1.. agree with evosax under ``mutate_std_first=True``, row 0 is the unmutated best, and
with the default the children differ from evosax's only by the std of their step. Since the
elite makes the populations differ after one generation, evosax's state is set to evolax's
before each ``ask``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.ga.samr_ga import SAMRGA

evosax = pytest.importorskip("evosax.algorithms")

POP, DIM = 10, 8


class EvosaxDrawsSAMR(SAMRGA):
    """SAMRGA fed the random numbers evosax's ``SAMR_GA._ask`` draws from the same key: the key
    split into (parent, std, genome) keys, each child's parent rank by ``jax.random.choice``
    among the ``num_elites`` best, ``U(-1, 1)`` exponents and ``jax.random.normal`` noise for
    every row (row 0's exponent only evosax uses)."""

    def draws(self, key, like):
        choice_key, std_key, noise_key = jax.random.split(key, 3)
        choice = jax.random.choice(choice_key, self.n_parents, (self.pop_size - 1,))
        exponent = jax.random.uniform(std_key, (self.pop_size,), like.dtype, -1.0, 1.0)
        noise = jax.random.normal(noise_key, (self.pop_size, like.shape[0]), like.dtype)
        return choice, noise, exponent[1:]


def quadratic(x):
    """A fixed random ellipsoid, maximised at a random target: no ties between members."""
    rng = np.random.default_rng(0)
    scales = jnp.asarray(rng.uniform(0.5, 3.0, DIM), jnp.float32)
    target = jnp.asarray(rng.normal(size=DIM), jnp.float32)
    return -jnp.sum(scales[None] * (x - target[None]) ** 2, axis=1)


@pytest.mark.slow  # reference check against evosax (nox -s slow)
@pytest.mark.parametrize("std_first", [True, False])
def test_generations_match_evosax_but_for_the_elite_and_the_step_std(std_first):
    algo = EvosaxDrawsSAMR(
        POP, mutation_std_low=0.05, mutation_std_high=2.0, mutate_std_first=std_first
    )
    assert algo.n_parents == 5
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        es = evosax.SAMR_GA(POP, jnp.zeros(DIM))
        params = es.default_params.replace(std_max=jnp.inf)
        assert es.num_elites == 5

    state = algo.init(jax.random.key(0), jnp.zeros(DIM))
    x, state = algo.ask(jax.random.key(1), state)
    ask, tell = jax.jit(algo.ask), jax.jit(algo.tell)
    state, _ = tell(jax.random.key(2), state, x, quadratic(x))
    with jax.numpy_rank_promotion("allow"):
        es_state = es.init(jax.random.key(2), x, -quadratic(x), params)
    for generation in range(5):
        ask_key, tell_key = jax.random.split(jax.random.key(10 + generation))
        es_state = es_state.replace(
            population=state.population, fitness=-state.fitness, std=state.mutation_std
        )
        best = int(jnp.argmax(state.fitness))
        best_x, best_std = state.population[best], state.mutation_std[best]
        x, state = ask(ask_key, state)
        with jax.numpy_rank_promotion("allow"):
            es_x, es_state = es.ask(ask_key, es_state, params)
        # row 0: evolax's is the best member with its std, evosax mutates both
        np.testing.assert_array_equal(x[0], best_x)
        assert float(state.asked_std[0]) == float(best_std)
        _, std_key, noise_key = jax.random.split(ask_key, 3)
        u = jax.random.uniform(std_key, (POP,), minval=-1.0, maxval=1.0)
        eps = jax.random.normal(noise_key, (POP, DIM))
        np.testing.assert_allclose(es_state.std[0], best_std * 2.0 ** u[0], rtol=1e-6)
        np.testing.assert_allclose(es_x[0], best_x + es_state.std[0] * eps[0], rtol=1e-6, atol=1e-6)
        # the children: the same stds; the same genomes if the new std steps first
        np.testing.assert_allclose(state.asked_std[1:], es_state.std[1:], rtol=1e-6)
        if std_first:
            np.testing.assert_allclose(x[1:], es_x[1:], rtol=1e-6, atol=1e-6)
        else:  # the same parent and noise, stepped by the parent's std (sigma / beta^u)
            parent = es_x[1:] - es_state.std[1:, None] * eps[1:]
            parent_std = es_state.std[1:] / 2.0 ** u[1:]
            np.testing.assert_allclose(
                x[1:], parent + parent_std[:, None] * eps[1:], rtol=1e-5, atol=1e-5
            )
            assert np.max(np.abs(np.asarray(x[1:] - es_x[1:]))) > 1e-3

        fitness = quadratic(x)
        state, _ = tell(tell_key, state, x, fitness)
        with jax.numpy_rank_promotion("allow"):
            es_state, _ = es.tell(tell_key, es_x, -quadratic(es_x), es_state, params)
        np.testing.assert_array_equal(state.mutation_std, state.asked_std)
        np.testing.assert_array_equal(state.population, x)
        np.testing.assert_array_equal(es_state.population, es_x)
