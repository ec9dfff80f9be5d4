"""A user's own text task, named in a configuration by import path: ``lm_reverse:Reverse``.

The model reads four lowercase letters and ``>`` (``"abcd>"``) and must write them reversed
(``"dcba"``). The prompts and the reward are the user's two JAX functions, handed to
:class:`evolax.tasks.PromptTask`; the held-out prompts are 64 words the training draws may
also produce, fixed once. `evolax train` puts the configuration file's folder on the import
path, so this module is found beside ``lm_reverse.yaml``.
"""

import jax
import jax.numpy as jnp
import numpy as np

from evolax.tasks import PromptTask

N_LETTERS = 4
ARROW = ord(">")


def prompts(key, batch_size):
    """``batch_size`` random words and ``>``, ``i32[batch, 5]``; the answers, the words
    reversed, ``i32[batch, 4]``."""
    words = jax.random.randint(key, (batch_size, N_LETTERS), ord("a"), ord("z") + 1)
    arrow = jnp.full((batch_size, 1), ARROW, jnp.int32)
    return jnp.concatenate([words, arrow], axis=1), words[:, ::-1]


def reward(completion, answer):
    """The fraction of the four letters in place (one completion ``i32[completion_len]``)."""
    return jnp.mean(completion[:N_LETTERS] == answer)


class Reverse(PromptTask):
    """Write four letters reversed: the prompts and reward above, 64 held-out words.

    Args:
        batch_size: words per episode.
        completion_len: tokens the model writes (at least 4).
        test: pose the 64 held-out words instead of training draws.
    """

    def __init__(self, batch_size: int = 16, completion_len: int = N_LETTERS, test: bool = False):
        held_out = prompts(jax.random.key(12345), 64)
        super().__init__(
            prompts,
            reward,
            completion_len=completion_len,
            batch_size=batch_size,
            test_prompts=tuple(np.asarray(a) for a in held_out),
            test=test,
        )
