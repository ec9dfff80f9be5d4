"""The MNIST task on small synthetic subsets, against numpy cross-entropy and accuracy."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.data import mnist
from evolax.data.mnist import MnistData
from evolax.policies.conv import ConvNet
from evolax.rollout import episode_keys, evaluate
from evolax.tasks.mnist import MNIST, MnistState
from helpers import shared_data_dir

N_TRAIN, N_TEST = 512, 256


@pytest.fixture(scope="module")
def data() -> MnistData:
    """Random images (all distinct) with random labels: a stand-in for MNIST."""
    rng = np.random.default_rng(0)
    return MnistData(
        train_images=rng.integers(0, 256, (N_TRAIN, 28, 28), dtype=np.uint8),
        train_labels=rng.integers(0, 10, N_TRAIN).astype(np.uint8),
        test_images=rng.integers(0, 256, (N_TEST, 28, 28), dtype=np.uint8),
        test_labels=rng.integers(0, 10, N_TEST).astype(np.uint8),
    )


def numpy_log_likelihood(logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean log-softmax of the true class, in float64."""
    logits = logits.astype(np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(np.mean(log_probs[np.arange(len(labels)), labels]))


def test_shapes_and_train_batch(data, key):
    task = MNIST(batch_size=64, data=data)
    assert task.max_steps == 1
    assert task.obs_shape == (64, 28, 28, 1) and task.action_shape == (64, 10)
    state = eqx.filter_jit(task.reset)(key)
    assert isinstance(state, MnistState)
    assert state.obs.shape == task.obs_shape and state.obs.dtype == jnp.float32
    assert state.labels.shape == (64,) and state.labels.dtype == jnp.int32
    obs, labels = np.asarray(state.obs), np.asarray(state.labels)
    assert 0.0 <= obs.min() and obs.max() <= 1.0
    # Every row is a training image (scaled by 1/255) with its own label.
    pixels = np.rint(obs[..., 0] * 255).astype(np.uint8)
    np.testing.assert_allclose(obs[..., 0], pixels / np.float32(255), rtol=1e-6)
    for row, label in zip(pixels, labels, strict=True):
        (match,) = np.flatnonzero((data.train_images == row).all(axis=(1, 2)))
        assert label == data.train_labels[match]


def test_reset_keys(data):
    task = MNIST(batch_size=32, data=data)
    reset = eqx.filter_jit(task.reset)
    a, b, c = (reset(jax.random.key(seed)) for seed in (1, 1, 2))
    np.testing.assert_array_equal(a.obs, b.obs)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert not np.array_equal(a.obs, c.obs)


def test_train_batches_are_drawn_without_replacement(data):
    flat = data.train_images.reshape(N_TRAIN, 784)
    assert len(np.unique(flat, axis=0)) == N_TRAIN  # images identify their rows
    for batch_size in (N_TRAIN, N_TRAIN // 2):  # batch_size may equal the training-set size
        task = MNIST(batch_size=batch_size, data=data)
        keys = jax.random.split(jax.random.key(3), 5)
        states = jax.jit(lambda task, keys: jax.vmap(task.reset)(keys))(task, keys)
        pixels = np.rint(np.asarray(states.obs[..., 0]) * 255).astype(np.uint8)
        for batch in pixels.reshape(5, batch_size, 784):
            _, index = np.unique(np.concatenate([flat, batch]), axis=0, return_inverse=True)
            assert len(np.unique(index[N_TRAIN:])) == batch_size  # no image twice in a batch


@pytest.mark.parametrize("scale", [0.0, 1.0, 7.0])
def test_train_reward_of_one_hot_logits(data, key, scale):
    task = MNIST(batch_size=128, data=data)
    state = task.reset(key)
    logits = scale * jax.nn.one_hot(state.labels, 10)
    _, reward, done = eqx.filter_jit(task.step)(state, logits, key)
    expected = scale - np.log(np.exp(scale) + 9.0)  # log-softmax of the true class, every row
    np.testing.assert_allclose(reward, expected, rtol=1e-6, atol=1e-6)
    assert reward.shape == () and bool(done)


def test_train_reward_of_random_logits(data, key):
    task = MNIST(batch_size=128, data=data)
    state = task.reset(key)
    logits = 3.0 * jax.random.normal(jax.random.key(5), task.action_shape)
    _, reward, _ = task.step(state, logits, key)
    expected = numpy_log_likelihood(np.asarray(logits), np.asarray(state.labels))
    np.testing.assert_allclose(reward, expected, rtol=1e-5)
    # Log-probabilities (a ConvNet's output) score the same as the logits they came from.
    _, again, _ = task.step(state, jax.nn.log_softmax(logits, axis=-1), key)
    np.testing.assert_allclose(again, reward, rtol=1e-5)


def test_test_mode_is_the_whole_test_set_in_order(data, key):
    task = MNIST(batch_size=8, test=True, data=data)  # batch_size is replaced by the test size
    assert task.batch_size == N_TEST
    assert task.obs_shape == (N_TEST, 28, 28, 1) and task.action_shape == (N_TEST, 10)
    a, b = task.reset(jax.random.key(1)), task.reset(jax.random.key(2))
    expected = data.test_images.astype(np.float32)[..., None] / np.float32(255)
    np.testing.assert_allclose(a.obs, expected, rtol=1e-6)
    np.testing.assert_array_equal(a.labels, data.test_labels)
    np.testing.assert_array_equal(a.obs, b.obs)


def test_test_reward_is_accuracy(data, key):
    task = MNIST(test=True, data=data)
    state = task.reset(key)
    labels = np.asarray(data.test_labels)
    step = eqx.filter_jit(task.step)
    _, reward, done = step(state, 4.0 * jax.nn.one_hot(labels, 10), key)
    assert float(reward) == 1.0 and bool(done)
    wrong = np.where(np.arange(N_TEST) < 64, labels, (labels + 1) % 10)  # first 64 right
    _, reward, _ = step(state, jax.nn.one_hot(wrong, 10), key)
    np.testing.assert_allclose(reward, 64 / N_TEST)
    logits = jax.random.normal(jax.random.key(6), task.action_shape)
    _, reward, _ = step(state, logits, key)
    np.testing.assert_allclose(reward, np.mean(np.argmax(np.asarray(logits), 1) == labels))


def test_rejects_bad_arguments(data, key):
    for batch_size in (0, -3, 1.5, True, "8"):
        with pytest.raises(ValueError, match="batch_size"):
            MNIST(batch_size=batch_size, data=data)
    with pytest.raises(ValueError, match=f"batch_size.*{N_TRAIN}"):
        MNIST(batch_size=N_TRAIN + 1, data=data)
    with pytest.raises(ValueError, match="data"):
        MNIST(data=(data.train_images, data.train_labels))
    with pytest.raises(ValueError, match="test"):
        MNIST(test="yes", data=data)
    task = MNIST(batch_size=16, data=data)
    with pytest.raises(ValueError, match="action_shape"):
        task.step(task.reset(key), jnp.zeros((16, 9)), key)


def test_evaluate_conv_net_population(data, key):
    """evolax.evaluate of a ConvNet population equals each individual scored by hand."""
    policy = ConvNet()
    task = MNIST(batch_size=32, data=data)
    keys = jax.random.split(jax.random.key(7), 3)
    init = jax.jit(jax.vmap(lambda k: policy.init(k, task.obs_shape, task.action_shape)))
    population = init(keys)
    run = jax.jit(lambda task, population, key: evaluate(policy, task, population, key))
    fitness, info = run(task, population, key)  # the task (its arrays) is a jit argument
    assert fitness.shape == (3,)
    np.testing.assert_array_equal(info.lengths, np.ones((3, 1)))
    reset_keys, _, _ = episode_keys(key, 1)
    state = task.reset(reset_keys[0])
    apply = jax.jit(lambda params, obs: policy.apply(params, obs, policy.reset(key), key)[0])
    for i in range(3):
        log_probs = apply(jax.tree.map(lambda x, i=i: x[i], population), state.obs)
        expected = numpy_log_likelihood(np.asarray(log_probs), np.asarray(state.labels))
        np.testing.assert_allclose(fitness[i], expected, rtol=1e-4)


def test_loads_the_real_dataset_by_default(monkeypatch, tmp_path, key):
    monkeypatch.setenv("EVOLAX_DATA_DIR", str(shared_data_dir()))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(mnist, "MIRRORS", ())  # never the network
    train = MNIST(batch_size=16)
    assert train.images.shape == (60000, 28, 28) and train.labels.shape == (60000,)
    assert train.reset(key).obs.shape == (16, 28, 28, 1)
    test = MNIST(test=True)
    assert test.batch_size == 10000 and test.obs_shape == (10000, 28, 28, 1)
    assert int(test.reset(key).labels[0]) == 7


def test_step_records_predictions_and_render_captions_them(data, key):
    task = MNIST(test=True, data=data)
    state = task.reset(key)
    np.testing.assert_array_equal(state.predictions, -1)
    labels = np.asarray(state.labels)
    guesses = labels.copy()
    guesses[1::2] = (guesses[1::2] + 1) % 10  # every other prediction wrong
    stepped, reward, _ = eqx.filter_jit(task.step)(state, jax.nn.one_hot(guesses, 10), key)
    np.testing.assert_array_equal(stepped.predictions, guesses)
    assert float(reward) == pytest.approx(0.5)
    before = task.render(jax.device_get(state), rows=2, columns=3)
    after = task.render(jax.device_get(stepped), rows=2, columns=3)
    assert before.shape == after.shape and before.dtype == np.uint8
    assert before.shape[1] > 3 * 84 and before.shape[0] > 2 * 84  # 3x digits in a 2x3 grid
    red = (after[..., 0] > 150) & (after[..., 1] < 80)
    green = (after[..., 1] > 100) & (after[..., 0] < 80)
    assert red.any() and green.any()
    assert not ((before[..., 0] > 150) & (before[..., 1] < 80)).any()  # captions in black
