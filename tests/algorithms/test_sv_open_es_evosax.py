"""SVOpenES against evosax 0.3.2's ``SV_Open_ES``, update by update.

Both start from the same particle means; evolax asks, both are told the SAME population
(evosax the negated fitness), and after every tell all particles' means and optimizer states
agree to float32 accuracy.

Mappings: evosax's ``population_size`` is evolax's ``pop_size / n_particles``, its
``num_populations`` is ``n_particles``, and its population is laid out by particle as
evolax's (antithetic pairs within each particle: ``[+eps, -eps]``); the optimizer is shared
(both hand it ``-phi``); evosax's constant ``std_schedule(init_std)`` is evolax's ``init_std``
with ``std_decay = 1`` (evosax's ``SV_Open_ES`` never updates ``std``); ``kernel_std`` and
``alpha`` are evosax's ``Params``. Both shape each particle's fitness into centred ranks
(evosax ranks the loss ``-f``: the negated utilities, and its search gradient uses ``mean -
x`` for ``x - mean``). The update is SVGD's with the OpenES gradients as scores in both, as
in the first evosax implementation (the pre-0.3 ``evosax.strategies.SV_OpenES``); we could not
read the paper's method section and rely on those implementations.

One departure: evosax's ``SV_Open_ES`` ignores its ``std_schedule`` after ``init`` (its pre-0.3
version decayed ``sigma`` as OpenES does, and so does evolax's ``std_decay``):
:func:`test_evosax_ignores_its_std_schedule`.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from evolax.algorithms.es.sv_open_es import SVOpenES
from helpers import X0, quadratic

evosax = pytest.importorskip("evosax.algorithms")

N_PARTICLES, PER_PARTICLE = 3, 6
RTOL, ATOL = 2e-5, 2e-6


@pytest.mark.slow  # reference check against evosax (nox -s slow)
@pytest.mark.parametrize(
    ("antithetic", "optimizer", "alpha"),
    [(True, "sgd", 0.5), (False, "adam", 1.0), (True, "adam", 0.0)],
)
def test_sv_open_es_matches_evosax(antithetic, optimizer, alpha):
    x0 = ravel_pytree(X0)[0]
    init_std, kernel_std = 0.3, 1.2
    make = {"sgd": lambda: optax.sgd(0.3), "adam": lambda: optax.adam(0.05)}[optimizer]
    ours = SVOpenES(
        pop_size=N_PARTICLES * PER_PARTICLE,
        n_particles=N_PARTICLES,
        optimizer=make(),
        init_std=init_std,
        antithetic=antithetic,
        init_spread=1.0,
        kernel_std=kernel_std,
        alpha=alpha,
    )
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        theirs = evosax.SV_Open_ES(
            PER_PARTICLE,
            N_PARTICLES,
            x0,
            use_antithetic_sampling=antithetic,
            optimizer=make(),
            std_schedule=optax.constant_schedule(init_std),
        )
        params = theirs.default_params.replace(kernel_std=kernel_std, alpha=alpha)
    key = jax.random.key(0)
    state = ours.init(key, x0)
    with jax.numpy_rank_promotion("allow"):
        their_state = theirs.init(key, state.mean, params)
    np.testing.assert_allclose(their_state.std, state.std)
    tell = jax.jit(ours.tell)
    for generation in range(5):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, generation))
        population, asked = ours.ask(ask_key, state)
        fitness = quadratic(population)
        new, metrics = tell(tell_key, asked, population, fitness)
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(tell_key, population, -fitness, their_state, params)
        err = f"generation {generation}"
        np.testing.assert_allclose(new.mean, their_state.mean, rtol=RTOL, atol=ATOL, err_msg=err)
        for ours_leaf, their_leaf in zip(
            jax.tree.leaves(new.opt_state), jax.tree.leaves(their_state.opt_state), strict=True
        ):
            np.testing.assert_allclose(ours_leaf, their_leaf, rtol=RTOL, atol=ATOL, err_msg=err)
        if alpha:  # the kernel's step is not negligible
            assert float(metrics["repulsion_norm"]) > 1e-2
        assert float(jnp.min(jnp.linalg.norm(new.mean - state.mean, axis=1))) > 1e-3  # all moved
        state = new


@pytest.mark.slow  # reference check against evosax (nox -s slow)
def test_evosax_ignores_its_std_schedule():
    """evosax's ``SV_Open_ES._tell`` never applies ``std_schedule`` (``Open_ES._tell`` sets
    ``std = std_schedule(t)`` after tell ``t``): its particles keep ``std_schedule(0)``.
    evolax's particles decay ``std`` as its OpenES does (``std_decay``)."""
    x0 = ravel_pytree(X0)[0]
    ours = SVOpenES(pop_size=N_PARTICLES * PER_PARTICLE, n_particles=N_PARTICLES,
                    init_std=0.3, std_decay=0.5)  # fmt: skip
    with jax.numpy_rank_promotion("allow"):
        theirs = evosax.SV_Open_ES(PER_PARTICLE, N_PARTICLES, x0,
                                   std_schedule=lambda t: 0.3 * 0.5 ** (t + 1))  # fmt: skip
        params = theirs.default_params
    key = jax.random.key(0)
    state = ours.init(key, x0)
    with jax.numpy_rank_promotion("allow"):
        their_state = theirs.init(key, state.mean, params)
    for generation in range(2):
        population, state = ours.ask(jax.random.fold_in(key, generation), state)
        state, _ = ours.tell(key, state, population, quadratic(population))
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(key, population, -quadratic(population), their_state,
                                         params)  # fmt: skip
    np.testing.assert_allclose(state.std, 0.3 * 0.5**2)  # the schedule's std_schedule(1)
    np.testing.assert_allclose(their_state.std, 0.3 * 0.5)  # still std_schedule(0)
