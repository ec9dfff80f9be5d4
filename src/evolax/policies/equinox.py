"""Evolve an equinox network: :class:`EquinoxPolicy` wraps any ``equinox.Module``.

The genome is the module's floating-point arrays, as a pytree of the module's own structure
(``eqx.filter(module, eqx.is_inexact_array)``: the arrays in place, ``None`` elsewhere);
evolax's algorithms flatten it for their arithmetic and hand back the same pytree. The rest
of the module (activations, sizes) is configuration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, PyTree

from evolax.policies.base import EmptyState, Policy
from evolax.types import Params, PRNGKey


class EquinoxPolicy(Policy):
    """An ``equinox.Module`` as a stateless evolax policy; its floating-point arrays are the
    genome.

    ``init`` returns the module's own arrays (build it with the key you want the search to
    start from; ``init``'s key is unused); ``apply`` calls ``module(obs)`` on one observation
    with the genome's arrays in place (the module sees exactly the observation's shape:
    ``eqx.nn.MLP`` takes a vector). The output must have the task's ``action_shape``
    (``eqx.nn.MLP(..., out_size="scalar")`` gives ``()``).

    Args:
        module: the network, e.g. ``eqx.nn.MLP(4, 1, 32, 2, final_activation=jnp.tanh,
            key=key)``; an ``apply_fn`` that is not ``__call__`` can be named by ``method``.
        method: the name of the module's method that maps an observation to an action.

    Raises:
        TypeError: ``module`` is not an ``equinox.Module``.
    """

    params: PyTree
    skeleton: eqx.Module = eqx.field(static=True)
    method: str = eqx.field(static=True)

    def __init__(self, module: Callable[..., Any], method: str = "__call__"):
        if not isinstance(module, eqx.Module):
            raise TypeError(f"module must be an equinox.Module, got {type(module).__name__}")
        if not callable(getattr(module, method, None)):
            raise TypeError(f"method must name a method of {type(module).__name__}, got {method!r}")
        self.params, self.skeleton = eqx.partition(module, eqx.is_inexact_array)
        self.method = method

    def init(self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]):
        del key, obs_shape, action_shape
        return jax.tree.map(jnp.copy, self.params)

    def reset(self, key: PRNGKey) -> EmptyState:
        del key
        return EmptyState()

    def apply(self, params: Params, obs: Array, state: Any, key: PRNGKey):
        del key
        module = eqx.combine(params, self.skeleton)
        return getattr(module, self.method)(obs), state
