"""NoiseReuseES against evosax 0.3.2's ``NoiseReuseES``, truncation by truncation, from the same
random numbers.

Mappings: evosax's ``Params(T, K)`` are ``total_length`` and ``truncation_length`` (30 and 10:
unrolls of 3 truncations, so 7 generations cross two resets); its ``std_schedule`` is the
constant ``init_std`` (evolax's ``std`` is fixed); the optimizer is shared (both hand it the
loss-gradient estimate); its default ``identity_fitness_shaping_fn`` is evolax's ``raw``, and
it is told ``-fitness``. evolax is given evosax's draws, ``std * jax.random.normal(key, (pop /
2, D))`` (:class:`EvosaxDrawsNRES`), from the key of the ``ask`` that starts an unroll
(evosax also draws, and discards, at the other asks; evolax does not draw there).

evosax's estimate is the paper's (Li et al., 2023, NRES; ``TruncatedNRES`` in
github.com/OscarcarLi/Noise-Reuse-Evolution-Strategies: ``g = sum_i (L_i+ - L_i-) eps_i / (2 N
sigma^2)`` over ``N`` pairs whose ``eps_i`` is drawn when their unroll starts), so the
comparison is exact: after each ``ask`` the populations agree and ``eps`` is evosax's
``pert[:pop / 2]`` (``pert[pop / 2:] = -eps``); after each ``tell`` the means and optimizer
states agree and evosax's ``inner_step_counter`` is evolax's ``inner_step``. Both keep all
members in lock-step; the authors' code runs each worker's unroll on its own clock (reset when
its own episode ends), which changes the estimate's correlations, not its mean.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms.es.noise_reuse_es import NoiseReuseES
from helpers import X0, quadratic

evosax = pytest.importorskip("evosax.algorithms")

POP, STD, T, K = 10, 0.3, 30, 10
RTOL, ATOL = 2e-5, 2e-6


class EvosaxDrawsNRES(NoiseReuseES):
    """NoiseReuseES fed evosax's draws: ``std * jax.random.normal(key, (pop / 2, D))``."""

    def perturbations(self, key, state):
        shape = (self.pop_size // 2, state.mean.shape[0])
        return state.std * jax.random.normal(key, shape, state.mean.dtype)


def flat(population):
    return jax.vmap(lambda x: jax.flatten_util.ravel_pytree(x)[0])(population)


@pytest.mark.slow  # reference check against evosax (nox -s slow)
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_truncations_match_evosax(optimizer):
    make = {"sgd": lambda: optax.sgd(0.05), "adam": lambda: optax.adam(0.1)}[optimizer]
    ours = EvosaxDrawsNRES(POP, truncation_length=K, total_length=T, optimizer=make(),
                           init_std=STD)  # fmt: skip
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        theirs = evosax.NoiseReuseES(
            POP, X0, optimizer=make(), std_schedule=optax.constant_schedule(STD)
        )
        params = theirs.default_params.replace(T=T, K=K)
        their_state = theirs.init(jax.random.key(0), X0, params)
    state = ours.init(jax.random.key(0), X0)
    np.testing.assert_allclose(their_state.mean, state.mean)
    assert float(their_state.std) == pytest.approx(STD)
    half = POP // 2
    ask, tell = jax.jit(ours.ask), jax.jit(ours.tell)
    perturbations = []
    for generation in range(7):
        err = f"generation {generation}"
        ask_key, tell_key = jax.random.split(jax.random.key(generation + 1))
        population, state = ask(ask_key, state)
        with jax.numpy_rank_promotion("allow"):
            their_population, their_state = theirs.ask(ask_key, their_state, params)
        np.testing.assert_allclose(flat(population), flat(their_population), rtol=RTOL, atol=ATOL)
        pert = np.asarray(their_state.pert)
        np.testing.assert_allclose(state.eps, pert[:half], rtol=RTOL, atol=ATOL, err_msg=err)
        np.testing.assert_allclose(pert[half:], -pert[:half], err_msg=err)
        perturbations.append(np.asarray(state.eps))

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
    np.testing.assert_array_equal(perturbations[0], perturbations[2])  # reused in an unroll
    assert not np.allclose(perturbations[2], perturbations[3])  # new with the next
