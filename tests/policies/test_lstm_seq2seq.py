"""The LSTM cell and the Seq2Seq policy against a float64 numpy transcription."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from evolax.policies.base import EmptyState
from evolax.policies.lstm import lstm_init, lstm_step, lstm_zero_carry
from evolax.policies.seq2seq import Seq2Seq

OBS_SHAPE, ACTION_SHAPE = (5, 8, 12), (5, 4, 10)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_lstm_step(params, h, c, x):
    """Hochreiter & Schmidhuber's cell with a forget gate, gates in order i, f, g, o."""
    wx, wh, b = (np.asarray(params[k], np.float64) for k in ("wx", "wh", "b"))
    hidden = h.shape[-1]
    z = x @ wx + h @ wh + b
    i, f, g, o = (z[:, k * hidden : (k + 1) * hidden] for k in range(4))
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def numpy_seq2seq(params, obs, hidden, output_length):
    obs = np.asarray(obs, np.float64)
    h = c = np.zeros((obs.shape[0], hidden))
    for t in range(obs.shape[1]):
        h, c = numpy_lstm_step(params["encoder"], h, c, obs[:, t])
    w, b = (np.asarray(params["out"][k], np.float64) for k in ("w", "b"))
    previous = np.zeros((obs.shape[0], b.shape[0]))
    outputs = []
    for _ in range(output_length):
        h, c = numpy_lstm_step(params["decoder"], h, c, previous)
        logits = h @ w + b
        previous = np.eye(b.shape[0])[logits.argmax(-1)]  # greedy: feed back the choice
        outputs.append(logits)
    return np.stack(outputs, axis=1)


def with_random_biases(params, key, scale=0.3):
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(key, len(leaves))
    leaves = [
        x + scale * jax.random.normal(k, x.shape) if x.ndim == 1 else x
        for x, k in zip(leaves, keys, strict=True)
    ]
    return jax.tree.unflatten(tree, leaves)


def test_lstm_step_matches_numpy(key):
    params = with_random_biases(lstm_init(key, 3, 6), jax.random.key(1))
    rng = np.random.default_rng(0)
    h, c = rng.standard_normal((2, 4, 6))
    x = rng.standard_normal((4, 3))
    got = jax.jit(lstm_step)(params, (jnp.asarray(h, jnp.float32), jnp.asarray(c, jnp.float32)), x)
    for a, b in zip(got, numpy_lstm_step(params, h, c, x), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    zeros = lstm_zero_carry(4, 6)
    assert [z.shape for z in zeros] == [(4, 6), (4, 6)]


def test_lstm_init_is_lecun_normal(key):
    params = lstm_init(key, 40, 32)
    assert params["wx"].shape == (40, 128) and params["wh"].shape == (32, 128)
    np.testing.assert_array_equal(params["b"], 0.0)
    for name, fan_in in (("wx", 40), ("wh", 32)):
        w = np.asarray(params[name])
        np.testing.assert_allclose(w.std() * np.sqrt(fan_in), 1.0, rtol=0.1)
        assert abs(w.mean()) * np.sqrt(fan_in) < 0.1


def test_parameter_count_of_the_papers_model(key):
    params = jax.jit(lambda k: Seq2Seq().init(k, (1, 8, 12), (1, 4, 10)))(key)
    assert ravel_pytree(params)[0].shape == (551_434,)  # "hundreds of thousands"
    shapes = jax.tree.map(lambda x: x.shape, params)
    assert shapes["encoder"] == {"wx": (12, 1024), "wh": (256, 1024), "b": (1024,)}
    assert shapes["decoder"] == {"wx": (10, 1024), "wh": (256, 1024), "b": (1024,)}
    assert shapes["out"] == {"w": (256, 10), "b": (10,)}


def test_forward_matches_numpy_greedy_decoding(key):
    policy = Seq2Seq(hidden_size=16, output_length=4)
    params = with_random_biases(policy.init(key, OBS_SHAPE, ACTION_SHAPE), jax.random.key(2))
    tokens = np.random.default_rng(1).integers(0, 12, OBS_SHAPE[:2])
    obs = jax.nn.one_hot(tokens, 12)
    logits, state = jax.jit(policy.apply)(params, obs, policy.reset(key), key)
    assert logits.shape == ACTION_SHAPE and isinstance(state, EmptyState)
    expected = numpy_seq2seq(params, obs, 16, 4)
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.slow  # 9 s; test_low_rank_forward batches a population of these LSTMs
def test_vmap_over_population_with_shared_obs(key):
    policy = Seq2Seq(hidden_size=8)
    population = jax.vmap(lambda k: policy.init(k, OBS_SHAPE, ACTION_SHAPE))(
        jax.random.split(key, 3)
    )
    obs = jax.nn.one_hot(np.random.default_rng(2).integers(0, 12, OBS_SHAPE[:2]), 12)
    batched, _ = jax.jit(jax.vmap(policy.apply, in_axes=(0, None, None, None)))(
        population, obs, EmptyState(), key
    )
    for i in range(3):
        single, _ = policy.apply(jax.tree.map(lambda x, i=i: x[i], population), obs, None, key)
        np.testing.assert_allclose(batched[i], single, rtol=1e-5, atol=1e-5)


def test_rejects_bad_shapes_and_config(key):
    for kwargs, match in [({"hidden_size": 0}, "hidden_size"), ({"output_length": 0}, "output")]:
        with pytest.raises(ValueError, match=match):
            Seq2Seq(**kwargs)
    policy = Seq2Seq(hidden_size=8, output_length=4)
    with pytest.raises(ValueError, match="obs_shape"):
        policy.init(key, (5, 8), ACTION_SHAPE)
    with pytest.raises(ValueError, match="action_shape"):
        policy.init(key, OBS_SHAPE, (5, 4, 0))
    with pytest.raises(ValueError, match="output_length is 4"):
        policy.init(key, OBS_SHAPE, (5, 3, 10))
    with pytest.raises(ValueError, match="obs"):
        policy.apply({}, jnp.zeros((8, 12)), None, key)
