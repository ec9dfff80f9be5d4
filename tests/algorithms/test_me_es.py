"""ME-ES: theta is evaluated last and is all the archive receives, parents are drawn every
`steps_per_parent` steps from the best elites, modes alternate, and the paper's finding on a
deceptive-free benchmark: exploring covers more of the archive, exploiting finds fitter
elites (Colas et al. 2020, section 5)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.algorithms import MEES
from evolax.problems import linear_projection_bound, sphere_linear_projection
from evolax.qd import GridArchive
from helpers import qd_run

DIM = 10
BOUND = linear_projection_bound(DIM)


def run(algo, seeds=3, generations=150):
    one = qd_run(algo, sphere_linear_projection, jnp.zeros(DIM), generations)
    return jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(0), seeds))


def grid():
    return GridArchive((20, 20), (-BOUND,) * 2, (BOUND,) * 2)


def test_theta_alone_enters_the_archive_and_parents_come_every_few_steps():
    algo = MEES(9, grid(), mode="explore_exploit", init_std=0.5, steps_per_parent=4)
    state, metrics = run(algo, seeds=1, generations=12)
    assert np.all(np.asarray(metrics["archive_insertions"]) <= 1)
    # modes alternate at each new parent: exploit (the start), explore, exploit
    np.testing.assert_array_equal(metrics["exploring"][0], [0] * 4 + [1] * 4 + [0] * 4)
    assert int(state.steps[0]) == 0  # a parent was just drawn
    archive = jax.tree.map(lambda a: a[0], state.archive)
    assert np.any(np.all(np.asarray(archive.genomes) == np.asarray(state.mean[0]), axis=1))


@pytest.mark.slow
def test_exploring_covers_more_and_exploiting_finds_fitter_elites():
    settings = dict(init_std=0.5, optimizer=optax.adam(0.1), steps_per_parent=10)
    _, explore = run(MEES(21, grid(), mode="explore", **settings))
    _, exploit = run(MEES(21, grid(), mode="exploit", **settings))
    coverage = [float(np.median(m["coverage"][:, -1])) for m in (explore, exploit)]
    best = [float(np.median(m["archive_max"][:, -1])) for m in (explore, exploit)]
    assert coverage[0] > 1.2 * coverage[1], coverage
    assert best[1] > best[0], best


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(pop_size=8), "pop_size must be odd and at least 3"),
        (dict(pop_size=1), "pop_size must be odd and at least 3"),
        (dict(pop_size=9, mode="novelty"), "mode must be one of"),
        (dict(pop_size=9, steps_per_parent=0), "steps_per_parent must be"),
    ],
)
def test_bad_settings_raise_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MEES(archive=grid(), **kwargs)
