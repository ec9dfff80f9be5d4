"""Tasks (one environment each; evolax batches them)."""

from evolax.tasks.base import Task
from evolax.tasks.cartpole import CartPoleState, CartPoleSwingUp

__all__ = ["CartPoleState", "CartPoleSwingUp", "Task"]
