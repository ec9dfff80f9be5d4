"""Tasks over text with verifiable rewards, for language-model policies: prompts in, a
completion out, a reward computed in JAX from the completion."""

from evolax.tasks.text.arithmetic import Arithmetic
from evolax.tasks.text.base import TextState, TextTask

__all__ = ["Arithmetic", "TextState", "TextTask"]
