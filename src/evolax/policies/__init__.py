"""Policy networks (one individual, one environment; evolax batches them)."""

from evolax.policies.base import EmptyState, Policy
from evolax.policies.conv import ConvNet
from evolax.policies.mlp import MLP

__all__ = ["MLP", "ConvNet", "EmptyState", "Policy"]
