"""MOME: the per-cell Pareto fronts against QDax's insertion rule one candidate at a time, the
MOQD-score against a brute-force area, the trainer's scan, and (in `nox -s slow`) QDax's MOME
at equal evaluations."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import evolax
import qd_reference
import qd_runs
from evolax.algorithms import MOME
from evolax.algorithms.qd import moqd_metrics


def fronts_of(state, cells):
    """Each cell's front as a list of fitness rows, in slot order."""
    fitness = np.asarray(state.fitness)
    return [[row for row in fitness[c] if np.all(row > -np.inf)] for c in range(cells)]


def test_fronts_match_qdax_insertion_one_candidate_at_a_time(key):
    pop, size, grid = 40, 3, (2, 2)
    algo = MOME(pop, 2, grid, (0, 0), (1, 1), reference_point=(-1.0, -1.0), max_front_size=size)
    state = algo.init(key, jnp.zeros(3))
    rng = np.random.default_rng(0)
    fronts: list[list] = [[] for _ in range(4)]
    for _ in range(3):  # small integers: ties, duplicates and full fronts
        x = rng.normal(size=(pop, 3)).astype(np.float32)
        f = rng.integers(0, 5, size=(pop, 2)).astype(np.float32)
        f[rng.random(pop) < 0.1, 0] = np.nan  # not offered
        d = rng.random((pop, 2)).astype(np.float32)
        state, metrics = algo.tell(key, state, jnp.asarray(x), f, descriptors=d)
        entered = 0
        for xi, fi, di in zip(x, f, d, strict=True):
            if np.all(np.isfinite(fi)):
                cell = qd_reference.grid_cell(di, grid, (0, 0), (1, 1))
                entered += qd_reference.mome_insert(fronts, (fi, xi), cell, size)
        for cell in range(4):
            want = np.array([p[0] for p in fronts[cell]]).reshape(-1, 2)
            got = np.array(fronts_of(state, 4)[cell]).reshape(-1, 2)
            np.testing.assert_array_equal(got, want)
            genomes = np.asarray(state.genomes)[cell, : len(want)]
            np.testing.assert_array_equal(
                genomes, np.array([p[1] for p in fronts[cell]]).reshape(-1, 3)
            )
        assert float(metrics["archive_insertions"]) == entered
        assert float(metrics["n_solutions"]) == sum(len(c) for c in fronts)


def test_moqd_score_is_the_sum_of_cell_hypervolumes(key):
    algo = MOME(30, 2, (3,), (0,), (1,), reference_point=(-2.0, -3.0), max_front_size=5)
    state = algo.init(key, jnp.zeros(2))
    rng = np.random.default_rng(1)
    f = rng.normal(size=(30, 2)).astype(np.float32)
    d = rng.random((30, 1)).astype(np.float32) * 0.66  # two of three cells
    state, metrics = algo.tell(key, state, jnp.zeros((30, 2)), f, descriptors=d)
    reference = np.array([-2.0, -3.0])
    areas = [qd_reference.area(np.array(c).reshape(-1, 2), reference) for c in fronts_of(state, 3)]
    assert float(metrics["moqd_score"]) == pytest.approx(sum(areas), rel=1e-5)
    assert float(metrics["max_hypervolume"]) == pytest.approx(max(areas), rel=1e-5)
    assert float(metrics["coverage"]) == pytest.approx(2 / 3)
    everything = np.concatenate([np.array(c).reshape(-1, 2) for c in fronts_of(state, 3)])
    assert float(metrics["global_hypervolume"]) == pytest.approx(
        qd_reference.area(everything, reference), rel=1e-5
    )
    again = moqd_metrics(state, jnp.asarray(reference))
    assert float(again["moqd_score"]) == float(metrics["moqd_score"])


def test_trains_in_the_trainer_and_compiles_once():
    algo = MOME(
        16, 2, (4, 4), (0, 0), (1, 1), reference_point=(-4.0, -40.0), max_front_size=4, init_std=0.3
    )
    trainer = evolax.Trainer(algo, evolax.Direct(), evolax.ActionCost(evolax.Arm(4)))
    chex.clear_trace_counter()  # traces are counted by function name
    run = jax.jit(chex.assert_max_traces(lambda s: trainer.run(s, 15), n=1))
    state, metrics = run(run(trainer.init(jax.random.key(0)))[0])
    assert float(metrics["moqd_score"][-1]) > float(metrics["moqd_score"][0]) > 0
    outputs = algo.outputs(state.algo_state)
    assert len(outputs["archive"].per_seed["elites"]["fitness"]) == round(
        16 * float(metrics["coverage"][-1])
    )
    assert any(outputs["pareto_front"].per_seed["pareto_front"])


@pytest.mark.slow
def test_matches_qdax_mome_at_equal_evaluations():
    """QDax's example problem (two Rastrigins, 6 genes, an 8 x 8 grid of the first two, fronts
    of 10, 64 children for 300 generations, iso+line in both): MOQD-score and coverage within
    the spread of QDax 0.5's MOME over 5 seeds."""
    pytest.importorskip("qdax")
    ours = [qd_runs.run_evolax_mome(seed, 300) for seed in range(5)]
    theirs = [qd_runs.run_qdax_mome(seed, 300) for seed in range(5)]
    for metric in ("moqd_score", "coverage"):
        a, b = [r[metric] for r in ours], [r[metric] for r in theirs]
        assert abs(np.median(a) - np.median(b)) <= 0.05 * abs(np.median(b)) + 2 * np.std(b), (a, b)
