"""PersistentES against evosax 0.3.2's ``PersistentES``, truncation by truncation, from the same
random numbers.

Mappings: evosax's ``Params(T, K)`` are ``total_length`` and ``truncation_length`` (30 and 10:
unrolls of 3 truncations, so 7 generations cross two resets); its ``std_schedule`` is the
constant ``init_std`` (evolax's ``std`` is fixed); the optimizer is shared (both hand it the
loss-gradient estimate); its default ``identity_fitness_shaping_fn`` is evolax's ``raw``, and
it is told ``-fitness``. evolax is given evosax's draws, ``std * jax.random.normal(key, (pop /
2, D))`` (:class:`EvosaxDrawsPES`).

evosax's estimate is the paper's (Vicol et al., 2021, algorithm 2, and ``pes_grad`` in
github.com/google-research/persistent_es: ``g = sum_i xi_i L_i / (N sigma^2)``, ``xi_i`` the
perturbations accumulated over the unroll, the current one included, zeroed after ``T``
steps), so the comparison is exact: after each ``ask`` the populations agree and ``xi`` is
evosax's ``pert_accum[:pop / 2]`` (``pert_accum[pop / 2:] = -xi``); after each ``tell`` the
means and optimizer states agree and evosax's ``inner_step_counter`` is evolax's
``inner_step``. The bookkeeping differs in one place, not in the update: evosax zeroes
``pert_accum`` in the ``tell`` that ends an unroll, evolax zeroes ``xi`` in the ``ask`` that
starts the next. (evosax divides every accumulated perturbation by the current ``std^2``, so a
non-constant ``std_schedule`` would bias its estimate; evolax's ``std`` cannot change.)
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms.es.persistent_es import PersistentES
from helpers import X0, quadratic

evosax = pytest.importorskip("evosax.algorithms")

POP, STD, T, K = 10, 0.3, 30, 10
RTOL, ATOL = 2e-5, 2e-6


class EvosaxDrawsPES(PersistentES):
    """PersistentES fed evosax's draws: ``std * jax.random.normal(key, (pop / 2, D))``."""

    def perturbations(self, key, state):
        shape = (self.pop_size // 2, state.mean.shape[0])
        return state.std * jax.random.normal(key, shape, state.mean.dtype)


def flat(population):
    return jax.vmap(lambda x: jax.flatten_util.ravel_pytree(x)[0])(population)


@pytest.mark.slow  # reference check against evosax (nox -s slow)
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_truncations_match_evosax(optimizer):
    make = {"sgd": lambda: optax.sgd(0.05), "adam": lambda: optax.adam(0.1)}[optimizer]
    ours = EvosaxDrawsPES(POP, truncation_length=K, total_length=T, optimizer=make(),
                          init_std=STD)  # fmt: skip
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        theirs = evosax.PersistentES(
            POP, X0, optimizer=make(), std_schedule=optax.constant_schedule(STD)
        )
        params = theirs.default_params.replace(T=T, K=K)
        their_state = theirs.init(jax.random.key(0), X0, params)
    state = ours.init(jax.random.key(0), X0)
    np.testing.assert_allclose(their_state.mean, state.mean)
    assert float(their_state.std) == pytest.approx(STD)
    half = POP // 2
    ask, tell = jax.jit(ours.ask), jax.jit(ours.tell)
    for generation in range(7):
        err = f"generation {generation}"
        ask_key, tell_key = jax.random.split(jax.random.key(generation + 1))
        population, state = ask(ask_key, state)
        with jax.numpy_rank_promotion("allow"):
            their_population, their_state = theirs.ask(ask_key, their_state, params)
        np.testing.assert_allclose(flat(population), flat(their_population), rtol=RTOL, atol=ATOL)
        accum = np.asarray(their_state.pert_accum)
        np.testing.assert_allclose(state.xi, accum[:half], rtol=RTOL, atol=ATOL, err_msg=err)
        np.testing.assert_allclose(accum[half:], -accum[:half], err_msg=err)

        fitness = quadratic(population)
        new, _ = tell(tell_key, state, population, fitness)
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(tell_key, population, -fitness, their_state, params)
        np.testing.assert_allclose(new.mean, their_state.mean, rtol=RTOL, atol=ATOL, err_msg=err)
        for leaf, their_leaf in zip(
            jax.tree.leaves(new.opt_state), jax.tree.leaves(their_state.opt_state), strict=True
        ):
            np.testing.assert_allclose(leaf, their_leaf, rtol=RTOL, atol=ATOL, err_msg=err)
        expected_step = 10 * ((generation + 1) % 3)
        assert int(new.inner_step) == int(their_state.inner_step_counter) == expected_step
        assert float(jnp.max(jnp.abs(new.mean - state.mean))) > 1e-3, err  # it moved
        state = new
