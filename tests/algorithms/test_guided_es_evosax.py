"""Guided ES against evosax 0.3.2's ``GuidedES`` (tests only), update by update.

Both libraries start from the same state; evolax asks, and both are told the SAME population:
evolax its fitness, evosax the negated fitness (evosax minimises). evosax's ``tell`` reads the
perturbations its own ``ask`` drew (``state.z``), so ``z`` is set to evolax's population minus
the mean before each of its tells. evosax takes the surrogate gradient in ``state.grad``
before its ``ask``, which pushes it into its archive: after evolax's ``tell`` with a surrogate
gradient, evosax is given the same one and asks, and both archives and guiding subspaces must
agree. Mappings:

- evosax's ``alpha``, ``beta``, constant ``std_schedule`` and ``subspace_dims`` are evolax's
  ``alpha``, ``beta``, ``init_std`` and ``subspace_dims`` (the same covariance
  ``std^2 (alpha / D I + (1 - alpha) / k U U^T)``), its identity fitness shaping is ``raw``,
  and both take ``optax.sgd(lr)``;
- evosax's estimate ``beta sum (L+ - L-) eps / (2 std^2)`` leaves out the paper's ``1 / P``
  (algorithm 1: ``beta / (2 sigma^2 P)``, ``P = pop_size / 2`` pairs), so evosax is given
  ``beta / P``.

evosax also starts its archive with ``k`` zero gradients: until ``k`` have arrived, the QR
factorisation of the archive puts arbitrary coordinate axes into its guiding subspace (and
divides the subspace's share by ``k``), where evolax uses the span of the gradients told so
far; the test shows it for the first generation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from evolax.algorithms.es.asebo import principal_directions
from evolax.algorithms.es.guided_es import GuidedES

evosax = pytest.importorskip("evosax")
from evosax.algorithms import GuidedES as EvosaxGuidedES  # noqa: E402

pytestmark = pytest.mark.slow

X0 = {"b": jnp.array([0.5, -1.0]), "w": jnp.arange(6.0).reshape(3, 2) / 4}  # D = 8
DIM = 8
RTOL, ATOL = 2e-5, 2e-6  # float32, a few updates
RNG = np.random.default_rng(0)
SCALES = jnp.asarray(RNG.uniform(0.5, 3.0, DIM), jnp.float32)
TARGET = jnp.asarray(RNG.normal(size=DIM), jnp.float32)
BIAS = jnp.asarray(RNG.normal(size=DIM), jnp.float32)


def quadratic(flat):
    """A fixed random ellipsoid, maximised at a random target: no ties between samples."""
    return -jnp.sum(SCALES[None] * (flat - TARGET[None]) ** 2, axis=1)


def surrogate(mean):
    """The fitness gradient at ``mean`` plus a fixed bias (a biased surrogate)."""
    return -2 * SCALES * (mean - TARGET) + BIAS


def test_guided_es_matches_evosax():
    pop, std, alpha, beta, k, lr = 10, 0.3, 0.4, 1.5, 2, 0.02
    ours = GuidedES(pop_size=pop, subspace_dims=k, optimizer=optax.sgd(lr), init_std=std,
                    alpha=alpha, beta=beta)  # fmt: skip
    theirs = EvosaxGuidedES(pop, X0, subspace_dims=k, optimizer=optax.sgd(lr),
                            std_schedule=optax.constant_schedule(std))  # fmt: skip
    params = theirs.default_params.replace(alpha=alpha, beta=beta / (pop // 2))
    key = jax.random.key(0)
    state = ours.init(key, X0)
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        their_state = theirs.init(key, X0, params)
    tell = jax.jit(ours.tell)
    for step in range(6):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, step))
        population, state_asked = ours.ask(ask_key, state)
        flat = jax.vmap(lambda x: ravel_pytree(x)[0])(population)
        fitness = quadratic(flat)
        guide = surrogate(state_asked.mean)  # at the mean the population was drawn around
        new, _ = tell(tell_key, state_asked, population, fitness, surrogate_gradient=guide)
        their_state = their_state.replace(z=flat - their_state.mean[None])
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(tell_key, population, -fitness, their_state, params)
            _, their_state = theirs.ask(ask_key, their_state.replace(grad=guide), params)
        err = f"generation {step}"
        np.testing.assert_allclose(new.mean, their_state.mean, rtol=RTOL, atol=ATOL, err_msg=err)
        assert float(jnp.max(jnp.abs(new.mean - state.mean))) > 1e-3, err
        np.testing.assert_array_equal(new.surrogates, their_state.grad_subspace.T, err_msg=err)

        _, basis = principal_directions(new.surrogates)
        q, _ = jnp.linalg.qr(their_state.grad_subspace)
        if step == 0:  # one surrogate: evolax guides along it, evosax along it and an axis
            direction = guide / jnp.linalg.norm(guide)
            np.testing.assert_allclose(basis.T @ basis, jnp.outer(direction, direction),
                                       atol=1e-5)  # fmt: skip
            assert float(jnp.trace(q @ q.T)) == pytest.approx(2.0)
            axis = jnp.max(jnp.abs(q[:, 0]))
            assert float(axis) == pytest.approx(1.0)  # a coordinate axis, whatever the guide
        else:  # k surrogates: the same subspace
            np.testing.assert_allclose(basis.T @ basis, q @ q.T, atol=1e-5, err_msg=err)
        state = new


def test_evosax_leaves_out_the_mean_over_pairs():
    """With evosax's own ``beta`` (no ``1 / P``), its step is ``P`` times the paper's."""
    pop, std, lr = 10, 0.3, 0.02
    ours = GuidedES(pop_size=pop, optimizer=optax.sgd(lr), init_std=std)
    theirs = EvosaxGuidedES(pop, X0, optimizer=optax.sgd(lr),
                            std_schedule=optax.constant_schedule(std))  # fmt: skip
    params = theirs.default_params
    key = jax.random.key(0)
    state = ours.init(key, X0)
    with jax.numpy_rank_promotion("allow"):
        their_state = theirs.init(key, X0, params)
    population, state = ours.ask(key, state)
    flat = jax.vmap(lambda x: ravel_pytree(x)[0])(population)
    fitness = quadratic(flat)
    new, _ = ours.tell(key, state, population, fitness, surrogate_gradient=jnp.ones(DIM))
    their_state = their_state.replace(z=flat - their_state.mean[None])
    with jax.numpy_rank_promotion("allow"):
        their_state, _ = theirs.tell(key, population, -fitness, their_state, params)
    ours_step, their_step = new.mean - state.mean, their_state.mean - state.mean
    np.testing.assert_allclose(their_step, (pop // 2) * ours_step, rtol=1e-4, atol=1e-6)
