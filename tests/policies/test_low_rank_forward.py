"""Every policy runs a low-rank evolution strategy's members inside its forward pass
(``x @ W + scale (x @ a) b^T``): its outputs equal those of the members' formed matrices."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax import MLP, ConvNet, Seq2Seq, Transformer
from evolax.algorithms import LowRankES
from evolax.population import materialize, pop_axes
from evolax.seeded import densify

CASES = {
    "mlp": (MLP(hidden_sizes=(8, 8)), (5,), (3,)),
    "convnet": (ConvNet(channels=(4, 6), kernel_size=3), (2, 8, 8, 1), (2, 4)),
    "seq2seq_lstm": (Seq2Seq(hidden_size=8, output_length=3), (2, 5, 7), (2, 3, 4)),
    "transformer": (
        Transformer(d_model=16, n_heads=2, n_layers=2, d_ff=24, output_length=3),
        (2, 5, 7),
        (2, 3, 4),
    ),
}
SLOW = set(CASES)  # 2-7 s each; test_registry trains LowRankES's MLP in the default run


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in sorted(CASES)],
)
def test_low_rank_members_in_the_forward_pass_equal_their_formed_matrices(key, name):
    policy, obs_shape, action_shape = CASES[name]
    x0 = policy.init(key, obs_shape, action_shape)
    algorithm = LowRankES(pop_size=4, rank=2, init_std=0.5)
    population, _ = algorithm.ask(jax.random.key(1), algorithm.init(key, x0))
    obs = jax.random.uniform(jax.random.key(2), obs_shape)
    state = policy.reset(key)

    @jax.jit
    def outputs(population):
        views = materialize(population)
        act = lambda p: policy.apply(p, obs, state, key)[0]  # noqa: E731
        in_place = jax.vmap(act, in_axes=(pop_axes(views),))(views)
        return in_place, jax.vmap(act)(densify(population))

    in_place, formed = outputs(population)
    assert in_place.shape == (4, *action_shape)
    np.testing.assert_allclose(in_place, formed, rtol=2e-4, atol=2e-5)
    assert float(jnp.std(formed[0] - formed[1])) > 1e-3  # the members differ


def test_transformer_is_causal(key):
    """A decoded token depends on the tokens before it only: perturbing the last decoding
    slot's embedding (never read) or an output position leaves earlier logits unchanged."""
    policy = Transformer(d_model=16, n_heads=2, n_layers=2, d_ff=24, output_length=3)
    params = policy.init(key, (1, 5, 7), (1, 3, 4))
    obs = jax.nn.one_hot(jnp.array([[1, 2, 3, 4, 5]]), 7)
    logits, _ = policy.apply(params, obs, policy.reset(key), key)
    params["position"] = params["position"].at[-1].add(100.0)  # the last slot's position
    again, _ = policy.apply(params, obs, policy.reset(key), key)
    np.testing.assert_allclose(logits, again, rtol=1e-6)
    with pytest.raises(ValueError, match="n_heads must divide d_model"):
        Transformer(d_model=10, n_heads=3)
