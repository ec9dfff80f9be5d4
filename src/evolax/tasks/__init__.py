"""Tasks (one environment each; evolax batches them)."""

from evolax.tasks.base import Task
from evolax.tasks.cartpole import CartPoleState, CartPoleSwingUp
from evolax.tasks.evojax import EvoJAXTask
from evolax.tasks.gymnax import GymnaxTask, GymnaxTaskState
from evolax.tasks.image_approximation import (
    ImageApproximation,
    ImageApproximationState,
    load_target,
)
from evolax.tasks.mnist import MNIST, MnistState
from evolax.tasks.seq2seq import Seq2SeqAddition, Seq2SeqState

__all__ = [
    "MNIST",
    "CartPoleState",
    "CartPoleSwingUp",
    "EvoJAXTask",
    "GymnaxTask",
    "GymnaxTaskState",
    "ImageApproximation",
    "ImageApproximationState",
    "MnistState",
    "Seq2SeqAddition",
    "Seq2SeqState",
    "Task",
    "load_target",
]
