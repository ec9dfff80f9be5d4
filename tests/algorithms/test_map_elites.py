"""MAP-Elites: archive insertion against a numpy loop, the analytic per-cell optimum of a
sphere, the variation operator, and the trainer's descriptor plumbing."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.qd.common import archive_metrics
from evolax.algorithms.qd.map_elites import MAPElites


def numpy_cells(descriptors, grid, low, high):
    cells = []
    for d in descriptors:
        index = [
            min(max(int(np.floor((v - lo) / (hi - lo) * n)), 0), n - 1)
            for v, lo, hi, n in zip(d, low, high, grid, strict=True)
        ]
        cells.append(int(np.ravel_multi_index(index, grid)))
    return cells


def numpy_insert(archive_fitness, archive_genomes, genomes, fitness, cells):
    """Sequential MAP-Elites insertion: a child replaces a strictly worse elite."""
    archive_fitness, archive_genomes = archive_fitness.copy(), archive_genomes.copy()
    for genome, f, cell in zip(genomes, fitness, cells, strict=True):
        f = -np.inf if np.isnan(f) else f
        if f > archive_fitness[cell]:
            archive_fitness[cell], archive_genomes[cell] = f, genome
    return archive_fitness, archive_genomes


def test_cell_index_matches_numpy():
    algo = MAPElites(8, (4, 3), (-1.0, 0.0), (1.0, 3.0))
    descriptors = np.array([[-1.0, 0.0], [0.999, 2.999], [0.0, 1.5], [-5.0, 9.0], [0.49, 0.99]])
    expected = numpy_cells(descriptors, (4, 3), (-1.0, 0.0), (1.0, 3.0))
    np.testing.assert_array_equal(algo.cell_index(jnp.asarray(descriptors, jnp.float32)), expected)


def test_tell_matches_sequential_insertion(key):
    pop, dim = 64, 3
    algo = MAPElites(pop, (5, 5), (0.0, 0.0), (1.0, 1.0))
    state = algo.init(key, jnp.zeros(dim))
    rng = np.random.default_rng(0)
    archive_f = np.full(25, -np.inf)
    archive_g = np.zeros((25, dim))
    for _ in range(3):  # several rounds, many children per cell, NaNs and ties
        genomes = rng.normal(size=(pop, dim)).astype(np.float32)
        fitness = rng.integers(0, 8, size=pop).astype(np.float32)  # many ties
        fitness[rng.random(pop) < 0.1] = np.nan
        descriptors = rng.random((pop, 2)).astype(np.float32)
        state, metrics = algo.tell(
            key, state, jnp.asarray(genomes), fitness, descriptors=descriptors
        )
        # ties between children: the first one in population order wins, as in the loop
        cells = numpy_cells(descriptors, (5, 5), (0, 0), (1, 1))
        archive_f, archive_g = numpy_insert(archive_f, archive_g, genomes, fitness, cells)
        np.testing.assert_array_equal(state.archive.fitness, archive_f)
        filled = np.isfinite(archive_f)
        np.testing.assert_array_equal(np.asarray(state.archive.genomes)[filled], archive_g[filled])
        np.testing.assert_array_equal(np.asarray(state.archive.genomes)[~filled], 0.0)  # x0
    assert float(metrics["coverage"]) == pytest.approx(filled.mean())
    assert float(metrics["qd_score"]) == pytest.approx(archive_f[filled].sum())


def test_fills_the_grid_with_each_cells_optimum(key):
    """Genome = descriptor in [-1, 1]^2, fitness -|x - c|^2: each cell's best possible
    fitness is minus the squared distance from c to the cell, which the archive must reach."""
    grid, centre = (8, 8), np.array([0.33, -0.41])
    algo = MAPElites(
        128, grid, (-1.0, -1.0), (1.0, 1.0), mutation_std=0.05, init_std=0.5, qd_offset=-100.0
    )

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        population, state = algo.ask(ask_key, state)
        fitness = -jnp.sum((population - jnp.asarray(centre)[None]) ** 2, axis=1)
        state, metrics = algo.tell(tell_key, state, population, fitness, descriptors=population)
        return state, metrics["qd_score"]

    state, qd = jax.jit(lambda s, k: jax.lax.scan(generation, s, jax.random.split(k, 500)))(
        algo.init(key, jnp.zeros(2)), key
    )
    edges = [np.linspace(-1, 1, n + 1) for n in grid]
    optimum = np.array(
        [
            -sum(
                (np.clip(c, e[i], e[i + 1]) - c) ** 2
                for c, e, i in zip(centre, edges, index, strict=True)
            )
            for index in np.ndindex(*grid)
        ]
    )
    assert np.all(np.isfinite(state.archive.fitness)), "every cell filled"
    # no elite beats its cell's optimum (so none sits in a wrong cell), and all come close
    assert np.all(np.asarray(state.archive.fitness) <= optimum + 1e-5)
    gap = optimum - np.asarray(state.archive.fitness)
    # over seeds 0-7 the largest gap is 0.018-0.032 and the mean 0.0048-0.0063
    assert gap.max() < 0.05 and gap.mean() < 0.008, (gap.max(), gap.mean())
    assert np.all(np.diff(np.asarray(qd)) >= -1e-4), "QD-score (offset below every f) never falls"
    np.testing.assert_allclose(algo.best(state), centre, atol=0.05)
    # the best-ever genome the template keeps is the best elite
    np.testing.assert_array_equal(
        algo.best(state), state.archive.genomes[jnp.argmax(state.archive.fitness)]
    )
    assert float(state.best_fitness) == float(jnp.max(state.archive.fitness))


def test_ask_uses_only_elites_and_the_line_operator(key):
    algo = MAPElites(1000, (4,), (0.0,), (4.0,), mutation_std=0.0, line_std=0.3)
    state = algo.init(key, jnp.zeros(2))
    elites = jnp.array([[1.0, 0.0], [0.0, 1.0]])
    state, _ = algo.tell(
        key,
        state,
        jnp.tile(elites, (500, 1)),
        jnp.ones(1000),
        descriptors=jnp.tile(jnp.array([[0.5], [2.5]]), (500, 1)),
    )
    children, _ = algo.ask(key, state)
    # with mutation_std = 0 every child lies on the line through the two elites: x + y = 1
    np.testing.assert_allclose(np.sum(children, axis=1), 1.0, atol=1e-5)
    t = np.asarray(children[:, 1])  # position along the line; N(0, 0.3^2) steps from a parent
    steps = np.minimum(np.abs(t), np.abs(1 - t))
    assert 0.1 < steps.std() < 0.4 and np.mean(steps < 1e-6) > 0.4  # pairs of equal parents


def test_first_generation_is_around_x0(key):
    algo = MAPElites(4000, (2,), (0.0,), (1.0,), init_std=0.2)
    state = algo.init(key, {"w": jnp.full(3, 2.0)})
    population, _ = algo.ask(key, state)
    np.testing.assert_allclose(np.mean(population["w"]), 2.0, atol=0.01)
    np.testing.assert_allclose(np.std(population["w"]), 0.2, atol=0.01)


def test_rejects_bad_configuration_and_missing_descriptors(key):
    for kwargs, match in [
        ({"grid_shape": ()}, "grid_shape"),
        ({"grid_shape": (0, 3)}, "grid_shape"),
        ({"descriptor_low": (0.0,)}, "descriptor_low"),
        ({"descriptor_high": (0.0, 0.0)}, "below"),
        ({"mutation_std": -1.0}, "mutation_std"),
        ({"line_std": -1.0}, "line_std"),
        ({"init_std": 0.0}, "init_std"),
    ]:
        args = {"pop_size": 4, "grid_shape": (3, 3), "descriptor_low": (0, 0)}
        args |= {"descriptor_high": (1, 1)} | kwargs
        with pytest.raises(ValueError, match=match):
            MAPElites(**args)
    algo = MAPElites(4, (3, 3), (0, 0), (1, 1))
    state = algo.init(key, jnp.zeros(2))
    assert MAPElites.extra_inputs == ("descriptors",)
    with pytest.raises(ValueError, match="needs descriptors"):
        algo.tell(key, state, jnp.zeros((4, 2)), jnp.zeros(4))
    for shape in [(4, 3), (5, 2)]:
        with pytest.raises(ValueError, match=r"descriptors must have shape \(pop, 2\)"):
            algo.tell(key, state, jnp.zeros((4, 2)), jnp.zeros(4), descriptors=jnp.zeros(shape))


def test_trains_cartpole_through_the_trainer(key):
    """The rollout records each episode's final descriptor; the archive fills in."""
    from evolax.policies import MLP
    from evolax.tasks import CartPoleSwingUp
    from evolax.trainer import Trainer

    task = CartPoleSwingUp(max_steps=50)
    algo = MAPElites(16, (5, 5), *task.descriptor_bounds, init_std=0.5)
    trainer = Trainer(algo, MLP(hidden_sizes=(8,)), task, n_repeats=2)
    state, metrics = jax.jit(trainer.run, static_argnums=1)(trainer.init(key), 3)
    coverage = np.asarray(metrics["coverage"])
    assert coverage[0] > 0 and np.all(np.diff(coverage) >= 0)
    archive = state.algo_state.archive
    filled = np.isfinite(archive.fitness)
    assert np.all(np.abs(archive.descriptors[filled]) <= 1.0)
    # the stored descriptors lie in the stored cells
    np.testing.assert_array_equal(
        algo.cell_index(archive.descriptors[filled]), np.flatnonzero(filled)
    )


def test_trainer_rejects_a_task_without_descriptors():
    from evolax.policies import MLP
    from evolax.tasks import Seq2SeqAddition
    from evolax.trainer import Trainer

    with pytest.raises(ValueError, match="behaviour descriptors"):
        Trainer(MAPElites(4, (3,), (0,), (1,)), MLP(), Seq2SeqAddition(batch_size=4))


def test_archive_metrics_offset(key):
    algo = MAPElites(2, (2,), (0,), (1,))
    state, _ = algo.tell(
        key,
        algo.init(key, jnp.zeros(1)),
        jnp.zeros((2, 1)),
        jnp.array([1.0, 3.0]),
        descriptors=jnp.array([[0.1], [0.9]]),
    )
    metrics = archive_metrics(state, qd_offset=-10.0)
    assert float(metrics["qd_score"]) == pytest.approx(24.0)
    assert float(metrics["coverage"]) == 1.0 and float(metrics["archive_max"]) == 3.0
