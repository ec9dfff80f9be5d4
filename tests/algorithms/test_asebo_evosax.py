"""ASEBO against evosax 0.3.2's ``ASEBO`` (tests only): the same mean updates and exploration
weight once evosax's subspace is replaced by the paper's, and the subspace difference itself.

Both libraries start from the same state; evolax asks, and both are told the SAME population:
evolax its fitness, evosax the negated fitness (evosax minimises). Mappings:

- evosax's gradient ``0.5 sum (L+ - L-) (x - mean) / std^2`` is ``-n`` times evolax's
  ``sum (f+ - f-) g / (2 n std)`` (the paper's, with ``g = (x - mean) / std``); evosax then
  rescales it to norm ``D`` (``grad / (|grad| / D + 1e-8)``, as the authors' code does, not
  the paper) before its optimizer: evolax gets that as an optax transformation chained
  before the same Adam, which makes the two steps equal;
- evosax's identity fitness shaping is evolax's ``raw``; its constant ``std_schedule`` is
  evolax's fixed ``init_std``;
- evosax's ``alpha = |grad UUT_ort| / (|grad UUT| + 1e-8)`` clipped to ``[0, 1]`` is
  evolax's, given the same projector ``UUT`` (and ``UUT_ort = I - UUT``).

Where evosax departs from the paper (Choromanski et al., 2019, algorithm 1), evolax follows the
paper, and the second test shows the difference: evosax's active subspace is the top
``subspace_dims`` right singular vectors of the CENTRED last ``subspace_dims + 1`` gradients,
not the leading eigenvectors of their decayed second moment ``Cov_t = gamma Cov_{t-1} + (1 -
gamma) grad grad^T`` (its ``grad_decay`` parameter is unused). Centring removes the mean
gradient direction: two equal gradients give evosax an empty subspace, the paper the gradient's
direction. (evosax also leaves its samples unnormalised, ``N(0, std^2 Sigma)`` with ``trace
Sigma ~ 1``, where the paper rescales them to the norm of an isotropic draw: its ``std`` is
``sqrt(D)`` times evolax's; ``ask`` is not compared.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from evolax.algorithms.base import mirrored
from evolax.algorithms.es.asebo import ASEBO
from helpers import X0, quadratic

evosax = pytest.importorskip("evosax")
from evosax.algorithms import ASEBO as EvosaxASEBO  # noqa: E402

pytestmark = pytest.mark.slow

DIM = 8
RTOL, ATOL = 2e-5, 2e-6  # float32, a few updates


def to_norm_dim():
    """evosax's (and the authors' code's) rescaling of the gradient to norm ``D``."""
    return optax.stateless(lambda u, params: u / (jnp.linalg.norm(u) / DIM + 1e-8))


def projector(algo, state):
    basis = state.basis * algo.active(state)[:, None]
    return basis.T @ basis


def test_asebo_matches_evosax_given_the_same_subspace():
    """Eight generations (warmup 2): after each tell the means agree, and from the third on
    (evosax's subspace is ``ready`` once its generation counter exceeds ``subspace_dims = 1``)
    so does alpha, evosax's ``UUT`` being set to evolax's projector before its tell."""
    pop, std, lr = 10, 0.3, 0.05
    ours = ASEBO(pop_size=pop, optimizer=optax.chain(to_norm_dim(), optax.adam(lr)),
                 init_std=std, pca_threshold=0.9, max_rank=4, warmup=2)  # fmt: skip
    theirs = EvosaxASEBO(pop, X0, subspace_dims=1, optimizer=optax.adam(lr),
                         std_schedule=optax.constant_schedule(std))  # fmt: skip
    params = theirs.default_params
    key = jax.random.key(0)
    state = ours.init(key, X0)
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        their_state = theirs.init(key, X0, params)
    tell = jax.jit(ours.tell)
    alphas = []
    for step in range(8):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, step))
        population, state_asked = ours.ask(ask_key, state)
        fitness = quadratic(population)
        shared = projector(ours, state_asked)
        their_state = their_state.replace(UUT=shared, UUT_ort=jnp.eye(DIM) - shared)
        new, _ = tell(tell_key, state_asked, population, fitness)
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(tell_key, population, -fitness, their_state, params)
        err = f"generation {step}"
        np.testing.assert_allclose(new.mean, their_state.mean, rtol=RTOL, atol=ATOL, err_msg=err)
        assert float(jnp.max(jnp.abs(new.mean - state.mean))) > 1e-3, err
        # evosax keeps the raw gradient, -n times evolax's: its direction is the new one
        newest = their_state.grad_subspace[-1]
        if step == 0:  # evolax's first eigenvector is that gradient's direction
            cosine = jnp.dot(new.basis[0], newest) / jnp.linalg.norm(newest)
            assert abs(float(cosine)) == pytest.approx(1.0, abs=1e-5)
        if step >= 2:
            np.testing.assert_allclose(new.alpha, their_state.alpha, rtol=1e-4, err_msg=err)
            alphas.append(float(new.alpha))
        state = new
    assert min(alphas) < 1.0  # the exploration weight was adapted, not saturated


