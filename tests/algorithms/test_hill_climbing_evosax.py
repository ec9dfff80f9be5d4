"""HillClimbing against evosax 0.3.2's ``HillClimbing``, update by update (slow: ``nox -s slow``).

Both start from the same state; evolax asks, and both are told the SAME population (evolax its
fitness, evosax the negated fitness: evosax minimises). After every tell the current point
(evolax ``mean``, evosax ``mean``: its best solution so far), its fitness (evolax ``fitness``,
evosax ``-best_fitness_shaped``) and the step size (``std``) must agree. The fitness is a
continuous random quadratic, so no two samples tie.

Mappings: evolax's ``std`` is ``init_std`` and, after tell ``t = 0, 1, ..``, ``max(init_std *
std_decay^(t + 1), std_min)``; evosax's ``std`` is ``std_schedule(0)`` at init and
``std_schedule(t)`` after tell ``t``, so evosax gets ``std_schedule(t) = max(init_std *
std_decay^(t + 1), std_min)`` and its initial state's ``std`` is overwritten with ``init_std``
(with a constant schedule, evosax's default, nothing needs mapping). Neither evaluates ``x0``:
both move to the first generation's best sample.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.baselines.hill_climbing import HillClimbing
from helpers import X0, quadratic

pytestmark = pytest.mark.slow
evosax = pytest.importorskip("evosax.algorithms")

DIM, N_STEPS = 8, 8


@pytest.mark.parametrize(
    ("init_std", "std_decay", "std_min"),
    [(1.0, 1.0, 0.0), (0.6, 0.8, 0.3)],
    ids=["evosax-defaults", "decaying"],
)
def test_hill_climbing_matches_evosax(init_std, std_decay, std_min):
    pop = 6
    ours = HillClimbing(pop_size=pop, init_std=init_std, std_decay=std_decay, std_min=std_min)
    theirs = evosax.HillClimbing(
        pop, X0, std_schedule=lambda t: jnp.maximum(init_std * std_decay ** (t + 1), std_min)
    )
    params = theirs.default_params
    key = jax.random.key(0)
    state = ours.init(key, X0)
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        their_state = theirs.init(key, X0, params).replace(std=jnp.float32(init_std))
    np.testing.assert_array_equal(their_state.mean, state.mean)
    tell = jax.jit(ours.tell)
    moves = []
    for step in range(N_STEPS):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, step))
        population, state = ours.ask(ask_key, state)
        fitness = quadratic(population)
        state, metrics = tell(tell_key, state, population, fitness)
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(tell_key, population, -fitness, their_state, params)
        err = f"generation {step}"
        np.testing.assert_array_equal(state.mean, their_state.mean, err_msg=err)
        np.testing.assert_array_equal(state.fitness, -their_state.best_fitness_shaped, err_msg=err)
        np.testing.assert_allclose(state.std, their_state.std, rtol=1e-6, err_msg=err)
        moves.append(float(metrics["moved"]))
    assert 0 < sum(moves) < N_STEPS, moves  # both branches of the move compared
