"""Tasks (one environment each; evolax batches them)."""

from evolax.tasks.base import Task
from evolax.tasks.cartpole import CartPoleState, CartPoleSwingUp
from evolax.tasks.gymnax import GymnaxTask, GymnaxTaskState
from evolax.tasks.mnist import MNIST, MnistState
from evolax.tasks.seq2seq import Seq2SeqAddition, Seq2SeqState

__all__ = [
    "MNIST",
    "CartPoleState",
    "CartPoleSwingUp",
    "GymnaxTask",
    "GymnaxTaskState",
    "MnistState",
    "Seq2SeqAddition",
    "Seq2SeqState",
    "Task",
]
