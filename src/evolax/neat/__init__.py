"""NEAT genomes as fixed-capacity tensors: the genome (:mod:`evolax.neat.genome`), its network
(:mod:`~evolax.neat.network`), mutation, crossover, speciation and reproduction bookkeeping.
:class:`evolax.algorithms.NEAT` and :class:`evolax.policies.NEATNetwork` build on them."""

from evolax.neat.genome import NONE, Genome, minimal_genome
from evolax.neat.network import ACTIVATIONS, AGGREGATIONS, Network, decode

__all__ = ["ACTIVATIONS", "AGGREGATIONS", "NONE", "Genome", "Network", "decode", "minimal_genome"]
