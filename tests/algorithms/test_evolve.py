"""``evolve``: ask, evaluate and tell in one ``lax.scan``, with the documented key schedule;
the multi-objective suites use it against pymoo (``tests/pymoo_reference.py``)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax import CMAES, ArchiveMAPElites, OpenES, evolve
from evolax.problems import sphere, sphere_linear_projection, to_fitness
from evolax.qd import GridArchive


def test_follows_the_documented_key_schedule_step_by_step():
    algorithm = OpenES(pop_size=8, init_std=0.5)
    x0, key = jnp.full(4, 2.0), jax.random.key(3)
    state, metrics = jax.jit(lambda k: evolve(algorithm, to_fitness(sphere), x0, k, 3))(key)

    init_key, key = jax.random.split(key)
    manual = algorithm.init(init_key, x0)
    for generation_key in jax.random.split(key, 3):
        ask_key, tell_key = jax.random.split(generation_key)
        x, manual = algorithm.ask(ask_key, manual)
        manual, _ = algorithm.tell(tell_key, manual, x, -jnp.sum(x**2, axis=1))
    np.testing.assert_allclose(state.mean, manual.mean, rtol=1e-6)
    assert metrics["best_fitness"].shape == (3,)


def test_solves_the_sphere_once_compiled_for_every_seed():
    algorithm = CMAES(pop_size=10, init_std=1.0)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(keys):
        return jax.vmap(lambda k: evolve(algorithm, to_fitness(sphere), jnp.ones(5), k, 150))(keys)

    state, _ = run(jax.random.split(jax.random.key(0), 3))
    run(jax.random.split(jax.random.key(1), 3))
    assert np.all(np.sum(np.asarray(state.best_genome) ** 2, axis=1) < 1e-10)


def test_tell_takes_the_objectives_extra_keywords():
    def qd(x):
        fitness, descriptors = sphere_linear_projection(x)
        return fitness, {"descriptors": descriptors}

    archive = GridArchive((8, 8), (-5.0, -5.0), (5.0, 5.0))
    me = ArchiveMAPElites(16, archive, mutation_std=0.5)
    _, metrics = evolve(me, qd, jnp.zeros(4), jax.random.key(0), 3)
    assert metrics["coverage"].shape == (3,) and float(metrics["coverage"][-1]) > 0


@pytest.mark.parametrize("generations", [0, 2.0, True])
def test_generations_must_be_a_positive_int(generations):
    with pytest.raises(ValueError, match="generations must be a positive integer"):
        evolve(CMAES(pop_size=4), to_fitness(sphere), jnp.zeros(2), jax.random.key(0), generations)
