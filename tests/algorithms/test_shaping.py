"""Fitness shaping against numpy and the formulas of the papers they come from."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.shaping import (
    centered_rank,
    cma_weights,
    finite_fitness,
    min_max,
    nes_utilities,
    weight_decay,
    z_score,
)

FITNESS = np.array([3.0, -1.0, 7.5, 0.0, 2.0, 2.0, -4.0, 10.0], np.float32)


def test_centered_rank_is_rank_over_n_minus_one_minus_half():
    ranks = np.argsort(np.argsort(FITNESS, kind="stable"), kind="stable")
    np.testing.assert_allclose(centered_rank(FITNESS), ranks / 7 - 0.5, atol=1e-6)
    assert float(centered_rank(jnp.array([1.0, jnp.nan, 0.0]))[1]) == -0.5  # NaN is worst


def test_z_score_and_min_max_match_numpy():
    expected = (FITNESS - FITNESS.mean()) / FITNESS.std()
    np.testing.assert_allclose(z_score(FITNESS), expected, rtol=1e-5, atol=1e-6)
    expected = (FITNESS - FITNESS.min()) / (FITNESS.max() - FITNESS.min())
    np.testing.assert_allclose(min_max(FITNESS), expected, rtol=1e-6)
    for shaping in (z_score, min_max):
        np.testing.assert_array_equal(shaping(jnp.full(5, 3.0)), 0.0)  # no signal, no NaN


def test_non_finite_fitness_takes_the_worst_or_best_finite_value():
    fitness = jnp.array([1.0, jnp.nan, 4.0, -jnp.inf, jnp.inf, 2.0])
    np.testing.assert_array_equal(finite_fitness(fitness), [1.0, 1.0, 4.0, 1.0, 4.0, 2.0])
    np.testing.assert_array_equal(finite_fitness(jnp.array([jnp.nan, -jnp.inf])), 0.0)
    for shaping in (z_score, min_max, cma_weights, centered_rank, nes_utilities):
        assert np.isfinite(np.asarray(shaping(fitness))).all(), shaping.__name__


def test_cma_weights_follow_hansens_formula():
    n, mu = 8, 4
    raw = np.log((n + 1) / 2) - np.log(np.arange(1, mu + 1))
    expected_by_rank = np.concatenate([raw / raw.sum(), np.zeros(n - mu)])
    weights = np.asarray(cma_weights(FITNESS))
    order = np.argsort(-FITNESS, kind="stable")  # best first; the tie 2.0, 2.0 by position
    np.testing.assert_allclose(weights[order], expected_by_rank, rtol=1e-6)
    assert weights.sum() == pytest.approx(1.0)
    # Hansen's tutorial: mu_eff of these weights for n = 8
    assert 1.0 / np.sum(weights**2) == pytest.approx(1.0 / np.sum((raw / raw.sum()) ** 2))


def test_weight_decay_subtracts_the_mean_square():
    flat = jax.random.normal(jax.random.key(0), (8, 5))
    expected = FITNESS - 0.1 * np.mean(np.asarray(flat) ** 2, axis=1)
    np.testing.assert_allclose(weight_decay(FITNESS, flat, 0.1), expected, rtol=1e-6)
    with pytest.raises(ValueError, match="flat_population"):
        weight_decay(FITNESS, flat[:4], 0.1)


def test_shapings_jit_and_vmap():
    batch = jnp.stack([FITNESS, -FITNESS])
    for shaping in (centered_rank, z_score, min_max, cma_weights, nes_utilities):
        out = jax.jit(jax.vmap(shaping))(batch)
        np.testing.assert_allclose(out[0], shaping(FITNESS), rtol=1e-6, atol=1e-7)


def test_nes_utilities_sum_to_zero_and_share_the_worse_half():
    utilities = np.asarray(nes_utilities(FITNESS))
    assert abs(utilities.sum()) < 1e-6
    order = np.argsort(-FITNESS, kind="stable")
    assert np.all(np.diff(utilities[order]) <= 1e-7)  # best first, non-increasing
    np.testing.assert_allclose(utilities[order[4:]], -1 / 8)  # log(5) - log(i) <= 0 for i >= 5
