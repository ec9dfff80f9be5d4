"""One-step tasks over text: the observation is a batch of prompts, the action the model's
completions, the reward a verifiable check of each completion, averaged over the batch."""

from __future__ import annotations

import abc

import chex
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.compiled import compiled
from evolax.drawing import text_image
from evolax.lm.tokenizer import ByteTokenizer
from evolax.tasks.base import ConstructedTask
from evolax.types import PRNGKey


@chex.dataclass(frozen=True)
class TextState:
    """A batch of problems.

    Attributes:
        obs: the prompts, ``i32[batch, prompt_len]``, left-padded with the tokenizer's pad id.
        answers: each problem's reference answer as tokens, ``i32[batch, answer_len]``
            (padded), for the reward and for display.
        completions: the model's completions (``-1`` before the step), ``i32[batch,
            completion_len]``.
    """

    obs: Int[Array, "batch prompt"]
    answers: Int[Array, "batch answer"]
    completions: Int[Array, "batch completion"]


class TextTask(ConstructedTask):
    """A one-step task whose observation is ``obs_shape = (batch, prompt_len)`` prompt tokens
    and whose action is ``action_shape = (batch, completion_len)`` completion tokens (a
    :class:`~evolax.policies.LanguageModel`'s). ``step`` rewards each completion with
    :meth:`check` and returns the batch's mean; it is always done. ``reset`` and ``step``
    compile themselves when called eagerly (:func:`~evolax.compiled.compiled`)."""

    @compiled
    def reset(self, key: PRNGKey) -> TextState:
        prompts, answers = self.problems(key)
        batch, completion = self.action_shape
        return TextState(
            obs=prompts, answers=answers, completions=jnp.full((batch, completion), -1, jnp.int32)
        )

    @compiled
    def step(self, state, action, key: PRNGKey):
        del key
        self.check_action(action)
        action = action.astype(jnp.int32)
        reward = jnp.mean(self.check(action, state.answers).astype(jnp.float32))
        return state.replace(completions=action), reward, jnp.ones([], bool)

    @abc.abstractmethod
    def problems(self, key: PRNGKey) -> tuple[Int[Array, "batch prompt"], Int[Array, "batch n"]]:
        """A batch of prompts and their answers (training draws with ``key``, or the test
        set)."""

    @abc.abstractmethod
    def check(
        self, completions: Int[Array, "batch completion"], answers: Int[Array, "batch n"]
    ) -> Float[Array, " batch"]:
        """Each completion's reward, in ``[0, 1]`` (pure JAX)."""

    def render(self, state: TextState, rows: int = 12) -> np.ndarray:
        """A table of the first ``rows`` problems: prompt, completion, reference answer."""
        tokenizer = ByteTokenizer()
        lines = []
        for prompt, completion, answer in list(
            zip(
                *(np.asarray(x) for x in (state.obs, state.completions, state.answers)), strict=True
            )
        )[:rows]:
            shown = tokenizer.decode(completion) if completion.min() >= 0 else "?"
            lines.append(
                f"{tokenizer.decode(prompt)!s:>16} {shown!r:<14} {tokenizer.decode(answer)!r}"
            )
        return text_image(lines)


def reward_of(exact, partial, n: Int[Array, " batch"], kind: str) -> Float[Array, " batch"]:
    """``1.0`` for an exact answer, or with ``kind == "digits"`` the fraction of the answer's
    ``n`` tokens right."""
    if kind == "exact":
        return exact.astype(jnp.float32)
    return partial / jnp.maximum(n, 1)
