"""The algorithms' Gaussian and uniform noise: distribution, determinism, and vmap equal to
separate draws."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from evolax.algorithms.noise import gaussian, uniform


def test_draws_are_standard_normal():
    x = np.asarray(gaussian(jax.random.key(0), (400, 1000)), np.float64).ravel()
    assert stats.kstest(x, "norm").pvalue > 1e-3
    assert abs(x.mean()) < 5 / np.sqrt(x.size)
    assert abs(x.std() - 1) < 5e-3
    assert abs(stats.kurtosis(x, fisher=False) - 3) < 0.03
    # columns and rows are uncorrelated (a stream reused across rows would show here)
    y = x.reshape(400, 1000)
    assert abs(np.corrcoef(y[:, 0], y[:, 1])[0, 1]) < 0.2
    assert abs(np.corrcoef(y[0], y[1])[0, 1]) < 0.15


def test_uniform_draws_are_uniform_and_batch_like_separate_draws():
    u = np.asarray(uniform(jax.random.key(0), (200, 1000)), np.float64).ravel()
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    assert u.min() >= 0.0 and u.max() < 1.0
    keys = jax.random.split(jax.random.key(1), 3)
    batched = jax.jit(jax.vmap(lambda k: uniform(k, (4, 6))))(keys)
    for i, key in enumerate(keys):
        np.testing.assert_array_equal(batched[i], uniform(key, (4, 6)))
    with pytest.raises(TypeError, match="dtype"):
        uniform(jax.random.key(0), (3,), jnp.int32)


def test_pure_function_of_key_and_keys_differ():
    a = gaussian(jax.random.key(3), (5, 7))
    np.testing.assert_array_equal(a, gaussian(jax.random.key(3), (5, 7)))
    np.testing.assert_array_equal(a, jax.jit(gaussian, static_argnums=1)(jax.random.key(3), (5, 7)))
    assert not np.any(np.asarray(a) == np.asarray(gaussian(jax.random.key(4), (5, 7))))
    assert gaussian(jax.random.key(0), (3,), jnp.bfloat16).dtype == jnp.bfloat16
    assert gaussian(jax.random.key(0), (0, 4)).shape == (0, 4)


def test_vmap_equals_separate_draws():
    keys = jax.random.split(jax.random.key(1), 3)
    batched = jax.jit(jax.vmap(lambda k: gaussian(k, (4, 6))))(keys)
    for i, key in enumerate(keys):
        np.testing.assert_array_equal(batched[i], gaussian(key, (4, 6)))
    assert not np.array_equal(batched[0], batched[1])


def test_nested_vmap_and_unbatched_key():
    keys = jax.random.split(jax.random.key(2), 6).reshape(2, 3)
    nested = jax.vmap(jax.vmap(lambda k: gaussian(k, (5,))))(keys)
    for i in range(2):
        for j in range(3):
            np.testing.assert_array_equal(nested[i, j], gaussian(keys[i, j], (5,)))
    # a vmap over something else with the key closed over draws the same noise for each
    same = jax.vmap(lambda s: s * gaussian(keys[0, 0], (5,)))(jnp.ones(4))
    np.testing.assert_array_equal(same, np.broadcast_to(gaussian(keys[0, 0], (5,)), (4, 5)))


def test_bad_arguments():
    with pytest.raises(TypeError, match="dtype"):
        gaussian(jax.random.key(0), (3,), jnp.int32)
    with pytest.raises(ValueError, match="shape"):
        gaussian(jax.random.key(0), (-1,))
