"""evolax: hardware-accelerated neuroevolution in JAX."""

from evolax import algorithms, data, layout, placement, policies, seeded, sharding, tasks
from evolax.algorithms import PGPE, Algorithm
from evolax.normalize import ObsStats
from evolax.optim import clipup
from evolax.placement import HostTrainer, place
from evolax.policies import MLP, ConvNet, Direct, Policy, Seq2Seq, Transformer
from evolax.rollout import EvalInfo, evaluate
from evolax.runner import TrainResult, train
from evolax.sharding import use_cpu_cores
from evolax.tasks import MNIST, CartPoleSwingUp, ImageApproximation, Seq2SeqAddition, Task
from evolax.trainer import Trainer, TrainState
from evolax.xla_cpu import prefer_wide_vectors

prefer_wide_vectors()  # takes effect when evolax is imported before JAX's first computation

__version__ = "0.1.0"

__all__ = [
    "MLP",
    "MNIST",
    "PGPE",
    "Algorithm",
    "CartPoleSwingUp",
    "ConvNet",
    "Direct",
    "EvalInfo",
    "HostTrainer",
    "ImageApproximation",
    "ObsStats",
    "Policy",
    "Seq2Seq",
    "Seq2SeqAddition",
    "Task",
    "TrainResult",
    "TrainState",
    "Trainer",
    "Transformer",
    "algorithms",
    "clipup",
    "data",
    "evaluate",
    "layout",
    "place",
    "placement",
    "policies",
    "seeded",
    "sharding",
    "tasks",
    "train",
    "use_cpu_cores",
]
