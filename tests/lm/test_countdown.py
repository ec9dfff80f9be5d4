"""Countdown's expression reader against Python's own arithmetic, and its rewards against
hand-checked answers."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.lm.tokenizer import ByteTokenizer
from evolax.tasks import Countdown
from evolax.tasks.text.expression import evaluate

BYTES = ByteTokenizer()
EVALUATE = jax.jit(jax.vmap(evaluate))

WELL_FORMED = [
    "1+2*3",
    "(1+2)*3",
    " (25 - 5) * (4 + 1)",
    "((2))",
    "10-2-3",
    "2*3+4*5-6/3",
    "100/4/5",
    "7",
    "99*(98-97)+1",
]
BROKEN = ["2*(3", "2*3)", "2(3)", "(1)(2)", "1+", "*2", "", "()"]


def tokens(texts: list[str], length: int = 24, rows: int = 16) -> jnp.ndarray:
    """The texts as completions, repeated to ``rows`` rows (one shape: one compilation)."""
    texts = [texts[i % len(texts)] for i in range(rows)]
    ids = [BYTES.encode(t) + [BYTES.eos_id] * (length - len(t)) for t in texts]
    return jnp.asarray(ids, jnp.int32)


def test_expressions_evaluate_as_python_does():
    value, numbers, n, ok = (x[: len(WELL_FORMED)] for x in EVALUATE(tokens(WELL_FORMED)))
    assert bool(jnp.all(ok))
    np.testing.assert_allclose(value, [eval(e) for e in WELL_FORMED], rtol=1e-6)
    for expression, row, count in zip(WELL_FORMED, numbers, n, strict=True):
        written = [
            int(x)
            for x in expression.replace("(", " ")
            .replace(")", " ")
            .replace("+", " ")
            .replace("-", " ")
            .replace("*", " ")
            .replace("/", " ")
            .split()
        ]
        assert row[: int(count)].tolist() == written


def test_malformed_expressions_are_refused():
    _, _, _, ok = EVALUATE(tokens(BROKEN))
    assert not bool(jnp.any(ok))


def test_problems_are_solvable_and_the_rewards_check_the_rules():
    task = Countdown(n_numbers=3, max_number=9, batch_size=16, completion_len=16, reward="shaped")
    state = task.reset(jax.random.key(0))
    prompts = [BYTES.decode(p) for p in state.obs]
    numbers = [[int(x) for x in p.split("->")[0].split(",")] for p in prompts]
    targets = [int(p.split("->")[1].rstrip(":")) for p in prompts]
    assert all(1 <= t <= 999 for t in targets)
    assert state.answers[:, :3].tolist() == numbers and state.answers[:, 3].tolist() == targets
    # a solver by hand (Python's eval over every order and operator) finds every target
    import itertools

    def solvable(ns, target):
        for a, b, c in itertools.permutations(ns):
            for o1, o2 in itertools.product("+-*", repeat=2):
                if eval(f"({a}{o1}{b}){o2}{c}") == target:
                    return f"({a}{o1}{b}){o2}{c}"
        return None

    answers = [solvable(ns, t) for ns, t in zip(numbers, targets, strict=True)]
    assert all(answers)
    check = eqx.filter_jit(task.check)  # one program for both batches
    right = check(tokens(answers, 16), state.answers)
    assert float(jnp.min(right)) == 1.0
    ns = numbers[0]
    cases = {
        f"{ns[0]}+{ns[1]}+{ns[2]}": 1.0 if sum(ns) == targets[0] else 0.1,  # well formed
        f"{ns[0]}+{ns[1]}": 0.0,  # a number missing
        f"{ns[0]}+{ns[1]}+{ns[2]}+{ns[2]}": 0.0,  # a number twice
        f"({ns[0]}+{ns[1]}": 0.0,  # unbalanced
        "hello": 0.0,
    }
    got = check(tokens(list(cases), 16), jnp.tile(state.answers[:1], (16, 1)))
    np.testing.assert_allclose(got[: len(cases)], list(cases.values()))


def test_bad_settings_fail_in_one_line():
    with pytest.raises(ValueError, match=r"n_numbers must be an integer in \[2, 6\]"):
        Countdown(n_numbers=7)
    with pytest.raises(ValueError, match="reward must be one of"):
        Countdown(reward="format")
