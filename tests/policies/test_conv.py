"""ConvNet against direct numpy convolution, pooling and a float64 forward pass."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from evolax.policies.base import EmptyState
from evolax.policies.conv import DIRECT_MAX_IN_CHANNELS, ConvNet, conv2d, conv_relu_pool, max_pool

OBS_SHAPE, ACTION_SHAPE = (4, 28, 28, 1), (4, 10)


def numpy_conv_loop(x, w, b):
    """'SAME' stride-1 cross-correlation, one output element at a time."""
    n, h, wd, c_in = x.shape
    k, _, _, c_out = w.shape
    before, after = (k - 1) // 2, k // 2
    padded = np.zeros((n, h + k - 1, wd + k - 1, c_in))
    padded[:, before : before + h, before : before + wd] = x
    assert padded.shape[1] == before + h + after
    out = np.zeros((n, h, wd, c_out))
    for i in range(n):
        for r in range(h):
            for c in range(wd):
                for o in range(c_out):
                    total = b[o]
                    for dr in range(k):
                        for dc in range(k):
                            for ch in range(c_in):
                                total += padded[i, r + dr, c + dc, ch] * w[dr, dc, ch, o]
                    out[i, r, c, o] = total
    return out


def numpy_conv_fast(x, w, b):
    """The same convolution summed over kernel offsets (for 28x28 inputs)."""
    k = w.shape[0]
    before = (k - 1) // 2
    h, wd = x.shape[1:3]
    padded = np.pad(x, ((0, 0), (before, k - 1 - before), (before, k - 1 - before), (0, 0)))
    out = np.zeros((*x.shape[:3], w.shape[-1])) + b
    for dr in range(k):
        for dc in range(k):
            out += padded[:, dr : dr + h, dc : dc + wd] @ w[dr, dc]
    return out


def numpy_pool(x):
    n, h, w, c = x.shape
    x = x[:, : h // 2 * 2, : w // 2 * 2]
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def numpy_forward(params, obs):
    """The whole network in float64 numpy."""
    x = np.asarray(obs, np.float64)
    for layer in params["conv"]:
        w, b = (np.asarray(layer[name], np.float64) for name in ("w", "b"))
        x = numpy_pool(np.maximum(numpy_conv_fast(x, w, b), 0.0))
    x = x.reshape(x.shape[0], -1)
    logits = x @ np.asarray(params["dense"]["w"], np.float64) + np.asarray(params["dense"]["b"])
    logits -= logits.max(axis=1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))


@pytest.fixture(scope="module")
def params():
    return jax.jit(lambda k: ConvNet().init(k, OBS_SHAPE, ACTION_SHAPE))(jax.random.key(1))


def random_biases(params, key):
    """The same network with non-zero biases (init makes them zero)."""
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(key, len(leaves))
    leaves = [
        x + 0.1 * jax.random.normal(k, x.shape) if x.ndim == 1 else x
        for x, k in zip(leaves, keys, strict=True)
    ]
    return jax.tree.unflatten(tree, leaves)


def test_parameter_count_and_shapes(params):
    flat, _ = ravel_pytree(params)
    assert flat.shape == (11274,)
    shapes = jax.tree.map(lambda x: x.shape, params)
    assert shapes == {
        "conv": [{"w": (5, 5, 1, 8), "b": (8,)}, {"w": (5, 5, 8, 16), "b": (16,)}],
        "dense": {"w": (784, 10), "b": (10,)},
    }
    other_batch = ConvNet().init(jax.random.key(0), (1, 28, 28, 1), (1, 10))
    assert ravel_pytree(other_batch)[0].shape == (11274,)


def test_init_is_lecun_normal_with_zero_biases():
    params = ConvNet().init(jax.random.key(2), (1, 28, 28, 3), (1, 7))
    for layer in [*params["conv"], params["dense"]]:
        np.testing.assert_array_equal(layer["b"], 0.0)
        w = np.asarray(layer["w"])
        fan_in = np.prod(w.shape[:-1])
        np.testing.assert_allclose(w.std() * np.sqrt(fan_in), 1.0, rtol=0.25)
        assert abs(w.mean()) * np.sqrt(fan_in) < 0.3
    assert params["dense"]["w"].shape == (7 * 7 * 16, 7)
    assert params["conv"][0]["w"].shape == (5, 5, 3, 8)


def test_output_is_log_probabilities(params, key):
    obs = jax.random.uniform(key, OBS_SHAPE)
    policy = ConvNet()
    log_probs, state = jax.jit(policy.apply)(params, obs, policy.reset(key), key)
    assert log_probs.shape == ACTION_SHAPE and log_probs.dtype == jnp.float32
    assert isinstance(state, EmptyState)
    np.testing.assert_allclose(jax.nn.logsumexp(log_probs, axis=1), 0.0, atol=1e-5)


@pytest.mark.parametrize(("k", "size"), [(5, 6), (3, 5)])
def test_conv2d_matches_a_numpy_loop(k, size):
    rng = np.random.default_rng(k)
    x = rng.standard_normal((2, size, size, 2)).astype(np.float32)
    w = rng.standard_normal((k, k, 2, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    expected = numpy_conv_loop(x.astype(np.float64), w.astype(np.float64), b)
    np.testing.assert_allclose(conv2d(x, w, b), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [6, 7])
def test_max_pool_matches_numpy(size):
    x = np.random.default_rng(size).standard_normal((2, size, size, 3)).astype(np.float32)
    pooled = max_pool(x)
    assert pooled.shape == (2, size // 2, size // 2, 3)
    np.testing.assert_array_equal(pooled, numpy_pool(x))


@pytest.mark.parametrize(
    ("k", "size", "c_in"),
    [(5, 8, 1), (4, 7, 2), (3, 9, DIRECT_MAX_IN_CHANNELS), (5, 6, DIRECT_MAX_IN_CHANNELS + 1)],
)
def test_conv_relu_pool_matches_a_numpy_loop(k, size, c_in):
    """Both paths (direct for few input channels, XLA's convolution otherwise), odd sizes too."""
    rng = np.random.default_rng(size)
    x = rng.standard_normal((2, size, size, c_in)).astype(np.float32)
    w = rng.standard_normal((k, k, c_in, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    expected = numpy_pool(np.maximum(numpy_conv_loop(x.astype(np.float64), w, b), 0.0))
    got = jax.jit(conv_relu_pool)(x, w, b)
    assert got.shape == (2, size // 2, size // 2, 3)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_forward_matches_numpy(params, key):
    params = random_biases(params, jax.random.key(3))
    obs = jax.random.uniform(key, OBS_SHAPE)
    log_probs, _ = jax.jit(ConvNet().apply)(params, obs, EmptyState(), key)
    np.testing.assert_allclose(log_probs, numpy_forward(params, obs), rtol=1e-4, atol=1e-4)


def test_vmap_over_population_with_shared_obs(key):
    policy = ConvNet()
    keys = jax.random.split(jax.random.key(4), 3)
    population = jax.jit(jax.vmap(lambda k: policy.init(k, OBS_SHAPE, ACTION_SHAPE)))(keys)
    population = random_biases(population, jax.random.key(5))
    obs = jax.random.uniform(key, OBS_SHAPE)
    batched = jax.jit(jax.vmap(policy.apply, in_axes=(0, None, None, None)))
    log_probs, _ = batched(population, obs, EmptyState(), key)
    assert log_probs.shape == (3, *ACTION_SHAPE)
    single = jax.jit(policy.apply)
    for i in range(3):
        params = jax.tree.map(lambda x, i=i: x[i], population)
        expected, _ = single(params, obs, EmptyState(), key)
        np.testing.assert_allclose(log_probs[i], expected, rtol=1e-5, atol=1e-5)


def test_rejects_bad_shapes_and_config(key):
    policy = ConvNet()
    for obs_shape in [(28, 28, 1), (4, 28, 28, 1, 1), (4, 0, 28, 1), (4, 28.0, 28, 1)]:
        with pytest.raises(ValueError, match="obs_shape"):
            policy.init(key, obs_shape, ACTION_SHAPE)
    with pytest.raises(ValueError, match=r"obs_shape.*too small"):
        policy.init(key, (4, 3, 28, 1), ACTION_SHAPE)
    for action_shape in [(10,), (4, 10, 1), (4, -1)]:
        with pytest.raises(ValueError, match="action_shape"):
            policy.init(key, OBS_SHAPE, action_shape)
    with pytest.raises(ValueError, match="batch"):
        policy.init(key, OBS_SHAPE, (5, 10))
    with pytest.raises(ValueError, match="obs"):
        policy.apply({}, jnp.zeros((28, 28, 1)), EmptyState(), key)
    with pytest.raises(ValueError, match="channels"):
        ConvNet(channels=())
    with pytest.raises(ValueError, match=r"channels\[1\]"):
        ConvNet(channels=(8, 0))
    with pytest.raises(ValueError, match="kernel_size"):
        ConvNet(kernel_size=0)
