"""A text task made from two functions a user writes: one that draws prompts (with their
reference answers) and one that rewards a completion, both in JAX."""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.tasks.text.base import TextTask
from evolax.types import PRNGKey
from evolax.validation import check_positive_int

Prompts = Callable[[PRNGKey, int], tuple[Int[Array, "batch prompt"], Array]]
Reward = Callable[[Int[Array, " completion"], Array], Float[Array, ""]]


class PromptTask(TextTask):
    """Prompts from ``prompts(key, batch_size)`` (token ids ``i32[batch, prompt_len]``, left
    padded, and each prompt's reference answer, any array ``[batch, ...]``), completions
    rewarded by ``reward(completion, answer)`` (one completion ``i32[completion_len]`` and its
    answer; a float, mean over the batch). Both are traced: write them in JAX. Tokenize with
    any tokenizer beforehand (:class:`~evolax.lm.tokenizer.ByteTokenizer` ships with evolax).

    Args:
        prompts: draws a training batch.
        reward: checks one completion.
        completion_len: tokens the model writes.
        batch_size: prompts per episode.
        test_prompts: the held-out prompts and answers the test task (``test=True``) poses,
            ``(i32[n, prompt_len], [n, ...])``; required with ``test``.
        test: pose ``test_prompts`` instead of training draws.
    """

    prompts: Prompts = eqx.field(static=True)
    reward: Reward = eqx.field(static=True)
    test_prompts: tuple[Array, Array] | None
    test: bool = eqx.field(static=True)

    def __init__(
        self,
        prompts: Prompts,
        reward: Reward,
        completion_len: int,
        batch_size: int = 16,
        test_prompts: tuple[Array, Array] | None = None,
        test: bool = False,
    ):
        check_positive_int("completion_len", completion_len)
        check_positive_int("batch_size", batch_size)
        if not callable(prompts) or not callable(reward):
            raise ValueError(
                "prompts and reward must be functions (key, batch) and (tokens, answer)"
            )
        if test and test_prompts is None:
            raise ValueError("test=True needs test_prompts (the held-out prompts and answers)")
        shapes = jax.eval_shape(lambda: prompts(jax.random.key(0), batch_size))
        if not isinstance(shapes, tuple) or len(shapes) != 2 or len(shapes[0].shape) != 2:
            raise ValueError(
                "prompts(key, batch_size) must return (i32[batch, prompt_len], answers), got "
                f"{shapes}"
            )
        prompt_len = shapes[0].shape[1]
        if test_prompts is not None:
            test_prompts = (jnp.asarray(test_prompts[0], jnp.int32), jnp.asarray(test_prompts[1]))
            if test_prompts[0].ndim != 2 or test_prompts[0].shape[1] != prompt_len:
                raise ValueError(
                    f"test_prompts' prompts must be i32[n, {prompt_len}], got shape "
                    f"{test_prompts[0].shape}"
                )
        self.prompts, self.reward, self.test_prompts, self.test = (
            prompts,
            reward,
            test_prompts,
            test,
        )
        batch = test_prompts[0].shape[0] if test and test_prompts is not None else batch_size
        self.max_steps = 1
        self.obs_shape = (batch, prompt_len)
        self.action_shape = (batch, completion_len)

    def problems(self, key: PRNGKey):
        if self.test and self.test_prompts is not None:
            return self.test_prompts
        prompts, answers = self.prompts(key, self.obs_shape[0])
        return prompts.astype(jnp.int32), answers

    def check(self, completions, answers):
        return jax.vmap(self.reward)(completions, answers).astype(jnp.float32)
