"""Every algorithm's public methods compile once per configuration when called eagerly: two
fresh instances built from equal arguments (an optax optimizer included) share one program,
and under the caller's trace the methods add nothing."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from test_template import GENOME, MATHS, POP, REQUIRED, exported_algorithms, extra_inputs
from test_template import objectives as fitness_of

from evolax.algorithms import CMAES, OpenES, SimpleGA
from evolax.compiled import is_compiled


def generation(algo, key, x0):
    state = algo.init(key, x0)
    population, state = algo.ask(key, state)
    fitness = fitness_of(algo, population)
    state, metrics = algo.tell(key, state, population, fitness, **extra_inputs(algo, key))
    return algo.best(state), metrics


def count_traces(monkeypatch, cls):
    chex.clear_trace_counter()
    for name in MATHS:
        monkeypatch.setattr(cls, name, chex.assert_max_traces(getattr(cls, name), n=1))


@pytest.mark.parametrize("cls", exported_algorithms(), ids=lambda cls: cls.__name__)
def test_equal_arguments_make_equal_configurations(cls):
    """What a compiled program is keyed by: the instances' pytree structure (static fields
    included) and their leaves. (tests/algorithms/test_template.py calls every algorithm's
    methods on fresh instances under ``chex.assert_max_traces``.)"""
    assert all(is_compiled(getattr(cls, name)) for name in ("init", "ask", "tell", "best"))
    kwargs = {"pop_size": POP} | REQUIRED.get(cls.__name__, {})
    a, b = jax.tree.flatten(cls(**kwargs)), jax.tree.flatten(cls(**kwargs))
    assert a[1] == b[1] and hash(a[1]) == hash(b[1])
    assert len(a[0]) == len(b[0])
    for x, y in zip(a[0], b[0], strict=True):
        assert type(x) is type(y)
        if not isinstance(x, jax.Array | np.ndarray):
            assert x == y


@pytest.mark.parametrize(
    "make",
    [
        lambda: OpenES(pop_size=8, optimizer=optax.adam(0.05)),
        lambda: OpenES(pop_size=8),
        lambda: OpenES(pop_size=8, optimizer=optax.chain(optax.clip(1.0), optax.adam(0.05))),
        lambda: OpenES(pop_size=8, optimizer=optax.adam(optax.exponential_decay(0.1, 10, 0.9))),
    ],
    ids=["adam", "default", "chain", "schedule"],
)
def test_an_optimizer_compares_by_its_configuration(make, monkeypatch):
    assert make() == make() and hash(make()) == hash(make())
    count_traces(monkeypatch, OpenES)
    for seed in range(2):
        generation(make(), jax.random.key(seed), GENOME)


def test_another_optimizer_configuration_is_another_program():
    assert OpenES(pop_size=8, optimizer=optax.adam(0.05)) != OpenES(
        pop_size=8, optimizer=optax.adam(0.01)
    )
    assert OpenES(pop_size=8, optimizer=optax.adam(0.05)) != OpenES(
        pop_size=8, optimizer=optax.sgd(0.05)
    )


def test_python_float_hyperparameters_are_configuration_and_arrays_are_inputs(monkeypatch):
    """A Python float is part of the configuration (a new value, a new program); the same
    field given as an array is an input of one program, as under ``vmap``."""
    count_traces(monkeypatch, SimpleGA)
    for std in (0.1, 0.2, 0.3):
        generation(SimpleGA(pop_size=8, mutation_std=jnp.asarray(std)), jax.random.key(0), GENOME)
    with pytest.raises(AssertionError, match="traced > 1"):
        generation(SimpleGA(pop_size=8, mutation_std=0.4), jax.random.key(0), GENOME)
        generation(SimpleGA(pop_size=8, mutation_std=0.5), jax.random.key(0), GENOME)


def test_methods_add_nothing_under_the_callers_trace():
    algo = CMAES(pop_size=8)
    key = jax.random.key(0)
    state = algo.init(key, GENOME)

    def step(state):
        population, state = algo.ask(key, state)
        return algo.tell(key, state, population, fitness_of(algo, population))[0]

    jaxpr = jax.make_jaxpr(step)(state)
    assert "flat" not in str(jaxpr)  # no call of a compiled method's program
    # and the eager calls give the traced program's results
    eager, jitted = step(state), jax.jit(step)(state)
    chex.assert_trees_all_close(eager, jitted, rtol=1e-5)
