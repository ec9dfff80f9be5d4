"""The language-model policy and the text tasks: rewards against hand-checked completions,
and a population of seeded low-rank members decoding inside one trainer step."""

from __future__ import annotations

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax import Trainer
from evolax.algorithms import LowRankES, OpenES
from evolax.lm import LMConfig, init_params, save_pretrained
from evolax.lm.tokenizer import ByteTokenizer
from evolax.policies import LanguageModel
from evolax.tasks import Arithmetic
from evolax.tasks.text.common import number_tokens, pack

BYTES = ByteTokenizer()
SMALL = LMConfig(vocab_size=259, d_model=32, n_layers=1, n_heads=2, d_ff=64, max_len=16)


def text(tokens) -> str:
    return BYTES.decode(np.asarray(tokens))


def test_the_byte_tokenizer_round_trips_and_pads_on_the_left():
    ids, valid = BYTES.encode_batch(["12+3=", "héllo"], 8)
    assert text(ids[0]) == "12+3=" and text(ids[1]) == "héllo"
    assert ids[0, :3].tolist() == [256] * 3 and valid[0].tolist() == [False] * 3 + [True] * 5
    assert BYTES.decode([49, 50, 258, 51]) == "12"  # stops at EOS
    with pytest.raises(ValueError, match="over length=2"):
        BYTES.encode_batch(["abc"], 2)


@pytest.mark.parametrize(("x", "shown"), [(0, "0"), (7, "7"), (120, "120"), (9999, "9999")])
def test_numbers_are_written_without_leading_zeros(x, shown):
    tokens, length = number_tokens(jnp.asarray(x), 5)
    assert text(tokens) == shown and int(length) == len(shown)
    prompt = pack([tokens, jnp.array([ord("+")]), number_tokens(jnp.asarray(3), 2)[0]])
    assert (text(prompt) == shown + "+3" and int(prompt[0]) == 256) or len(shown) == 4


def completions(*texts: str, length: int = 5):
    rows = [
        BYTES.encode(t)[:length] + [BYTES.eos_id] * (length - len(BYTES.encode(t))) for t in texts
    ]
    return jnp.asarray([r[:length] for r in rows], jnp.int32)


def test_arithmetic_rewards_the_number_written_first():
    task = Arithmetic(n_digits=2, batch_size=6, completion_len=5)
    state = task.reset(jax.random.key(3))
    prompts = [text(p) for p in state.obs]
    answers = [str(eval(p[:-1])) for p in prompts]  # hand check: Python's own arithmetic
    assert [text(a) for a in state.answers] == answers
    right = completions(*answers)
    assert float(task.step(state, right, None)[1]) == 1.0
    wrong = completions(*(a + "1" for a in answers))  # a digit too many is wrong
    assert float(task.step(state, wrong, None)[1]) == 0.0
    spaced = completions(*(a + " ok" for a in answers))  # then anything but a digit is fine
    assert float(task.step(state, spaced, None)[1]) == 1.0
    partial = Arithmetic(n_digits=2, batch_size=6, completion_len=5, reward="digits")
    last_wrong = completions(*(a[:-1] + ("0" if a[-1] != "0" else "1") for a in answers))
    expected = np.mean([(len(a) - 1) / len(a) for a in answers])
    np.testing.assert_allclose(partial.step(state, last_wrong, None)[1], expected, rtol=1e-6)


def test_the_held_out_problems_never_appear_in_training_batches():
    test = Arithmetic(n_digits=1, test=True, test_size=20)
    train = Arithmetic(n_digits=1, batch_size=512, test_size=20)
    held = {text(p) for p in test.reset(jax.random.key(0)).obs}
    assert len(held) == 20
    seen = {text(p) for p in train.reset(jax.random.key(1)).obs}
    assert len(seen) > 60 and not held & seen
    multiply = Arithmetic(n_digits=2, operation="*", test=True, test_size=5)
    state = multiply.reset(jax.random.key(0))
    assert [text(a) for a in state.answers] == [str(eval(text(p)[:-1])) for p in state.obs]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_digits": 0}, "^n_digits must be a positive integer, got 0$"),
        ({"n_digits": 5}, "^n_digits must be at most 4, got 5$"),
        ({"batch_size": 0}, "^batch_size must be a positive integer, got 0$"),
        ({"n_digits": 1, "test_size": 100}, "^test_size must leave training problems"),
    ],
)
def test_arithmetic_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Arithmetic(**kwargs)


