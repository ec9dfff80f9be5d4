"""Integer arithmetic as text (``"37+58="`` -> ``"95"``), rewarded by checking the number a
language model writes: the verifiable-reward task of ES fine-tuning (Qiu et al., 2025)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Int

from evolax.tasks.text.base import TextTask, reward_of
from evolax.tasks.text.common import MAX_DIGITS as MAX_DIGITS  # its old home
from evolax.tasks.text.common import (
    PAD,
    check_n_digits,
    held_out_set,
    leading_number,
    number_tokens,
    outside,
    pack,
    pad_to,
)
from evolax.types import PRNGKey
from evolax.validation import check_positive_int

OPERATIONS = {"+": ord("+"), "*": ord("*")}
REWARDS = ("exact", "digits")


class Arithmetic(TextTask):
    """``a + b`` or ``a * b`` of two numbers below ``10**n_digits``, written without leading
    zeros (``"37+58="``); the model must write the result first in its completion (then
    anything that is not a digit: its end-of-sequence token, say).

    A fixed set of ``test_size`` problems (drawn once from ``test_seed``) is held out: training
    batches never contain them, and the test task (``test=True``) poses exactly them. A harder
    held-out split is the same task with more digits.

    Args:
        n_digits: digits of each operand, 1 to 4.
        operation: ``"+"`` or ``"*"``.
        batch_size: problems per episode (the test task poses all ``test_size``).
        completion_len: tokens the model writes; default the answer's longest plus one.
        reward: ``"exact"`` (1 for the right number) or ``"digits"`` (the fraction of the
            answer's digits right in place).
        test: pose the held-out problems.
        test_size: held-out problems; default ``min(1000, 10**(2n) // 10)``.
        test_seed: the held-out draw's seed (a training and a test task must share it).
    """

    held_out: Int[Array, " test_size"]
    n_digits: int
    operation: str
    reward: str
    test: bool

    def __init__(
        self,
        n_digits: int = 2,
        operation: str = "+",
        batch_size: int = 16,
        completion_len: int | None = None,
        reward: str = "exact",
        test: bool = False,
        test_size: int | None = None,
        test_seed: int = 0,
    ):
        check_n_digits(n_digits)
        check_positive_int("batch_size", batch_size)
        if operation not in OPERATIONS:
            raise ValueError(f"operation must be one of {list(OPERATIONS)}, got {operation!r}")
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {list(REWARDS)}, got {reward!r}")
        n_problems = 10 ** (2 * n_digits)
        test_size = min(1000, n_problems // 10) if test_size is None else test_size
        check_positive_int("test_size", test_size)
        answer_len = self.answer_width(n_digits, operation)
        completion_len = answer_len + 1 if completion_len is None else completion_len
        if not isinstance(completion_len, int) or completion_len < answer_len:
            raise ValueError(
                f"completion_len must be an integer >= {answer_len} (the longest answer), got "
                f"{completion_len!r}"
            )
        self.held_out = held_out_set(n_problems, test_size, test_seed)
        self.n_digits, self.operation, self.reward, self.test = n_digits, operation, reward, test
        batch = test_size if test else batch_size
        self.max_steps = 1
        self.obs_shape = (batch, 2 * n_digits + 2)
        self.action_shape = (batch, completion_len)

    @staticmethod
    def answer_width(n_digits: int, operation: str) -> int:
        return n_digits + 1 if operation == "+" else 2 * n_digits

    def pose(self, index: Int[Array, " batch"]):
        """The prompts and answers of problems ``index`` (``a * 10**n + b``)."""
        n = self.n_digits
        width = self.answer_width(n, self.operation)

        def one(i):
            a, b = i // 10**n, i % 10**n
            result = a + b if self.operation == "+" else a * b
            sign = jnp.array([OPERATIONS[self.operation]], jnp.int32)
            prompt = pack(
                [number_tokens(a, n)[0], sign, number_tokens(b, n)[0], jnp.array([ord("=")])]
            )
            return prompt, number_tokens(result, width)[0]

        return jax.vmap(one)(index)

    def problems(self, key: PRNGKey):
        if self.test:
            return self.pose(self.held_out)
        batch = self.obs_shape[0]
        return self.pose(outside(key, self.held_out, 10 ** (2 * self.n_digits), batch))

    def check(self, completions, answers):
        answers = pad_to(answers, completions.shape[1])
        exact, right = jax.vmap(leading_number)(completions, answers)
        return reward_of(exact, right, jnp.sum(answers != PAD, axis=1), self.reward)
