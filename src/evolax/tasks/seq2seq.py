"""Integer addition as a one-step sequence-to-sequence task (the EvoJAX paper's seq2seq demo)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.drawing import text_image
from evolax.tasks.base import ClassificationTask, mean_log_likelihood
from evolax.tasks.text.common import MAX_DIGITS as MAX_DIGITS  # its old home
from evolax.tasks.text.common import check_n_digits, held_out_set, outside
from evolax.types import PRNGKey, Reward
from evolax.validation import check_positive_int

VOCAB = "0123456789+="
"""Query tokens; answers use the first ten (digits)."""
N_DIGIT_TOKENS = 10
PLUS, EQUALS = VOCAB.index("+"), VOCAB.index("=")
REWARDS = ("cross_entropy", "token_accuracy", "sequence_accuracy")


@chex.dataclass(frozen=True)
class Seq2SeqState:
    """A batch of addition problems.

    Attributes:
        obs: ``f32[batch, 2 n + 2, 12]`` one-hot queries such as ``012+345=``.
        answers: ``i32[batch, n + 1]`` digits of the sums, zero-padded (``0357``).
        predictions: ``i32[batch, n + 1]`` the digits the last action chose (``-1`` before
            any step).
    """

    obs: Float[Array, "batch in_len 12"]
    answers: Int[Array, "batch out_len"]
    predictions: Int[Array, "batch out_len"]


def _digits(x: Int[Array, "..."], n: int) -> Int[Array, "... n"]:
    """The ``n`` lowest decimal digits of ``x``, most significant first."""
    powers = 10 ** jnp.arange(n - 1, -1, -1, dtype=jnp.int32)
    return (x[..., None] // jnp.expand_dims(powers, range(x.ndim))) % 10


class Seq2SeqAddition(ClassificationTask):
    """Add two ``n``-digit numbers: read ``012+345=``, answer ``0357`` (one step).

    Operands are uniform in ``[0, 10**n)`` and written with leading zeros; the answer has
    ``n + 1`` digits, so every sum is represented exactly. The observation is the one-hot
    query ``f32[batch, 2n + 2, 12]`` over :data:`VOCAB`; the action is the answer's digit
    logits ``f32[batch, n + 1, 10]``.

    A fixed set of ``test_size`` problems (drawn once from ``test_seed``) is held out: training
    batches are drawn uniformly from all other problems (with replacement), and the test task
    (``test=True``) scores exactly the held-out set, in one batch.

    Rewards (``reward``; default ``"cross_entropy"`` for training, ``"sequence_accuracy"`` for
    the test):

    - ``"cross_entropy"``: the mean log-likelihood of the answer digits (at most 0);
    - ``"token_accuracy"``: the fraction of answer digits right;
    - ``"sequence_accuracy"``: the fraction of problems with every digit right.

    Args:
        batch_size: training problems per batch (ignored by the test task).
        n_digits: digits per operand, 1 to 4.
        test: score the held-out problems instead of training batches.
        reward: one of ``"cross_entropy"``, ``"token_accuracy"``, ``"sequence_accuracy"``.
        test_size: held-out problems; default ``min(10_000, 10**(2n) // 10)``.
        test_seed: seed of the held-out draw (train and test tasks must share it).
    """

    held_out: Int[Array, " test_size"]
    batch_size: int = eqx.field(static=True)
    n_digits: int = eqx.field(static=True)
    test: bool = eqx.field(static=True)
    reward: str = eqx.field(static=True)

    def __init__(
        self,
        batch_size: int = 128,
        n_digits: int = 3,
        test: bool = False,
        reward: str | None = None,
        test_size: int | None = None,
        test_seed: int = 0,
    ):
        check_positive_int("batch_size", batch_size)
        check_n_digits(n_digits)
        if not isinstance(test, bool):
            raise ValueError(f"test must be a bool, got {test!r}")
        if reward is None:
            reward = "sequence_accuracy" if test else "cross_entropy"
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        n_problems = 10 ** (2 * n_digits)
        if test_size is None:
            test_size = min(10_000, n_problems // 10)
        check_positive_int("test_size", test_size)
        self.held_out = held_out_set(n_problems, test_size, test_seed)
        self.batch_size = test_size if test else batch_size
        self.n_digits = n_digits
        self.test = test
        self.reward = reward
        self.max_steps = 1
        self.obs_shape = (self.batch_size, 2 * n_digits + 2, len(VOCAB))
        self.action_shape = (self.batch_size, n_digits + 1, N_DIGIT_TOKENS)

    def problems(self, index: Int[Array, " batch"]) -> Seq2SeqState:
        """The state posing problems ``index`` (``a * 10**n + b`` means ``a + b``)."""
        n = self.n_digits
        a, b = index // 10**n, index % 10**n
        plus = jnp.full((*index.shape, 1), PLUS, jnp.int32)
        equals = jnp.full((*index.shape, 1), EQUALS, jnp.int32)
        query = jnp.concatenate([_digits(a, n), plus, _digits(b, n), equals], axis=-1)
        answers = _digits(a + b, n + 1)
        return Seq2SeqState(
            obs=jax.nn.one_hot(query, len(VOCAB), dtype=jnp.float32),
            answers=answers,
            predictions=jnp.full_like(answers, -1),
        )

    def reset(self, key: PRNGKey) -> Seq2SeqState:
        """A training batch drawn uniformly (with ``key``) from the problems not held out,
        or the held-out problems in order."""
        if self.test:
            return self.problems(self.held_out)
        return self.problems(
            outside(key, self.held_out, 10 ** (2 * self.n_digits), self.batch_size)
        )

    def score(
        self,
        state: Seq2SeqState,
        logits: Float[Array, "batch out_len 10"],
        predictions: Int[Array, "batch out_len"],
    ) -> Reward:
        """The answer logits scored with ``reward``."""
        correct = predictions == state.answers
        if self.reward == "cross_entropy":
            return mean_log_likelihood(logits, state.answers)
        if self.reward == "token_accuracy":
            return jnp.mean(correct.astype(jnp.float32))
        return jnp.mean(jnp.all(correct, axis=-1).astype(jnp.float32))

    def render(self, state: Seq2SeqState, rows: int = 12) -> np.ndarray:
        """A table of the first ``rows`` problems: query, predicted answer, true answer."""
        lines = [f"{'query':<{2 * self.n_digits + 2}}  model  truth"]
        for query, answer, predicted in list(zip(*decode(state), strict=True))[:rows]:
            mark = "ok" if predicted == answer else "--"
            lines.append(f"{query}  {predicted:>{self.n_digits + 1}}  {answer}  {mark}")
        return text_image(lines)


def decode(state: Seq2SeqState) -> tuple[list[str], list[str], list[str]]:
    """Host-side strings of one (unbatched-population) state: queries, answers, predictions.

    A prediction not yet made (``-1``) shows as ``?``.
    """
    obs, answers, predictions = (
        np.asarray(x) for x in (state.obs, state.answers, state.predictions)
    )
    if obs.ndim != 3:
        raise ValueError(f"decode reads one state: obs must be (batch, len, 12), got {obs.shape}")
    queries = ["".join(VOCAB[t] for t in row) for row in obs.argmax(axis=-1)]
    truth = ["".join(str(d) for d in row) for row in answers]
    guessed = ["".join("?" if d < 0 else str(d) for d in row) for row in predictions]
    return queries, truth, guessed
