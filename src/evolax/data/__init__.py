"""Datasets for supervised tasks, read on the host as numpy arrays."""

from evolax.data.idx import read_idx
from evolax.data.mnist import MnistData, load_mnist

__all__ = ["MnistData", "load_mnist", "read_idx"]
