"""Learned algorithms: LES and LGA, whose updates are small attention networks with
meta-trained weights (shipped in ``weights/``), on the shared pieces of
:mod:`evolax.algorithms.learned.common`.

``evolax.algorithms.learned`` was the shared module itself before the family packages: its
names are exported here too, so that imports of that module keep working (to patch
``WEIGHTS_DIR``, patch it in :mod:`evolax.algorithms.learned.common`, where it is read)."""

from evolax.algorithms.learned.common import HIGHEST as HIGHEST  # the old module's, too
from evolax.algorithms.learned.common import (
    WEIGHTS_DIR,
    Learned,
    Weights,
    attention,
    attention_shapes,
    dense,
    dense_shapes,
    fitness_features,
    in_dtype,
    initial_weights,
    load_weights,
    resolve_weights,
    weights_hash,
)
from evolax.algorithms.learned.les import LES, LESState
from evolax.algorithms.learned.lga import LGA, LGAState

__all__ = [
    "LES",
    "LESState",
    "LGA",
    "LGAState",
    "WEIGHTS_DIR",
    "Learned",
    "Weights",
    "attention",
    "attention_shapes",
    "dense",
    "dense_shapes",
    "fitness_features",
    "in_dtype",
    "initial_weights",
    "load_weights",
    "resolve_weights",
    "weights_hash",
]
