"""Tasks over text with verifiable rewards, for language-model policies: prompts in, a
completion out, a reward computed in JAX from the completion."""

from evolax.tasks.text.arithmetic import Arithmetic
from evolax.tasks.text.base import TextState, TextTask
from evolax.tasks.text.countdown import Countdown
from evolax.tasks.text.prompted import PromptTask

__all__ = ["Arithmetic", "Countdown", "PromptTask", "TextState", "TextTask"]
