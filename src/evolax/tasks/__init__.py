"""Tasks (one environment each; evolax batches them)."""

from evolax.tasks.base import Task
from evolax.tasks.cartpole import CartPoleState, CartPoleSwingUp
from evolax.tasks.mnist import MNIST, MnistState

__all__ = ["MNIST", "CartPoleState", "CartPoleSwingUp", "MnistState", "Task"]
