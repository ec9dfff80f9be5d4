"""evolax: hardware-accelerated neuroevolution in JAX."""

from evolax import algorithms, policies, sharding, tasks
from evolax.algorithms import PGPE, Algorithm
from evolax.normalize import ObsStats
from evolax.optim import clipup
from evolax.policies import MLP, Policy
from evolax.rollout import EvalInfo, evaluate
from evolax.runner import TrainResult, train
from evolax.tasks import CartPoleSwingUp, Task
from evolax.trainer import Trainer, TrainState

__version__ = "0.1.0"

__all__ = [
    "MLP",
    "PGPE",
    "Algorithm",
    "CartPoleSwingUp",
    "EvalInfo",
    "ObsStats",
    "Policy",
    "Task",
    "TrainResult",
    "TrainState",
    "Trainer",
    "algorithms",
    "clipup",
    "evaluate",
    "policies",
    "sharding",
    "tasks",
    "train",
]