def test_the_policy_decodes_a_batch_of_prompts():
    policy = LanguageModel(completion_len=5, model=SMALL)
    task = Arithmetic(n_digits=2, batch_size=3, completion_len=5)
    params = policy.init(jax.random.key(0), task.obs_shape, task.action_shape)
    state = task.reset(jax.random.key(1))
    tokens, _ = policy.apply(params, state.obs, policy.reset(jax.random.key(0)), jax.random.key(2))
    assert tokens.shape == (3, 5) and tokens.dtype == jnp.int32
    with pytest.raises(ValueError, match="completion_len is 4 but the task asks for 5"):
        LanguageModel(completion_len=4, model=SMALL).init(
            jax.random.key(0), task.obs_shape, task.action_shape
        )


def test_a_policy_starts_from_a_checkpoint(tmp_path):
    params = init_params(SMALL, jax.random.key(5))
    save_pretrained(tmp_path, SMALL, params)
    policy = LanguageModel.from_pretrained(tmp_path, completion_len=5)
    assert policy.model == SMALL
    loaded = policy.init(jax.random.key(0), (2, 6), (2, 5))
    assert jax.tree.all(jax.tree.map(lambda x, y: bool(jnp.all(x == y)), loaded, params))


@pytest.mark.parametrize(
    "algorithm, model",
    [
        (LowRankES(pop_size=8, rank=2), SMALL),
        pytest.param(OpenES(pop_size=8), SMALL, marks=pytest.mark.slow),
        pytest.param(  # float master weights, int8 forward (tests/lm/test_int8.py)
            LowRankES(pop_size=8, rank=2, layer_scale="rms"),
            dataclasses.replace(SMALL, weight_dtype="int8"),
            marks=pytest.mark.slow,
        ),
    ],
)
def test_a_seeded_population_trains_in_one_compiled_step(algorithm, model):
    task = Arithmetic(n_digits=1, batch_size=4, completion_len=3)
    trainer = Trainer(
        algorithm, LanguageModel(completion_len=3, model=model), task, mesh=None, pop_chunk=None
    )
    state = trainer.init(jax.random.key(0))
    chex.clear_trace_counter()  # counted per function: the other parameter's run traced it

    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(state):
        return trainer.step(state)

    for _ in range(2):
        state, metrics = step(state)
    fitness = np.asarray(metrics["fitness_mean"]) if "fitness_mean" in metrics else None
    assert fitness is None or 0.0 <= float(fitness) <= 1.0


def test_a_user_task_from_two_jax_functions():
    """Prompts "a?" whose answer is the same letter: the reward is checked by hand."""
    from evolax.tasks import PromptTask

    def prompts(key, batch):
        letters = jax.random.randint(key, (batch,), ord("a"), ord("z") + 1)
        return jnp.stack([letters, jnp.full(batch, ord("?"))], axis=1), letters

    def reward(completion, answer):
        return (completion[0] == answer).astype(jnp.float32)

    held = (jnp.array([[ord("q"), ord("?")]]), jnp.array([ord("q")]))
    task = PromptTask(prompts, reward, completion_len=2, batch_size=5, test_prompts=held)
    state = task.reset(jax.random.key(0))
    echo = jnp.stack([state.obs[:, 0], state.obs[:, 0]], axis=1)
    assert float(task.step(state, echo, None)[1]) == 1.0
    assert float(task.step(state, echo.at[:2, 0].set(ord("!")), None)[1]) == pytest.approx(0.6)
    test = PromptTask(prompts, reward, 2, test_prompts=held, test=True)
    assert test.obs_shape == (1, 2) and text(test.reset(jax.random.key(0)).obs[0]) == "q?"
    with pytest.raises(ValueError, match="test=True needs test_prompts"):
        PromptTask(prompts, reward, 2, test=True)
