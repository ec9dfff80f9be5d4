"""Seeded populations' Gaussian noise (:func:`evolax.seeded.normal`): Threefry's published
answers, ``jax.random.normal``'s numbers bit for bit, and standard, independent members."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from evolax.seeded import draw, normal, seeded_population, threefry2x32


@pytest.mark.parametrize(
    ("key", "counter", "expected"),
    [  # Random123's known-answer vectors for Threefry-2x32-20 (kat_vectors)
        ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
        ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
    ],
)
def test_threefry_known_answers(key, counter, expected):
    out = threefry2x32(*(jnp.uint32(x) for x in (*key, *counter)))
    assert tuple(int(x) for x in out) == expected


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16, jnp.float16])
def test_normal_is_jax_random_normal(dtype):
    base = jax.random.key(7)
    index = jnp.arange(3)
    ours = jax.jit(jax.vmap(lambda i: normal(jax.random.fold_in(base, i), 1001, dtype)))(index)
    jax_ = jax.vmap(lambda i: jax.random.normal(jax.random.fold_in(base, i), (1001,), dtype))(index)
    assert ours.dtype == jax_.dtype
    np.testing.assert_array_equal(np.asarray(ours, np.float32), np.asarray(jax_, np.float32))


@pytest.mark.parametrize("key", [jax.random.PRNGKey(3), jax.random.key(3, impl="rbg")])
def test_normal_of_other_keys_is_jax_random_normal(key):
    # a raw uint32 key (Threefry's), and another generator's key (JAX's own draw)
    np.testing.assert_array_equal(normal(key, 5), jax.random.normal(key, (5,)))


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the CPU's program")
def test_normal_on_the_cpu_hashes_without_a_loop():
    # JAX's CPU Threefry loops over its rounds (about 5x slower); ours is written out
    text = jax.jit(lambda k: normal(k, 1000)).lower(jax.random.key(0)).as_text()
    assert "while" not in text


def test_seeded_noise_is_standard_and_independent():
    mean = {"w": jnp.zeros((200, 99)), "b": jnp.zeros(100)}  # rank 1: 200 + 99 + 100 numbers
    population = seeded_population(mean, jax.random.key(1), 0.1, 2000, rank=1, antithetic=True)
    members = 1000
    eps = np.asarray(jax.vmap(lambda i: draw(population, i))(jnp.arange(members)), np.float64)
    assert eps.shape == (members, population.noise_size)
    flat = eps.ravel()
    n = flat.size  # 4e5
    assert abs(flat.mean()) < 4 / np.sqrt(n)
    assert abs(flat.var() - 1) < 4 * np.sqrt(2 / n)
    assert abs(scipy.stats.skew(flat)) < 4 * np.sqrt(6 / n)
    assert abs(scipy.stats.kurtosis(flat)) < 4 * np.sqrt(24 / n)
    assert scipy.stats.kstest(flat, scipy.stats.norm.cdf).pvalue > 1e-3
    # different members' noise uncorrelated: of 1000 x 999 / 2 pairs of 399 numbers each, no
    # correlation past 5.5 standard errors, and their mean square that of independent ones
    corr = np.corrcoef(eps)[np.triu_indices(members, 1)]
    size = population.noise_size
    assert np.max(np.abs(corr)) < 5.5 / np.sqrt(size - 1)
    assert abs(np.mean(corr**2) * (size - 1) - 1) < 0.02