def evosax_subspace(theirs, their_state, params, gradients):
    """evosax's ``UUT`` for the gradient archive ``gradients`` (its ``ask`` computes it)."""
    with jax.numpy_rank_promotion("allow"):
        _, asked = theirs.ask(jax.random.key(0), their_state.replace(grad_subspace=gradients),
                              params)  # fmt: skip
    return asked.UUT


def test_evosax_centres_the_gradients_and_loses_their_direction():
    """The same gradient told twice: the paper's ``Cov_t`` is rank one along it, and so is
    evolax's active subspace; evosax's centred archive is 0 (its copy of the gradient is set
    exactly, without the rounding of two tells), so its ``UUT`` is 0 and it samples
    isotropically. With two consistent noisy gradients ``d + 0.1 n_i``, the paper's leading
    eigenvector is close to ``d``, evosax's is their difference, nearly orthogonal to ``d``.
    Its ``grad_decay`` changes nothing."""
    pop, std, lr = 10, 0.3, 0.05
    ours = ASEBO(pop_size=pop, optimizer=optax.chain(to_norm_dim(), optax.adam(lr)),
                 init_std=std, max_rank=4, warmup=0)  # fmt: skip
    theirs = EvosaxASEBO(pop, X0, subspace_dims=1, optimizer=optax.adam(lr),
                         std_schedule=optax.constant_schedule(std))  # fmt: skip
    params = theirs.default_params
    key = jax.random.key(0)
    state = ours.init(key, X0)
    with jax.numpy_rank_promotion("allow"):
        their_state = theirs.init(key, X0, params)
    g = jax.random.normal(jax.random.key(1), (pop // 2, DIM))
    fitness = jax.random.normal(jax.random.key(2), (pop,))
    _, unravel = ravel_pytree(X0)
    for _ in range(2):  # the same directions and fitness around the current mean
        population = jax.vmap(unravel)(mirrored(state.mean, std * g))
        state, _ = ours.tell(key, state, population, fitness)
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(key, population, -fitness, their_state, params)
        np.testing.assert_allclose(state.mean, their_state.mean, rtol=RTOL, atol=ATOL)
    gradient = their_state.grad_subspace[-1]
    np.testing.assert_allclose(their_state.grad_subspace[0], gradient, rtol=1e-4)
    direction = gradient / jnp.linalg.norm(gradient)
    np.testing.assert_allclose(projector(ours, state), jnp.outer(direction, direction),
                               atol=1e-5)  # fmt: skip
    assert int(jnp.sum(ours.active(state))) == 1
    twice = jnp.stack([gradient, gradient])
    their_state = their_state.replace(generation_counter=2)  # evosax's subspace is ready
    np.testing.assert_array_equal(
        evosax_subspace(theirs, their_state, params, twice), jnp.zeros((DIM, DIM))
    )

    d = np.zeros(DIM, np.float32)
    d[3] = 1.0
    noise = 0.1 * np.random.default_rng(0).standard_normal((2, DIM)).astype(np.float32)
    consistent = jnp.asarray(d + noise)
    theirs_uut = evosax_subspace(theirs, their_state, params, consistent)
    _, vectors = np.linalg.eigh(np.asarray(consistent, np.float64).T @ np.asarray(consistent))
    assert abs(vectors[:, -1] @ d) > 0.97  # the paper's leading direction
    assert float(d @ theirs_uut @ d) < 0.05  # evosax's misses it
    unused = evosax_subspace(theirs, their_state, params.replace(grad_decay=0.5), consistent)
    np.testing.assert_array_equal(theirs_uut, unused)  # grad_decay is not used
