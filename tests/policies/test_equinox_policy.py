"""An equinox module's floating-point arrays as the genome: the forward pass against numpy,
evaluation and training through the trainer, and one-line errors."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import evolax
from evolax.policies.base import EmptyState


def mlp(key, out_size=1):
    return eqx.nn.MLP(5, out_size, 8, 1, activation=jnp.tanh, final_activation=jnp.tanh, key=key)


def numpy_forward(genome, obs):
    x = np.asarray(obs, np.float64)
    for layer in genome.layers:
        x = np.tanh(np.asarray(layer.weight, np.float64) @ x + np.asarray(layer.bias))
    return x


def test_the_genome_is_the_modules_arrays_and_apply_is_its_call():
    module = mlp(jax.random.key(0))
    policy = evolax.EquinoxPolicy(module)
    genome = policy.init(jax.random.key(1), (5,), (1,))
    assert jax.tree.structure(genome) == jax.tree.structure(eqx.filter(module, eqx.is_array))
    obs = jnp.linspace(-1.0, 1.0, 5)
    action, state = policy.apply(genome, obs, policy.reset(jax.random.key(2)), jax.random.key(3))
    assert state == EmptyState()
    np.testing.assert_allclose(action, numpy_forward(genome, obs), rtol=1e-5, atol=1e-6)
    moved = jax.tree.map(lambda x: x + 0.1, genome)  # another genome, another action
    action2, _ = policy.apply(moved, obs, state, jax.random.key(3))
    np.testing.assert_allclose(action2, numpy_forward(moved, obs), rtol=1e-5, atol=1e-6)


def test_it_trains_in_the_trainer():
    policy = evolax.EquinoxPolicy(mlp(jax.random.key(0)))
    task = evolax.CartPoleSwingUp(max_steps=10)
    trainer = evolax.Trainer(evolax.OpenES(pop_size=8), policy, task, mesh=None)
    state, history = trainer.run(trainer.init(jax.random.key(0)), 2)
    assert np.all(np.isfinite(history["fitness_max"]))
    best, _ = trainer.solution(state)
    assert isinstance(best, eqx.nn.MLP)  # the module's own structure, arrays in place


def test_bad_modules_are_refused_in_one_line():
    with pytest.raises(TypeError, match=r"module must be an equinox\.Module, got function"):
        evolax.EquinoxPolicy(lambda obs: obs)
    with pytest.raises(TypeError, match="method must name a method of MLP, got 'forward'"):
        evolax.EquinoxPolicy(mlp(jax.random.key(0)), method="forward")
