"""SVCMAES against evosax 0.3.2's ``SV_CMA_ES``, update by update.

Both start from the same particle means; evolax asks, both are told the SAME population
(evosax the negated fitness), and after every tell all particles' means, step sizes, paths and
covariances agree to float32 accuracy.

Mappings: evosax's ``population_size`` is evolax's ``pop_size / n_particles``, its
``num_populations`` is ``n_particles`` and its population is laid out by particle as
evolax's; ``std_init``, ``kernel_std`` and ``alpha`` are evosax's ``Params``. evosax's CMA-ES
uses the tutorial's constants (Hansen, 2016, table 1), evolax pycma 4's
(:func:`~evolax.algorithms.cma.cma_family.cma_parameters`): evosax's ``weights, mu_eff, c_std,
d_std, c_c, c_1, c_mu, chi_n`` are set to evolax's. evolax decomposes ``C`` every generation
(``eigen_interval=1``), as evosax does in each ``ask``. What stays different is evolax's
pycma ``h_sigma`` test and its cap on a step-size change; the test checks that neither acts
in these generations (``h_sigma = 1`` by both tests, the cap not reached).

The SV update itself is the same in both (and in the first evosax implementation, the
pre-0.3 ``evosax.strategies.SV_CMA_ES``): particle ``i`` steps ``<y>_w + alpha / std_i (1/n)
sum_j grad_{m_j} k(m_j, m_i)``, and its paths accumulate that step. We could not read the
paper's method section and rely on those two implementations (Lange, evosax's author, is a
co-author of the paper).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from evolax.algorithms.cma.cma_family import cma_parameters
from evolax.algorithms.cma.sv_cma_es import SVCMAES
from helpers import X0, quadratic

evosax = pytest.importorskip("evosax.algorithms")

N_PARTICLES, PER_PARTICLE = 3, 6
RTOL, ATOL = 2e-5, 2e-6


def evosax_params(theirs, dim, init_std, kernel_std, alpha):
    """evosax's defaults with evolax's pycma constants and the SV hyper-parameters."""
    p = cma_parameters(dim, PER_PARTICLE)
    return theirs.default_params.replace(
        std_init=jnp.asarray(init_std),
        weights=jnp.asarray(p.weights, jnp.float32),
        mu_eff=p.mu_eff,
        c_std=p.c_sigma,
        d_std=p.d_sigma,
        c_c=p.c_c,
        c_1=p.c1,
        c_mu=p.c_mu,
        chi_n=p.chi_n,
        kernel_std=kernel_std,
        alpha=alpha,
    )


def their_h_sigma(p, p_std, generation):
    """evosax's ``h_std`` (the tutorial's test, as ``CMA_ES.h_std`` counts generations)."""
    norm = np.linalg.norm(np.asarray(p_std), axis=1)
    bound = (1.4 + 2 / (p_std.shape[1] + 1)) * p.chi_n
    return norm / math.sqrt(1 - (1 - p.c_sigma) ** (2 * (generation + 2))) < bound


@pytest.mark.slow  # reference check against evosax (nox -s slow)
@pytest.mark.parametrize("alpha", [0.0, 0.3])
def test_sv_cma_es_matches_evosax(alpha):
    x0 = ravel_pytree(X0)[0]
    dim = x0.shape[0]
    init_std, kernel_std = 0.4, 1.5
    ours = SVCMAES(
        pop_size=N_PARTICLES * PER_PARTICLE,
        n_particles=N_PARTICLES,
        init_std=init_std,
        init_spread=1.0,
        kernel_std=kernel_std,
        alpha=alpha,
        eigen_interval=1,
    )
    p = cma_parameters(dim, PER_PARTICLE)
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        theirs = evosax.SV_CMA_ES(PER_PARTICLE, N_PARTICLES, x0)
        params = evosax_params(theirs, dim, init_std, kernel_std, alpha)
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
            _, their_asked = theirs.ask(ask_key, their_state, params)  # decomposes C
            their_state, _ = theirs.tell(tell_key, population, -fitness, their_asked, params)
        # the rules evolax takes from pycma do not act here
        assert float(metrics["h_sigma"]) == 1.0
        assert np.all(their_h_sigma(p, their_state.p_std, generation))
        exponent = p.c_sigma / p.d_sigma * (np.linalg.norm(new.p_sigma, axis=1) / p.chi_n - 1)
        assert np.all(exponent < 1.0)
        if alpha:  # the kernel's step is not negligible
            assert float(metrics["repulsion_norm"]) > 1e-2  # 1e4 times the tolerance
        err = f"generation {generation}"
        for ours_value, their_value in [
            (new.mean, their_state.mean),
            (new.std, their_state.std),
            (new.p_sigma, their_state.p_std),
            (new.p_c, their_state.p_c),
            (new.cov, their_state.C),
        ]:
            np.testing.assert_allclose(ours_value, their_value, rtol=RTOL, atol=ATOL, err_msg=err)
        assert float(jnp.min(jnp.linalg.norm(new.mean - state.mean, axis=1))) > 1e-3  # all moved
        state = new
