"""Type aliases shared across evolax (jaxtyping shapes)."""

from typing import Any

from jaxtyping import Array, Bool, Float, Key, PyTree

PRNGKey = Key[Array, ""] | Array
"""A JAX PRNG key (new-style typed key or legacy ``uint32[2]``)."""

Params = PyTree
"""One genome: any pytree of arrays (an equinox module, a flax params dict, ...)."""

Population = PyTree
"""A population: the genome pytree with a leading ``pop_size`` axis on every leaf."""

Fitness = Float[Array, " pop"]
"""Fitness of each population member, maximised."""

Reward = Float[Array, ""]
Done = Bool[Array, ""]
Metrics = dict[str, Any]

__all__ = ["PRNGKey", "Params", "Population", "Fitness", "Reward", "Done", "Metrics"]
