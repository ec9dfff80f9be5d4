"""evolax.compiled: eager calls compile once per configuration and reuse the program; under a
trace they add nothing; a module holding arrays says how to jit its methods."""

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import evolax
from evolax.compiled import compiled, configuration_key
from evolax.optim import Optimizer
from evolax.policies import MLP
from evolax.tasks import CartPoleSwingUp


class Scaled(eqx.Module):
    factor: float
    name: str = eqx.field(static=True, default="x")


def test_one_trace_per_configuration_and_results_of_the_function():
    chex.clear_trace_counter()

    @compiled
    @chex.assert_max_traces(n=2)
    def scale(module, x, power=1):
        return {"y": module.factor * x**power, "name": module.name, "none": None}

    for x in (jnp.arange(3.0), np.arange(3.0) + 1, jnp.ones(3)):  # arrays are inputs
        out = scale(Scaled(2.0), x)
        np.testing.assert_allclose(out["y"], 2.0 * np.asarray(x))
        assert out["name"] == "x" and out["none"] is None  # non-array outputs come back
    np.testing.assert_allclose(scale(Scaled(2.0), jnp.ones(3), power=2)["y"], 2.0)  # new config
    with pytest.raises(AssertionError, match="traced > 2"):
        scale(Scaled(3.0), jnp.ones(3))  # a Python float is configuration


def test_under_a_trace_the_function_is_called_as_it_is():
    @compiled
    def double(x):
        return 2 * x

    jaxpr = jax.make_jaxpr(lambda x: double(double(x)))(1.0)
    assert [eqn.primitive.name for eqn in jaxpr.eqns] == ["mul", "mul"]
    assert jax.grad(lambda x: double(x) ** 2)(3.0) == 24.0
    np.testing.assert_allclose(jax.vmap(double)(jnp.arange(3.0)), [0.0, 2.0, 4.0])


def test_an_unhashable_non_array_leaf_is_named():
    class Box:
        __hash__ = None  # type: ignore[assignment]

    @compiled
    def identity(x, box):
        return x

    with pytest.raises(TypeError, match="identity: an argument holds Box"):
        identity(jnp.ones(2), Box())


def test_optimizers_and_closures_compare_by_their_configuration():
    assert Optimizer(optax.adam(0.05)) == Optimizer(optax.adam(0.05))
    assert Optimizer(optax.adam(0.05)) != Optimizer(optax.adam(0.01))
    assert Optimizer(optax.adam(0.05)) != Optimizer(optax.sgd(0.05))
    assert Optimizer(optax.sgd(0.1, momentum=0.9)) != Optimizer(optax.sgd(0.1, momentum=0.8))
    assert configuration_key(jnp.ones(2)) == configuration_key(np.ones(2, np.float32))
    assert configuration_key(jnp.ones(2)) != configuration_key(jnp.zeros(2))
    f, g = object(), object()  # compared by identity
    assert configuration_key(f) == configuration_key(f) != configuration_key(g)
    with pytest.raises(TypeError, match=r"optimizer must be an optax\.GradientTransformation"):
        Optimizer(0.05)


class Targeted(CartPoleSwingUp):
    target: jax.Array = eqx.field(default_factory=lambda: jnp.zeros(3))


def test_jitting_the_method_of_a_module_holding_arrays_points_to_filter_jit():
    trainer = evolax.Trainer(
        evolax.OpenES(pop_size=4), MLP(hidden_sizes=(2,)), Targeted(max_steps=3), mesh=None
    )
    state = trainer.init(jax.random.key(0))
    with pytest.raises(TypeError, match=r"trainer\.task\.target.*eqx\.filter_jit"):
        jax.jit(trainer.run, static_argnums=1)(state, 2)
    _, eager = trainer.run(state, 2)  # compiles itself
    chex.assert_trees_all_close(eqx.filter_jit(trainer.run)(state, 2)[1], eager, rtol=1e-6)
