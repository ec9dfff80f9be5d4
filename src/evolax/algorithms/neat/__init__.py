"""NEAT, NeuroEvolution of Augmenting Topologies (:mod:`evolax.algorithms.neat.neat`); its
genomes, mutation, crossover and speciation are in :mod:`evolax.neat`."""

from evolax.algorithms.neat.neat import NEAT, NEATState

__all__ = ["NEAT", "NEATState"]
