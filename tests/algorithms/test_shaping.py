"""Fitness shaping against numpy and the formulas of the papers they come from."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.shaping import (
    centered_rank,
    chain,
    cma_weights,
    finite_fitness,
    min_max,
    nes_utilities,
    rank_utilities,
    raw,
    weight_decay,
    z_score,
)

FITNESS = np.array([3.0, -1.0, 7.5, 0.0, 2.0, 2.0, -4.0, 10.0], np.float32)
SHAPINGS = (raw, centered_rank, z_score, min_max, cma_weights, nes_utilities)
NON_FINITE = jnp.array([1.0, jnp.nan, 4.0, -jnp.inf, jnp.inf, 2.0])


def test_centered_rank_is_rank_over_n_minus_one_minus_half():
    ranks = np.argsort(np.argsort(FITNESS, kind="stable"), kind="stable")
    np.testing.assert_allclose(centered_rank(FITNESS), ranks / 7 - 0.5, atol=1e-6)
    assert float(centered_rank(jnp.array([1.0, jnp.nan, 0.0]))[1]) == -0.5  # NaN is worst
    # every non-finite value (+inf too: the template's rule) ranks with the worst
    np.testing.assert_array_equal(np.asarray(centered_rank(NON_FINITE))[[1, 3, 4]], -0.5)


def test_z_score_and_min_max_match_numpy():
    expected = (FITNESS - FITNESS.mean()) / FITNESS.std()
    np.testing.assert_allclose(z_score(FITNESS), expected, rtol=1e-5, atol=1e-6)
    expected = (FITNESS - FITNESS.min()) / (FITNESS.max() - FITNESS.min())
    np.testing.assert_allclose(min_max(FITNESS), expected, rtol=1e-6)
    for shaping in (z_score, min_max):
        np.testing.assert_array_equal(shaping(jnp.full(5, 3.0)), 0.0)  # no signal, no NaN


def test_raw_is_the_fitness_with_the_worst_finite_value_for_non_finite_ones():
    np.testing.assert_array_equal(raw(FITNESS), FITNESS)
    np.testing.assert_array_equal(raw(NON_FINITE), finite_fitness(NON_FINITE))


def test_non_finite_fitness_takes_the_worst_finite_value():
    """NaN, -inf and +inf alike: the template never lets a non-finite fitness count as better."""
    np.testing.assert_array_equal(finite_fitness(NON_FINITE), [1.0, 1.0, 4.0, 1.0, 1.0, 2.0])
    np.testing.assert_array_equal(finite_fitness(jnp.array([jnp.nan, -jnp.inf])), 0.0)
    for shaping in SHAPINGS:
        assert np.isfinite(np.asarray(shaping(NON_FINITE))).all(), shaping.__name__


def test_rank_utilities_give_non_finite_fitness_the_worst_ranks_utility():
    by_rank = np.array([3.0, 2.0, 1.0, 0.5, 0.25, -1.0], np.float32)  # best first
    fitness = jnp.array([0.0, 5.0, 2.0, 2.0, -3.0, 1.0])  # the tie 2.0, 2.0 by position
    expected = [0.25, 3.0, 2.0, 1.0, -1.0, 0.5]
    np.testing.assert_array_equal(rank_utilities(fitness, by_rank), expected)
    # the two best keep theirs; every non-finite value (NaN, +-inf) gets by_rank[-1]
    np.testing.assert_array_equal(
        rank_utilities(NON_FINITE, by_rank), [1.0, -1.0, 3.0, -1.0, -1.0, 2.0]
    )
    assert rank_utilities(NON_FINITE, by_rank).dtype == NON_FINITE.dtype


def test_cma_weights_follow_hansens_formula():
    n, mu = 8, 4
    raw_weights = np.log((n + 1) / 2) - np.log(np.arange(1, mu + 1))
    expected_by_rank = np.concatenate([raw_weights / raw_weights.sum(), np.zeros(n - mu)])
    weights = np.asarray(cma_weights(FITNESS))
    order = np.argsort(-FITNESS, kind="stable")  # best first; the tie 2.0, 2.0 by position
    np.testing.assert_allclose(weights[order], expected_by_rank, rtol=1e-6)
    assert weights.sum() == pytest.approx(1.0)
    # Hansen's tutorial: mu_eff of these weights for n = 8
    assert 1.0 / np.sum(weights**2) == pytest.approx(
        1.0 / np.sum((raw_weights / raw_weights.sum()) ** 2)
    )


def test_weight_decay_subtracts_the_mean_square():
    flat = jax.random.normal(jax.random.key(0), (8, 5))
    expected = FITNESS - 0.1 * np.mean(np.asarray(flat) ** 2, axis=1)
    np.testing.assert_allclose(weight_decay(0.1)(FITNESS, flat), expected, rtol=1e-6)
    np.testing.assert_array_equal(weight_decay(0.0)(FITNESS, flat), FITNESS)
    for x in (flat[:4], None, flat[0]):
        with pytest.raises(ValueError, match="flat population"):
            weight_decay(0.1)(FITNESS, x)
    with pytest.raises(ValueError, match="coefficient"):
        weight_decay(-0.1)


def test_chain_applies_shapings_in_order():
    flat = jax.random.normal(jax.random.key(1), (8, 5))
    penalised = FITNESS - 5.0 * np.mean(np.asarray(flat) ** 2, axis=1)
    shaping = chain(weight_decay(5.0), centered_rank)
    np.testing.assert_allclose(shaping(FITNESS, flat), centered_rank(penalised), atol=1e-6)
    assert not np.allclose(shaping(FITNESS, flat), centered_rank(FITNESS))  # the decay matters
    twice = chain(centered_rank, z_score)(FITNESS)
    np.testing.assert_allclose(twice, z_score(centered_rank(FITNESS)), rtol=1e-6)
    np.testing.assert_array_equal(chain()(FITNESS), FITNESS)
    np.testing.assert_allclose(jax.jit(shaping)(FITNESS, flat), shaping(FITNESS, flat), atol=1e-7)
    # equal chains are equal and hash alike (algorithms hold them as static fields: no retrace)
    assert shaping == chain(weight_decay(5.0), centered_rank)
    assert hash(shaping) == hash(chain(weight_decay(5.0), centered_rank))
    assert shaping != chain(weight_decay(0.1), centered_rank)
    with pytest.raises(ValueError, match="shaping functions"):
        chain(centered_rank, 0.5)


def test_shapings_take_fitness_and_the_population():
    flat = jnp.zeros((8, 3))
    for shaping in SHAPINGS:
        np.testing.assert_array_equal(shaping(FITNESS, flat), shaping(FITNESS), shaping.__name__)


def test_shapings_jit_and_vmap():
    batch = jnp.stack([FITNESS, -FITNESS])
    for shaping in SHAPINGS:
        out = jax.jit(jax.vmap(shaping))(batch)
        np.testing.assert_allclose(out[0], shaping(FITNESS), rtol=1e-6, atol=1e-7)


def test_nes_utilities_sum_to_zero_and_share_the_worse_half():
    utilities = np.asarray(nes_utilities(FITNESS))
    assert abs(utilities.sum()) < 1e-6
    order = np.argsort(-FITNESS, kind="stable")
    assert np.all(np.diff(utilities[order]) <= 1e-7)  # best first, non-increasing
    np.testing.assert_allclose(utilities[order[4:]], -1 / 8)  # log(5) - log(i) <= 0 for i >= 5


def test_rank_utilities_take_the_callers_ranking_as_their_own():
    """With ``order`` (the caller's argsort, best first) the utilities are those it computes."""
    by_rank = np.linspace(1.0, -1.0, NON_FINITE.shape[0])
    for fitness in (jnp.asarray(FITNESS[:6]), NON_FINITE):
        order = jnp.argsort(-jnp.where(jnp.isfinite(fitness), fitness, -jnp.inf), stable=True)
        np.testing.assert_array_equal(
            rank_utilities(fitness, by_rank, order), rank_utilities(fitness, by_rank)
        )
