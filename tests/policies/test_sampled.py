"""Sampled: the task's argmax of the noised scores draws from softmax(scores / temperature)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.config import build_trainer, resolve
from evolax.policies import MLP, Policy, Sampled
from evolax.tasks.spaces import ActionMap

SCORES = jnp.array([1.0, -0.5, 2.0, 0.0])
N = 40_000  # draws: a frequency's standard error is at most 0.0025


class Fixed(Policy):
    """Scores that are the parameters, whatever the observation."""

    def init(self, key, obs_shape, action_shape):
        return SCORES

    def apply(self, params, obs, state, key):
        return params, state


def frequencies(policy, mask=None):
    actions = ActionMap(True, (4,), (), "int32")

    def draw(key):
        scores, _ = policy.apply(SCORES, jnp.zeros(3), None, key)
        return actions(scores, mask)

    drawn = jax.jit(jax.vmap(draw))(jax.random.split(jax.random.key(0), N))
    return np.bincount(np.asarray(drawn), minlength=4) / N


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_the_argmax_draws_from_the_softmax(temperature):
    expected = np.asarray(jax.nn.softmax(SCORES / temperature))
    got = frequencies(Sampled(Fixed(), temperature))
    np.testing.assert_allclose(got, expected, atol=0.01)


def test_a_mask_draws_among_the_allowed_actions_only():
    mask = jnp.array([True, True, False, True])
    logits = np.where(np.asarray(mask), np.asarray(SCORES), -np.inf)
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(frequencies(Sampled(Fixed()), mask), expected, atol=0.01)


def test_genome_and_state_are_the_inner_policys_and_bad_temperature_raises():
    inner = MLP(hidden_sizes=(3,))
    key = jax.random.key(1)
    params = Sampled(inner).init(key, (2,), (4,))
    assert jax.tree.structure(params) == jax.tree.structure(inner.init(key, (2,), (4,)))
    with pytest.raises(ValueError, match="temperature must be a finite positive number"):
        Sampled(inner, temperature=0.0)


def test_a_configuration_names_it_around_another_policy():
    config = resolve(
        "cartpole_easy",
        ["policy={name: sampled, policy: {name: mlp, hidden_sizes: [4]}, temperature: 2.0}"],
    )
    policy = build_trainer(config).policy
    assert isinstance(policy, Sampled) and policy.temperature == 2.0
    assert policy.policy.hidden_sizes == (4,)
