"""Countdown: reach a target from given numbers with ``+ - * /`` and parentheses, each number
used exactly once (the reasoning task of TinyZero and of ES fine-tuning, Qiu et al., 2025). The
completion is parsed and evaluated in JAX (:mod:`evolax.tasks.text.expression`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Int

from evolax.tasks.text.base import TextTask
from evolax.tasks.text.common import held_out_set, number_tokens, outside, pack
from evolax.tasks.text.expression import evaluate
from evolax.types import PRNGKey
from evolax.validation import check_positive_int

INDICES = 2**31 - 1  # problems are indexed; each index seeds one problem
REWARDS = ("exact", "shaped")
FORMAT_SCORE = 0.1  # TinyZero's reward for a well-formed answer that misses the target
TARGET_MAX = 999


def draw_problem(key: PRNGKey, n_numbers: int, max_number: int):
    """Numbers uniform in ``[1, max_number]`` and a target built from them in a random order
    with random ``+ - *`` (an operation that would leave ``[1, 999]`` becomes ``+``): every
    problem has a solution."""
    numbers_key, order_key, ops_key = jax.random.split(key, 3)
    numbers = jax.random.randint(numbers_key, (n_numbers,), 1, max_number + 1)
    ordered = jax.random.permutation(order_key, numbers)
    ops = jax.random.randint(ops_key, (n_numbers - 1,), 0, 3)

    def combine(value, step):
        x, op = step
        candidate = jnp.select([op == 0, op == 1], [value + x, value - x], value * x)
        fine = (candidate >= 1) & (candidate <= TARGET_MAX)
        return jnp.where(fine, candidate, value + x), None

    target, _ = jax.lax.scan(combine, ordered[0], (ordered[1:], ops))
    return numbers.astype(jnp.int32), target.astype(jnp.int32)


class Countdown(TextTask):
    """Given ``n_numbers`` numbers and a target, write an expression that uses each number
    exactly once and equals the target: the prompt reads ``"25,5,4,1->100:"``, a right
    completion ``"(25-5)*(4+1)"`` (then anything that is not part of an expression).

    Problems are indexed: index ``i`` seeds one problem (numbers in ``[1, max_number]`` and a
    reachable target, :func:`draw_problem`). ``test_size`` indices, drawn once from
    ``test_seed``, are held out: training batches never draw them, and the test task poses
    exactly them (two indices pose the same problem with probability about 1e-7).

    Args:
        n_numbers: numbers per problem, 2 to 6.
        max_number: the largest number, 1 to 999.
        batch_size: problems per episode (the test task poses all ``test_size``).
        completion_len: tokens the model writes.
        reward: ``"exact"``: 1 for a right expression, else 0; ``"shaped"``: also 0.1 for a
            well-formed expression of exactly the given numbers that misses the target.
        test: pose the held-out problems.
        test_size: held-out problems.
        test_seed: the held-out draw's seed (a training and a test task must share it).
    """

    held_out: Int[Array, " test_size"]
    n_numbers: int
    max_number: int
    reward: str
    test: bool

    def __init__(
        self,
        n_numbers: int = 4,
        max_number: int = 99,
        batch_size: int = 16,
        completion_len: int = 24,
        reward: str = "exact",
        test: bool = False,
        test_size: int = 200,
        test_seed: int = 0,
    ):
        check_positive_int("batch_size", batch_size)
        check_positive_int("completion_len", completion_len)
        check_positive_int("test_size", test_size)
        if not isinstance(n_numbers, int) or not 2 <= n_numbers <= 6:
            raise ValueError(f"n_numbers must be an integer in [2, 6], got {n_numbers!r}")
        if not isinstance(max_number, int) or not 1 <= max_number <= TARGET_MAX:
            raise ValueError(f"max_number must be an integer in [1, 999], got {max_number!r}")
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {list(REWARDS)}, got {reward!r}")
        self.held_out = held_out_set(INDICES, test_size, test_seed)
        self.n_numbers, self.max_number, self.reward, self.test = (
            n_numbers,
            max_number,
            reward,
            test,
        )
        digits = len(str(max_number))
        self.max_steps = 1
        self.obs_shape = ((test_size if test else batch_size), n_numbers * (digits + 1) + 5)
        self.action_shape = (self.obs_shape[0], completion_len)

    def pose(self, index: Int[Array, " batch"]):
        """The prompts and answers (the numbers, then the target) of problems ``index``."""
        digits = len(str(self.max_number))

        def one(i):
            numbers, target = draw_problem(
                jax.random.fold_in(jax.random.key(0), i), self.n_numbers, self.max_number
            )
            pieces = []
            for j in range(self.n_numbers):
                pieces += [number_tokens(numbers[j], digits)[0], jnp.array([ord(",")])]
            pieces[-1] = jnp.array([ord("-"), ord(">")])
            prompt = pack([*pieces, number_tokens(target, 3)[0], jnp.array([ord(":")])])
            return prompt, jnp.concatenate([numbers, target[None]])

        return jax.vmap(one)(index)

    def problems(self, key: PRNGKey):
        if self.test:
            return self.pose(self.held_out)
        return self.pose(outside(key, self.held_out, INDICES, self.obs_shape[0]))

    def check(self, completions, answers):
        def one(tokens, answer):
            value, used, n_used, ok = evaluate(tokens, slots=self.n_numbers + 2)
            given = answer[:-1]
            padded = jnp.concatenate([given, jnp.full(2, -1, given.dtype)])
            same_numbers = (n_used == self.n_numbers) & jnp.all(jnp.sort(used) == jnp.sort(padded))
            well_formed = ok & same_numbers
            right = well_formed & (jnp.abs(value - answer[-1]) < 1e-3)
            if self.reward == "exact":
                return right.astype(jnp.float32)
            return jnp.where(right, 1.0, jnp.where(well_formed, FORMAT_SCORE, 0.0))

        return jax.vmap(one)(completions, answers)
