"""Policy networks (one individual, one environment; evolax batches them)."""

from evolax.policies.base import EmptyState, Policy
from evolax.policies.conv import ConvNet
from evolax.policies.mlp import MLP
from evolax.policies.seq2seq import Seq2Seq

__all__ = ["MLP", "ConvNet", "EmptyState", "Policy", "Seq2Seq"]
