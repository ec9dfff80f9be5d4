"""Discrete actions drawn from a policy's scores (a categorical policy) rather than taken by
``argmax``."""

from __future__ import annotations

import jax
from jaxtyping import Array, Float

from evolax.policies.base import Policy
from evolax.types import Params, PRNGKey
from evolax.validation import check_positive


class Sampled(Policy):
    """``policy``'s scores as the logits of a categorical distribution: each step adds Gumbel
    noise, ``scores / temperature + G`` with ``G ~ Gumbel(0, 1)``, so the ``argmax`` a
    discrete task takes (``Discrete(n)``, each block of a ``MultiDiscrete``, the allowed
    actions where there is a mask) draws action ``i`` with probability ``softmax(scores /
    temperature)_i``. The genome is ``policy``'s.

    A deterministic policy that always takes the ``argmax`` tends to repeat one action in a
    grid world or in Craftax, and a random draw of its weights rarely reaches a sparse reward;
    drawn actions explore from the first generation (a policy at zero scores acts uniformly at
    random), and the return an ES sees is an expectation that changes smoothly with the
    weights. For discrete actions only: a continuous action (``Box``) would be noised, not
    drawn.

    Args:
        policy: the policy whose outputs are the scores.
        temperature: divides the scores, positive (lower: closer to the ``argmax``).
    """

    policy: Policy
    temperature: float = 1.0

    def __check_init__(self):
        check_positive("temperature", self.temperature)

    def init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> Params:
        return self.policy.init(key, obs_shape, action_shape)

    def reset(self, key: PRNGKey):
        return self.policy.reset(key)

    def prepare(self, params: Params):
        return self.policy.prepare(params)

    def apply(
        self, params: Params, obs: Float[Array, "..."], state, key: PRNGKey
    ) -> tuple[Float[Array, "..."], object]:
        policy_key, noise_key = jax.random.split(key)
        scores, state = self.policy.apply(params, obs, state, policy_key)
        noise = jax.random.gumbel(noise_key, scores.shape, scores.dtype)
        return scores / self.temperature + noise, state
