"""PGPE, OpenES and SNES with ``seeded=True``: a population held as seeds gives the update
their dense population gives, on the same samples (the members formed from the seeds)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from evolax.algorithms import PGPE, SNES, OpenES
from evolax.seeded import densify, is_seeded

GENOME = {"w": jnp.ones((4, 3)), "b": jnp.zeros(3)}


@pytest.mark.parametrize(
    "make",
    [
        lambda seeded: PGPE(pop_size=8, init_std=0.3, seeded=seeded),
        pytest.param(
            lambda seeded: OpenES(pop_size=6, antithetic=False, seeded=seeded),
            marks=pytest.mark.slow,
        ),
        pytest.param(lambda seeded: SNES(pop_size=6, seeded=seeded), marks=pytest.mark.slow),
    ],
    ids=["pgpe", "open_es", "snes"],
)
def test_seeded_update_equals_the_dense_update_on_the_same_samples(key, make):
    seeded, dense = make(True), make(False)
    state = seeded.init(key, GENOME)
    if state.std.ndim:  # a spread that differs per coordinate, as after some generations
        state = state.replace(std=state.std * jnp.linspace(0.5, 2.0, state.std.shape[0]))
    population, _ = seeded.ask(jax.random.key(1), state)
    assert is_seeded(population)
    members = densify(population)
    x = jax.vmap(lambda g: ravel_pytree(g)[0])(members)
    np.testing.assert_allclose(jnp.std(x - state.mean[None], axis=0) > 0, True)
    fitness = jax.random.normal(jax.random.key(2), (seeded.pop_size,))
    new, _ = jax.jit(seeded.tell)(key, state, population, fitness)
    reference, _ = jax.jit(dense.tell)(key, state, members, fitness)
    np.testing.assert_allclose(new.mean, reference.mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(new.std, reference.std, rtol=1e-5, atol=1e-6)  # OpenES: []
    np.testing.assert_allclose(ravel_pytree(new.best_genome)[0], x[jnp.argmax(fitness)], rtol=1e-6)
