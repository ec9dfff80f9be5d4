"""SimulatedAnnealing against evosax 0.3.2's ``SimulatedAnnealing``, update by update, with the
same Metropolis draws (slow: ``nox -s slow``).

Both start from the same state; evolax asks, and both are told the SAME population with the
SAME key (evolax its fitness, evosax the negated fitness: evosax minimises). Both draw the
acceptance from that key with the same call, ``jax.random.uniform(key)``, so they accept and
reject the same moves. After every tell the chain's current point (evolax ``population[0]``,
evosax ``mean``), its fitness (evolax ``fitness[0]``, evosax ``-fitness``), the temperature
and the step size must agree. The fitness is a continuous random quadratic, so no two samples
tie.

Mappings: evosax accepts a worse move with probability ``exp(-delta / (k T))`` with a
Boltzmann constant ``k`` (default 5), evolax with ``exp(delta / T)``: evolax's temperature is
evosax's ``k T``, so evosax's defaults ``T_0 = 1, T_limit = 0.1, decay = 0.999, k = 5`` are
evolax's ``init_temperature = 5, temperature_min = 0.5, temperature_decay = 0.999`` (its
defaults; compared with ``k = 5`` as is), and any other schedule is compared with ``k = 1``.
The step size maps as in HillClimbing's test: evosax's ``std_schedule(t) = max(init_std *
std_decay^(t + 1), std_min)``, its initial ``std`` overwritten with ``init_std``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.baselines.simulated_annealing import SimulatedAnnealing
from helpers import X0, quadratic

pytestmark = pytest.mark.slow
evosax = pytest.importorskip("evosax.algorithms")

DIM, N_STEPS = 8, 12


CASES = {
    # evolax's defaults (evosax's, k folded into T), 8 proposals of std 1
    "evosax-defaults": (dict(pop_size=8), dict(), 1.0),
    # the paper's single proposal, cooling fast, the step decaying to a floor
    "one-proposal": (
        dict(
            pop_size=1,
            init_std=0.5,
            std_decay=0.9,
            std_min=0.3,
            init_temperature=10.0,
            temperature_decay=0.8,
            temperature_min=0.4,
        ),
        dict(
            temperature_init=10.0,
            temperature_limit=0.4,
            temperature_decay=0.8,
            boltzmann_constant=1.0,
        ),
        0.9,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_simulated_annealing_matches_evosax(case):
    kwargs, their_params, std_decay = CASES[case]
    ours = SimulatedAnnealing(**kwargs)
    init_std, std_min = ours.init_std, ours.std_min
    theirs = evosax.SimulatedAnnealing(
        ours.pop_size,
        X0,
        std_schedule=lambda t: jnp.maximum(init_std * std_decay ** (t + 1), std_min),
    )
    params = theirs.default_params.replace(**their_params)
    if not their_params:  # evolax's defaults are evosax's, with k folded into T
        k = params.boltzmann_constant
        assert ours.init_temperature == k * params.temperature_init
        assert ours.temperature_min == pytest.approx(k * params.temperature_limit)
        assert ours.temperature_decay == params.temperature_decay
        assert (ours.init_std, ours.std_decay) == (1.0, 1.0)  # evosax's constant schedule
    key = jax.random.key(0)
    state = ours.init(key, X0)
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        their_state = theirs.init(key, X0, params).replace(std=jnp.float32(init_std))
    np.testing.assert_array_equal(their_state.mean, state.population[0])
    tell = jax.jit(ours.tell)
    kinds = set()
    for step in range(N_STEPS):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, step))
        population, state_asked = ours.ask(ask_key, state)
        fitness = quadratic(population)
        new, metrics = tell(tell_key, state_asked, population, fitness)
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(tell_key, population, -fitness, their_state, params)
        err = f"generation {step}"
        np.testing.assert_array_equal(new.population[0], their_state.mean, err_msg=err)
        np.testing.assert_array_equal(new.fitness[0], -their_state.fitness, err_msg=err)
        np.testing.assert_allclose(
            new.temperature,
            params.boltzmann_constant * their_state.temperature,
            rtol=1e-6,
            err_msg=err,
        )
        np.testing.assert_allclose(new.std, their_state.std, rtol=1e-6, err_msg=err)
        worse = bool(jnp.max(fitness) < state.fitness[0])
        kinds.add(("worse" if worse else "better", float(metrics["accepted"])))
        state = new
    # improvements, and worse moves both accepted and rejected by the shared draws
    assert kinds == {("better", 1.0), ("worse", 1.0), ("worse", 0.0)}, kinds
