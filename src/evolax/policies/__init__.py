"""Policy networks (one individual, one environment; evolax batches them)."""

from evolax.policies.base import EmptyState, Policy
from evolax.policies.conv import ConvNet
from evolax.policies.direct import Direct
from evolax.policies.equinox import EquinoxPolicy
from evolax.policies.evojax import EvoJAXObservation, EvoJAXPolicy
from evolax.policies.flax import FlaxPolicy
from evolax.policies.hyperneat import CPPNGenome, HyperNEAT
from evolax.policies.language_model import LanguageModel
from evolax.policies.mlp import MLP
from evolax.policies.neat import NEATNetwork
from evolax.policies.sampled import Sampled
from evolax.policies.seq2seq import Seq2Seq
from evolax.policies.team import Team
from evolax.policies.transformer import Transformer

__all__ = [
    "EquinoxPolicy",
    "MLP",
    "ConvNet",
    "Direct",
    "EmptyState",
    "EvoJAXObservation",
    "EvoJAXPolicy",
    "FlaxPolicy",
    "CPPNGenome",
    "HyperNEAT",
    "LanguageModel",
    "NEATNetwork",
    "Policy",
    "Sampled",
    "Seq2Seq",
    "Team",
    "Transformer",
]

REGISTRY = {
    "mlp": MLP,
    "convnet": ConvNet,
    "direct": Direct,
    "seq2seq": Seq2Seq,
    "transformer": Transformer,
    "language_model": LanguageModel,
    "neat": NEATNetwork,
    "hyperneat": HyperNEAT,
    "sampled": Sampled,
}
"""Policies by the short name a configuration gives (``policy.name``)."""
