"""ESMC against evosax 0.3.2's ``ESMC`` (tests only), update by update.

Both libraries start from the same state; evolax asks, and both are told the SAME population:
evolax its fitness, evosax the negated fitness (evosax minimises). After every tell the means
and standard deviations must agree to float32 accuracy. Mappings:

- the layout is the same for an even ``pop_size`` (evosax supports no odd one): two
  evaluations of the mean, then ``pop_size / 2 - 1`` antithetic pairs; evosax averages the
  mean's two losses into its baseline as evolax does;
- evosax's ``min(L+-, L_0)`` on losses is evolax's ``max(f+-, f_0)`` on fitness, and
  evosax's identity fitness shaping is evolax's ``raw``;
- evosax divides the estimate by ``n`` where evolax (the usual antithetic estimator) divides
  by ``2 n std``: evosax's step is ``2 std`` times evolax's, so evosax's ``optax.sgd(lr)`` is
  evolax's ``optax.sgd(2 std lr)``, and Adam, invariant to a constant scale, is shared;
- evosax sets ``std = std_schedule(t)`` after tell ``t = 0, 1, ..``: a constant schedule is
  evolax's ``std_decay = 1``, and ``max(init_std * decay^(t + 1), std_min)`` its decay (with
  the initial std overwritten by ``init_std``); a decaying std changes the factor ``2 std``
  each generation, so there evolax's SGD is scaled by ``2 std_t`` with an optax schedule.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms.es.esmc import ESMC
from helpers import X0, quadratic

evosax = pytest.importorskip("evosax")
from evosax.algorithms import ESMC as EvosaxESMC  # noqa: E402

pytestmark = pytest.mark.slow

DIM = 8
RTOL, ATOL = 2e-5, 2e-6  # float32, a few updates


def compare(ours, theirs, overrides, n_steps=5):
    key = jax.random.key(0)
    params = theirs.default_params
    state = ours.init(key, X0)
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        their_state = theirs.init(key, X0, params).replace(**overrides)
    np.testing.assert_allclose(their_state.mean, state.mean)
    np.testing.assert_allclose(their_state.std, state.std)
    tell = jax.jit(ours.tell)
    clipped = []
    for step in range(n_steps):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, step))
        population, state_asked = ours.ask(ask_key, state)
        fitness = quadratic(population)
        new, _ = tell(tell_key, state_asked, population, fitness)
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(tell_key, population, -fitness, their_state, params)
        err = f"generation {step}"
        np.testing.assert_allclose(new.mean, their_state.mean, rtol=RTOL, atol=ATOL, err_msg=err)
        np.testing.assert_allclose(new.std, their_state.std, rtol=RTOL, atol=ATOL, err_msg=err)
        assert float(jnp.max(jnp.abs(new.mean - state.mean))) > 1e-3, err
        below = np.asarray(fitness[2:] < jnp.mean(fitness[:2]))
        clipped.append(bool(below.any() and not below.all()))
        state = new
    assert any(clipped)  # the clipping was exercised, on both sides


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_esmc_matches_evosax_with_a_constant_std(optimizer):
    pop, std, lr = 10, 0.3, 0.05
    mine, their_optimizer = {
        "sgd": (optax.sgd(2 * std * lr), optax.sgd(lr)),
        "adam": (optax.adam(lr), optax.adam(lr)),
    }[optimizer]
    ours = ESMC(pop_size=pop, optimizer=mine, init_std=std)
    theirs = EvosaxESMC(pop, X0, optimizer=their_optimizer,
                        std_schedule=optax.constant_schedule(std))  # fmt: skip
    compare(ours, theirs, {})


def test_esmc_matches_evosax_with_a_decaying_std():
    pop, std, decay, std_min, lr = 12, 0.4, 0.8, 0.25, 0.05
    factor = lambda t: 2 * jnp.maximum(std * decay**t, std_min)  # noqa: E731  2 std at tell t
    ours = ESMC(
        pop_size=pop,
        optimizer=optax.chain(optax.scale_by_schedule(factor), optax.sgd(lr)),
        init_std=std,
        std_decay=decay,
        std_min=std_min,
    )
    theirs = EvosaxESMC(
        pop,
        X0,
        optimizer=optax.sgd(lr),
        std_schedule=lambda t: jnp.maximum(std * decay ** (t + 1), std_min),
    )
    compare(ours, theirs, {"std": jnp.asarray(std, jnp.float32)})
