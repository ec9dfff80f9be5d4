"""OpenES, PGPE, ARS and SNES against evosax 0.3.2 (tests only), update by update.

Each test starts both libraries from the same state, lets evolax ``ask``, and tells both the
SAME population: evolax its fitness, evosax the negated fitness (evosax minimises). After
every ``tell`` the means and spreads must agree to float32 accuracy. evosax's
hyper-parameters and fitness shaping are mapped to evolax's explicitly (their defaults
differ; each test names the mapping). The fitness is a continuous random quadratic, so no
two individuals tie: evosax ranks ties by their average rank (``scipy.stats.rankdata``),
evolax by position.

For these four algorithms evosax implements the same update as evolax (once the
hyper-parameters are mapped), so every comparison is exact rather than a benchmark of final
fitness.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms import ARS, PGPE, SNES, OpenES
from evolax.algorithms.es.snes import default_std_lr
from evolax.algorithms.shaping import centered_rank, chain, weight_decay
from evolax.optim import clipup
from helpers import X0, quadratic

evosax = pytest.importorskip("evosax")
from evosax.algorithms import ARS as EvosaxARS  # noqa: E402
from evosax.algorithms import PGPE as EvosaxPGPE  # noqa: E402
from evosax.algorithms import SNES as EvosaxSNES  # noqa: E402
from evosax.algorithms import Open_ES as EvosaxOpenES  # noqa: E402
from evosax.core.fitness_shaping import (  # noqa: E402
    add_weight_decay,
    centered_rank_fitness_shaping_fn,
)
from evosax.core.optimizer import clipup as evosax_clipup  # noqa: E402

DIM = 8
RTOL, ATOL = 2e-5, 2e-6  # float32, a few updates


def compare_trajectories(ours, theirs, params, overrides, n_steps, std_of=lambda s: s.std):
    """``n_steps`` generations: evolax asks, both are told that population, and after each
    tell evolax's (mean, std) must equal evosax's (mean, ``std_of(state)``); returns evolax's
    states, the initial one first."""
    key = jax.random.key(0)
    state = ours.init(key, X0)
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        their_state = theirs.init(key, X0, params).replace(**overrides)
    np.testing.assert_allclose(their_state.mean, state.mean)
    np.testing.assert_allclose(std_of(their_state), state.std)
    tell = jax.jit(ours.tell)
    moved, states = [], [state]
    for step in range(n_steps):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, step))
        population, state_asked = ours.ask(ask_key, state)
        fitness = quadratic(population)
        new, _ = tell(tell_key, state_asked, population, fitness)
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(tell_key, population, -fitness, their_state, params)
        err = f"generation {step}"
        np.testing.assert_allclose(new.mean, their_state.mean, rtol=RTOL, atol=ATOL, err_msg=err)
        np.testing.assert_allclose(new.std, std_of(their_state), rtol=RTOL, atol=ATOL, err_msg=err)
        moved.append(float(jnp.max(jnp.abs(new.mean - state.mean))))
        state = new
        states.append(new)
    assert min(moved) > 1e-3  # every update did something to compare
    return states


@pytest.mark.parametrize(
    ("antithetic", "decay", "optimizer"),
    [(True, 0.0, "sgd"), (True, 2.0, "adam"), (False, 2.0, "sgd")],
)
def test_open_es_matches_evosax(antithetic, decay, optimizer):
    """evosax ``Open_ES`` with evolax's hyper-parameters. Mappings: the optimizer is shared
    (both hand it the loss gradient); evolax's ``chain(weight_decay(c), centered_rank)``
    subtracts ``c * mean(x^2)`` from the fitness, evosax's ``add_weight_decay(.., c')`` adds
    ``c' * sum(x^2)`` to the loss, so ``c' = c / D``; evolax multiplies ``std`` by
    ``std_decay`` (floored at ``std_min``) after each tell, evosax sets it to
    ``std_schedule(t)`` after tell ``t = 0, 1, ..`` (so the schedule is
    ``max(init_std * decay^(t + 1), std_min)``, and its initial state's std is overwritten
    with ``init_std``)."""
    pop, init_std, std_decay, std_min = 10, 0.3, 0.8, 0.2
    make = {"sgd": lambda: optax.sgd(0.2), "adam": lambda: optax.adam(0.05)}[optimizer]
    ours = OpenES(
        pop_size=pop,
        optimizer=make(),
        init_std=init_std,
        std_decay=std_decay,
        std_min=std_min,
        antithetic=antithetic,
        fitness_shaping=chain(weight_decay(decay), centered_rank),
    )
    theirs = EvosaxOpenES(
        pop,
        X0,
        use_antithetic_sampling=antithetic,
        optimizer=make(),
        std_schedule=lambda t: jnp.maximum(init_std * std_decay ** (t + 1), std_min),
        fitness_shaping_fn=add_weight_decay(centered_rank_fitness_shaping_fn, decay / DIM),
    )
    overrides = {"std": jnp.asarray(init_std, jnp.float32)}
    compare_trajectories(ours, theirs, theirs.default_params, overrides, n_steps=5)


@pytest.mark.filterwarnings("ignore:optax.global_norm is deprecated:DeprecationWarning")
@pytest.mark.parametrize("optimizer", ["sgd", "clipup"])
def test_pgpe_matches_evosax(optimizer):
    """evosax ``PGPE`` (symmetric sampling, centred ranks, the ``std_max_change`` clip: the
    same update as evolax's). Mappings: ``std_init, std_lr, std_max_change`` are evosax's
    ``Params``; evosax's default optimizer ``clipup(learning_rate, max_velocity)`` is evolax's
    ``clipup(learning_rate, max_speed=max_velocity)`` (evosax keeps the velocity before the
    learning rate and clips it at ``max_velocity / learning_rate``; it divides the gradient
    by ``norm + 1e-8``: the same up to float32 rounding)."""
    pop, init_std, std_lr, max_change = 12, 0.4, 3.0, 0.1
    if optimizer == "sgd":
        mine, their_optimizer = optax.sgd(0.3), optax.sgd(0.3)
    else:
        mine, their_optimizer = clipup(0.1, max_speed=0.2), evosax_clipup(0.1, max_velocity=0.2)
    ours = PGPE(
        pop_size=pop,
        optimizer=mine,
        init_std=init_std,
        std_lr=std_lr,
        std_max_change=max_change,
    )
    theirs = EvosaxPGPE(pop, X0, optimizer=their_optimizer)
    params = theirs.default_params.replace(
        std_init=init_std, std_lr=std_lr, std_max_change=max_change
    )
    states = compare_trajectories(ours, theirs, params, {}, n_steps=5)
    change = np.abs(np.asarray(states[1].std) / init_std - 1)
    assert np.any(change > max_change - 1e-6) and np.any(change < max_change - 1e-3)  # clipped


@pytest.mark.parametrize("top_directions", [None, 2])
def test_ars_matches_evosax(top_directions):
    """evosax ``ARS`` (Mania et al.'s V1-t: the top ``b`` directions by ``max(r+, r-)``, the
    step divided by ``b`` and the std of their ``2 b`` rewards, raw rewards). Mappings:
    evosax's defaults are ``optax.adam(1e-3)``, ``std = 1`` and ``b = N / 2`` (its
    ``elite_ratio = 0.5``); the paper's (and evolax's) are plain steps ``optax.sgd(0.02)``,
    ``nu = 0.03`` and ``b = N``: here both get ``optax.sgd(alpha)``, a constant
    ``std_schedule(nu)`` and ``elite_ratio = b / N``. evosax floors the rewards' std at 1e-8
    where evolax makes no step if it is 0 (equal rewards; not reached here)."""
    pop, alpha, nu = 12, 0.05, 0.1
    n = pop // 2
    b = n if top_directions is None else top_directions
    ours = ARS(pop_size=pop, top_directions=top_directions, optimizer=optax.sgd(alpha),
               init_std=nu)  # fmt: skip
    theirs = EvosaxARS(
        pop, X0, optimizer=optax.sgd(alpha), std_schedule=optax.constant_schedule(nu)
    )
    theirs.elite_ratio = b / n
    assert theirs.num_elites == b
    compare_trajectories(ours, theirs, theirs.default_params, {}, n_steps=5,
                         std_of=lambda s: jnp.asarray(s.std, jnp.float32))  # fmt: skip


@pytest.mark.parametrize("std_lr", [None, 0.3])
def test_snes_matches_evosax(std_lr):
    """evosax ``SNES`` (Wierstra et al., 2014, algorithm 6 with the NES utilities and
    ``eta_mu = 1``: the same update and defaults as evolax's). Mappings: evolax's
    ``init_std`` is evosax's ``std_init``; its ``std_lr`` (default ``(3 + ln d) / (5
    sqrt d)``, the same formula) is ``lr_std_init``; both step the mean with
    ``optax.sgd(1.0)``."""
    pop, init_std = 10, 0.7
    ours = SNES(pop_size=pop, init_std=init_std, std_lr=std_lr)
    theirs = EvosaxSNES(pop, X0)
    params = theirs.default_params.replace(std_init=init_std)
    np.testing.assert_allclose(params.lr_std_init, default_std_lr(DIM), rtol=1e-6)
    if std_lr is not None:
        params = params.replace(lr_std_init=std_lr)
    compare_trajectories(ours, theirs, params, {}, n_steps=5)
