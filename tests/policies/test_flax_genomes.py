"""A flax.linen module's params dict as the genome: forward pass, training, checkpoints."""

import sys

import pytest

pytest.importorskip("flax", reason="FlaxPolicy wraps flax.linen modules")

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from evolax import PGPE, CartPoleSwingUp, Trainer
from evolax.algorithms import CMAES
from evolax.checkpoint import CheckpointStore
from evolax.policies.base import EmptyState
from evolax.policies.flax import FlaxPolicy
from helpers import state_leaves


class TanhMLP(nn.Module):
    """Dense layers with tanh activations, tanh output."""

    hidden: tuple[int, ...] = (16,)
    outputs: int = 1

    @nn.compact
    def __call__(self, x):
        for width in self.hidden:
            x = nn.tanh(nn.Dense(width)(x))
        return nn.tanh(nn.Dense(self.outputs)(x))


def numpy_forward(params, obs):
    """The module's forward pass in float64 numpy, read off flax's parameter names."""
    x = np.asarray(obs, np.float64)
    names = sorted(params, key=lambda name: int(name.split("_")[1]))  # Dense_0, Dense_1, ...
    for name in names:
        kernel = np.asarray(params[name]["kernel"], np.float64)
        x = np.tanh(x @ kernel + np.asarray(params[name]["bias"], np.float64))
    return x


def test_genome_is_flax_params_and_apply_matches_numpy():
    policy = FlaxPolicy(TanhMLP(hidden=(16, 8)))
    params = policy.init(jax.random.key(0), (5,), (1,))
    assert jax.tree.map(jnp.shape, params) == {
        "Dense_0": {"kernel": (5, 16), "bias": (16,)},
        "Dense_1": {"kernel": (16, 8), "bias": (8,)},
        "Dense_2": {"kernel": (8, 1), "bias": (1,)},
    }
    # non-zero biases, so the check covers them (flax initialises them to zero)
    params = jax.tree.map(lambda x: x + 0.1 * jnp.cos(jnp.arange(x.size)).reshape(x.shape), params)
    obs = jax.random.normal(jax.random.key(1), (9, 5))
    keys = jax.random.split(jax.random.key(2), 9)
    actions, _ = jax.vmap(policy.apply, in_axes=(None, 0, None, 0))(params, obs, EmptyState(), keys)
    np.testing.assert_allclose(actions, numpy_forward(params, obs), rtol=1e-5, atol=1e-6)


def test_rng_streams_reach_the_module():
    class Noisy(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Dense(4)(x)
            return nn.Dropout(0.5, deterministic=False)(x)

    policy = FlaxPolicy(Noisy(), rng_names="dropout")
    params = policy.init(jax.random.key(0), (3,), (4,))
    params = jax.tree.map(jnp.ones_like, params)  # every unit is 4, or 0 once dropped
    obs = jnp.ones(3)
    a, _ = policy.apply(params, obs, EmptyState(), jax.random.key(1))
    b, _ = policy.apply(params, obs, EmptyState(), jax.random.key(1))
    outs = {
        tuple(np.asarray(policy.apply(params, obs, EmptyState(), jax.random.key(i))[0]))
        for i in range(8)
    }
    np.testing.assert_array_equal(a, b)
    assert len(outs) > 1
    assert all(v in (0.0, 8.0) for out in outs for v in out)  # dropout rescales 4 by 1 / 0.5


@pytest.fixture(scope="module")
def trained():
    """Cart-pole (200 steps) trained 30 generations by PGPE and by CMA-ES on flax params."""
    policy = FlaxPolicy(TanhMLP(hidden=(16,)))
    task = CartPoleSwingUp(max_steps=200)
    key = jax.random.key(0)
    out = {}
    for name, algorithm in [
        ("pgpe", PGPE(pop_size=16, optimizer=optax.adam(0.05))),
        ("cma_es", CMAES(pop_size=16, init_std=0.5)),
    ]:
        trainer = Trainer(algorithm=algorithm, policy=policy, task=task, n_repeats=2)
        test = jax.jit(lambda state, trainer=trainer: trainer.test(state, jax.random.key(9), 16))
        state = trainer.init(key)
        before = float(test(state).mean())
        state, _ = jax.jit(trainer.run, static_argnums=1)(state, 30)
        out[name] = trainer, state, before, float(test(state).mean())
    return out


@pytest.mark.parametrize("name", ["pgpe", "cma_es"])
def test_flax_params_train_cartpole(trained, name):
    """Hanging still scores about 0 on 200 steps; 30 generations reach 64-71 (seed 0)."""
    trainer, state, before, after = trained[name]
    assert after > before + 30, (before, after)
    like = trainer.policy.init(jax.random.key(5), (5,), (1,))
    best, _ = trainer.solution(state)
    assert jax.tree.structure(best) == jax.tree.structure(like)  # the flax dict comes back
    # the deployed genome works with flax directly
    action = trainer.policy.module.apply({"params": best}, jnp.zeros(5))
    assert action.shape == (1,)


def test_checkpoint_round_trip(tmp_path, trained):
    trainer, state, _, _ = trained["cma_es"]
    store = CheckpointStore(tmp_path)
    store.save(state, {"test_mean": 1.0})
    restored, meta = store.restore(trainer.init(jax.random.key(3)))
    assert meta["generation"] == 30
    for a, b in zip(state_leaves(restored), state_leaves(state), strict=True):
        np.testing.assert_array_equal(a, b)
    assert jax.tree.structure(restored.algo_state.mean) == jax.tree.structure(state.algo_state.mean)
    store.close()


def test_bad_modules_are_clear_errors(monkeypatch):
    with pytest.raises(TypeError, match=r"flax\.linen\.Module"):
        FlaxPolicy(lambda x: x)
    with pytest.raises(TypeError, match="hashable"):
        FlaxPolicy(TanhMLP(hidden=[16]))  # a list field
    with pytest.raises(ValueError, match="rng_names"):
        FlaxPolicy(TanhMLP(), rng_names=("params",))

    class WithBatchNorm(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.BatchNorm(use_running_average=False)(nn.Dense(1)(x))

    with pytest.raises(ValueError, match="batch_stats"):
        FlaxPolicy(WithBatchNorm()).init(jax.random.key(0), (5,), (1,))
    with pytest.raises(ValueError, match=r"expected action_shape \(2,\)"):
        FlaxPolicy(TanhMLP()).init(jax.random.key(0), (5,), (2,))

    module = TanhMLP()
    monkeypatch.setitem(sys.modules, "flax", None)
    monkeypatch.setitem(sys.modules, "flax.linen", None)
    with pytest.raises(ImportError, match="pip install flax"):
        FlaxPolicy(module)
