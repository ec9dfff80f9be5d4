"""The common slips of a loop ported with docs/from_evosax.md or docs/from_evojax.md each end
in one line that names the argument and the form evolax expects, raised where the slip is
made (at construction, or when the call is traced), not deep inside the update."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import evolax

KEY = jax.random.key(0)
X0 = jnp.zeros(3)


@pytest.fixture(scope="module")
def asked():
    es = evolax.OpenES(pop_size=8)
    population, state = es.ask(KEY, es.init(KEY, X0))
    return es, state, population, -jnp.sum(population**2, axis=1)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        # evosax: CMA_ES(population_size=16, solution=x0), params.replace(std_init=0.5)
        (lambda: evolax.CMAES(population_size=16), "population_size=.*evolax's is pop_size"),
        (lambda: evolax.CMAES(pop_size=16, solution=X0), "solution=.*init's x0"),
        (lambda: evolax.CMAES(pop_size=16, std_init=0.5), "std_init=.*evolax's is init_std"),
        (lambda: evolax.SimpleGA(popsize=16), "popsize=.*pop_size"),
        (lambda: evolax.OpenES(pop_size=16, num_dims=3), "num_dims=.*init's x0"),
        (lambda: evolax.OpenES(pop_size=16, lrate_init=0.01), "lrate_init=.*optimizer"),
        # EvoJAX: PGPE(pop_size, param_size, init_stdev, center_learning_rate, seed, ...)
        (lambda: evolax.PGPE(pop_size=16, param_size=3), "param_size=.*init's x0"),
        (lambda: evolax.PGPE(pop_size=16, init_stdev=0.1), "init_stdev=.*init_std"),
        (lambda: evolax.PGPE(pop_size=16, center_learning_rate=0.1), "optimizer"),
        (lambda: evolax.PGPE(pop_size=16, stdev_learning_rate=0.1), "std_lr"),
        (lambda: evolax.PGPE(pop_size=16, seed=0), "seed=.*keys of init, ask and tell"),
        (lambda: evolax.PGPE(pop_size=16, optimizer="adam"), "optax.GradientTransformation"),
    ],
)
def test_another_librarys_constructor_arguments_are_named(make, message):
    with pytest.raises(TypeError, match=message):
        make()


def test_evosax_argument_order_in_tell(asked):
    es, state, population, fitness = asked
    with pytest.raises(TypeError, match=r"where the state belongs.*evosax's order") as error:
        es.tell(KEY, population, fitness, state)  # evosax: tell(key, population, fitness, state)
    assert "\n" not in str(error.value)
    with pytest.raises(TypeError, match=r"take no params.*evosax's order"):
        es.tell(KEY, population, fitness, state, {"std_init": 0.1})  # ... and its params
    with pytest.raises(TypeError, match="take no params"):
        es.ask(KEY, state, {"std_init": 0.1})  # evosax: ask(key, state, params)
    with pytest.raises(TypeError, match="take no params"):
        es.init(KEY, X0, {"std_init": 0.1})  # evosax: init(key, mean, params)


def test_a_state_where_a_population_belongs_and_swapped_key(asked):
    es, state, population, fitness = asked
    with pytest.raises(TypeError, match=r"tell\(key, state, population, fitness\): got a state"):
        es.tell(KEY, state, state, fitness)
    with pytest.raises(TypeError, match=r"ask\(key, state\): got a state .* where the key"):
        es.ask(state, KEY)
    with pytest.raises(TypeError, match=r"best\(state\): got an array of shape \(8, 3\)"):
        es.best(population)


def test_the_slips_are_caught_under_jit_too(asked):
    es, state, population, fitness = asked
    with pytest.raises(TypeError, match="evosax's order"):
        jax.jit(lambda *args: es.tell(*args))(KEY, population, fitness, state)


@pytest.mark.parametrize(
    ("fitness", "error", "message"),
    [
        (jnp.zeros(5), ValueError, r"fitness must have shape \(pop_size,\) = \(8,\), got \(5,\)"),
        (jnp.zeros((8, 1)), ValueError, r"fitness must have shape \(pop_size,\)"),
        (jnp.zeros(8, jnp.complex64), TypeError, "fitness must hold real numbers"),
        (jnp.zeros(8, bool), TypeError, "fitness must hold real numbers"),
        ({"return": jnp.zeros(8)}, TypeError, "fitness must be an array of real numbers"),
    ],
)
def test_fitness_of_the_wrong_shape_or_dtype(asked, fitness, error, message):
    es, state, population, _ = asked
    with pytest.raises(error, match=message):
        es.tell(KEY, state, population, fitness)


def test_integer_and_float64_fitness_are_read_as_numbers(asked):
    es, state, population, fitness = asked
    expected, _ = es.tell(KEY, state, population, fitness)
    for other in (np.asarray(fitness, np.float64), jnp.round(fitness * 1000).astype(jnp.int32)):
        new, _ = es.tell(KEY, state, population, other)
        assert np.all(np.isfinite(new.mean))
    np.testing.assert_allclose(
        es.tell(KEY, state, population, np.asarray(fitness, np.float64))[0].mean, expected.mean
    )
