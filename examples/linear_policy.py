"""A user's own policy, named in a configuration by import path: ``linear_policy:LinearPolicy``.

`evolax train` puts the configuration file's folder on the import path, so this module is
found beside ``gymnax_cma_es.yaml``; elsewhere, make it importable (``PYTHONPATH``).
"""

import math

import jax
import jax.numpy as jnp

from evolax.policies import Policy


class LinearPolicy(Policy):
    """``action = bound * tanh(W obs + b)``: a linear map, squashed into ``[-bound, bound]``.

    Args:
        bound: the largest action magnitude.
        init_scale: standard deviation of the initial weights, times ``1 / sqrt(obs_dim)``.
    """

    bound: float = 1.0
    init_scale: float = 1.0

    def init(self, key, obs_shape, action_shape):
        n_in, n_out = math.prod(obs_shape), math.prod(action_shape)
        w = jax.random.normal(key, (n_in, n_out)) * self.init_scale / math.sqrt(n_in)
        return {"w": w, "b": jnp.zeros(n_out)}

    def apply(self, params, obs, state, key):
        del key
        action = self.bound * jnp.tanh(obs.reshape(-1) @ params["w"] + params["b"])
        return action, state
