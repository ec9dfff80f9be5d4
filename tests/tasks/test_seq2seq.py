"""Seq2SeqAddition against Python string arithmetic and numpy rewards."""

import collections

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.tasks.seq2seq import VOCAB, Seq2SeqAddition, Seq2SeqState, decode


def as_strings(state: Seq2SeqState) -> tuple[list[str], list[str]]:
    queries, answers, _ = decode(jax.device_get(state))
    return queries, answers


@pytest.mark.parametrize("n_digits", [1, 3, 4])
def test_queries_and_answers_are_zero_padded_sums(n_digits, key):
    task = Seq2SeqAddition(batch_size=256, n_digits=n_digits)
    assert task.obs_shape == (256, 2 * n_digits + 2, 12)
    assert task.action_shape == (256, n_digits + 1, 10)
    state = eqx.filter_jit(task.reset)(key)
    assert state.obs.shape == task.obs_shape and state.obs.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(state.obs).sum(axis=-1), 1.0)  # one-hot
    np.testing.assert_array_equal(state.predictions, -1)
    for query, answer in zip(*as_strings(state), strict=True):
        a, b = query[:-1].split("+")
        assert len(a) == len(b) == n_digits and query[-1] == "="
        assert answer == f"{int(a) + int(b):0{n_digits + 1}d}"


def test_problem_index_layout():
    task = Seq2SeqAddition(n_digits=3)
    state = task.problems(jnp.array([12345, 999999, 0, 7]))
    queries, answers = as_strings(state)
    assert queries == ["012+345=", "999+999=", "000+000=", "000+007="]
    assert answers == ["0357", "1998", "0000", "0007"]
    assert VOCAB == "0123456789+="


def test_training_draws_are_uniform_over_the_problems_not_held_out():
    """n_digits=1: 100 problems, 10 held out; every other one drawn about equally often."""
    task = Seq2SeqAddition(batch_size=4000, n_digits=1)
    test_task = Seq2SeqAddition(n_digits=1, test=True)
    held_out = set(as_strings(test_task.reset(jax.random.key(0)))[0])
    assert len(held_out) == 10 and test_task.obs_shape[0] == 10
    states = jax.jit(lambda t, k: jax.vmap(t.reset)(k))(
        task, jax.random.split(jax.random.key(1), 5)
    )
    counts = collections.Counter()
    for i in range(5):
        counts.update(as_strings(jax.tree.map(lambda x, i=i: x[i], states))[0])
    assert not held_out & set(counts)
    assert len(counts) == 90
    expected = 20_000 / 90
    # a binomial count's standard deviation is about sqrt(222) = 15; allow 5 of them
    assert all(abs(n - expected) < 5 * np.sqrt(expected) for n in counts.values())


def test_held_out_set_is_shared_fixed_and_never_trained_on():
    task, test_task = Seq2SeqAddition(batch_size=2048), Seq2SeqAddition(test=True)
    np.testing.assert_array_equal(task.held_out, test_task.held_out)
    assert test_task.obs_shape[0] == 10_000 and len(np.unique(task.held_out)) == 10_000
    other = Seq2SeqAddition(test=True, test_seed=1)
    assert not np.array_equal(other.held_out, test_task.held_out)
    keys = jax.random.split(jax.random.key(2), 50)
    obs = jax.jit(lambda t, k: jax.vmap(t.reset)(k).obs)(task, keys)
    digits = np.asarray(obs).argmax(-1)  # [50, batch, 8]
    index = (
        digits[..., 0] * 100_000
        + digits[..., 1] * 10_000
        + digits[..., 2] * 1_000
        + digits[..., 4] * 100
        + digits[..., 5] * 10
        + digits[..., 6]
    )
    assert not np.isin(index, np.asarray(task.held_out)).any()
    test_state = test_task.reset(jax.random.key(3))
    np.testing.assert_array_equal(test_state.obs, test_task.reset(jax.random.key(4)).obs)


def numpy_rewards(logits: np.ndarray, answers: np.ndarray) -> dict[str, float]:
    logits = logits.astype(np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(log_probs, answers[..., None], axis=-1)
    correct = logits.argmax(-1) == answers
    return {
        "cross_entropy": float(picked.mean()),
        "token_accuracy": float(correct.mean()),
        "sequence_accuracy": float(correct.all(-1).mean()),
    }


@pytest.mark.parametrize("reward", ["cross_entropy", "token_accuracy", "sequence_accuracy"])
def test_rewards_match_numpy(reward, key):
    task = Seq2SeqAddition(batch_size=64, reward=reward)
    state = task.reset(key)
    answers = np.asarray(state.answers)
    # right answers, then a wrong digit in a third of the rows, plus noise
    logits = 3.0 * np.eye(10)[answers]
    logits[::3, 1] = 5.0 * np.eye(10)[(answers[::3, 1] + 1) % 10]
    logits += np.random.default_rng(0).normal(0, 0.5, logits.shape)
    new_state, got, done = eqx.filter_jit(task.step)(state, jnp.asarray(logits, jnp.float32), key)
    assert bool(done)
    assert float(got) == pytest.approx(numpy_rewards(logits, answers)[reward], abs=1e-5)
    np.testing.assert_array_equal(new_state.predictions, logits.argmax(-1))
    np.testing.assert_array_equal(new_state.obs, state.obs)


def test_default_rewards():
    assert Seq2SeqAddition().reward == "cross_entropy"
    assert Seq2SeqAddition(test=True).reward == "sequence_accuracy"
    assert Seq2SeqAddition(test=True, reward="token_accuracy").reward == "token_accuracy"


def test_render_table(key):
    task = Seq2SeqAddition(batch_size=8)
    state = task.reset(key)
    logits = 3.0 * jax.nn.one_hot(state.answers, 10)
    done_state, _, _ = task.step(state, logits, key)
    image = task.render(jax.device_get(done_state), rows=5)
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert image.shape[0] > image.shape[1] / 4  # six lines (header + 5) of ~20 characters
    assert not np.array_equal(image, task.render(jax.device_get(state), rows=5))


def test_rejects_bad_arguments(key):
    for kwargs, match in [
        ({"batch_size": 0}, "batch_size"),
        ({"n_digits": 0}, "n_digits"),
        ({"n_digits": 5}, "n_digits must be at most 4"),
        ({"test": 1}, "test"),
        ({"reward": "accuracy"}, "reward"),
        ({"n_digits": 1, "test_size": 100}, "test_size"),
        ({"test_size": 0}, "test_size"),
    ]:
        with pytest.raises(ValueError, match=match):
            Seq2SeqAddition(**kwargs)
    task = Seq2SeqAddition(batch_size=4)
    with pytest.raises(ValueError, match="action_shape"):
        task.step(task.reset(key), jnp.zeros((4, 3, 10)), key)
    with pytest.raises(ValueError, match="one state"):
        decode(jax.vmap(task.reset)(jax.random.split(key, 2)))
