"""Dominated Novelty Search: the competition fitness against a one-at-a-time loop, survival
of the best by it, the trainer's scan, and (in `nox -s slow`) QDax's algorithm at equal
evaluations (its rules in numpy, tests/qd_reference.py)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import evolax
import qd_reference
import qd_runs
from evolax.algorithms import DominatedNoveltySearch
from evolax.algorithms.qd import competition_fitness


@pytest.mark.parametrize("k", [1, 3, 20])
def test_competition_fitness_matches_a_brute_force_loop(k):
    rng = np.random.default_rng(k)
    fitness = rng.normal(size=40)
    fitness[[3, 17]] = -np.inf  # invalid members neither compete nor count as fitter
    fitness[5] = np.nan
    descriptors = rng.random((40, 3))
    got = competition_fitness(jnp.asarray(fitness), jnp.asarray(descriptors), k)
    want = qd_reference.competition_fitness(fitness, descriptors, k)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert np.isinf(want[np.nanargmax(fitness)])  # the fittest: no one beats it


def test_hand_made_population():
    """Four points on a line at 0, 1, 3, 6 with fitness 4, 3, 2, 1 and k = 2: each one's
    fitter neighbours are those to its left."""
    got = competition_fitness(jnp.array([4.0, 3.0, 2.0, 1.0]), jnp.array([[0.0], [1], [3], [6]]), 2)
    np.testing.assert_allclose(got, [np.inf, 1.0, (2 + 3) / 2, (3 + 5) / 2])


def test_tell_keeps_the_best_by_competition_fitness(key):
    pop, capacity, dim = 8, 6, 2
    algo = DominatedNoveltySearch(pop, (4, 4), (0, 0), (1, 1), capacity=capacity, k=2)
    state = algo.init(key, jnp.zeros(dim))
    rng = np.random.default_rng(0)
    members = np.zeros((0, dim)), np.zeros(0), np.zeros((0, 2))
    for _ in range(3):
        x = rng.normal(size=(pop, dim)).astype(np.float32)
        f = rng.normal(size=pop).astype(np.float32)
        d = rng.random((pop, 2)).astype(np.float32)
        state, metrics = algo.tell(key, state, jnp.asarray(x), f, descriptors=d)
        genomes = np.concatenate([members[0], x])
        scores, places = np.concatenate([members[1], f]), np.concatenate([members[2], d])
        competition = qd_reference.competition_fitness(scores, places, 2)
        keep = np.argsort(-competition, kind="stable")[:capacity]
        members = genomes[keep], scores[keep], places[keep]
        got = np.asarray(state.fitness)[np.isfinite(state.fitness)]
        np.testing.assert_array_equal(np.sort(got), np.sort(members[1]))
    np.testing.assert_array_equal(
        np.asarray(state.population)[np.argsort(state.fitness)], members[0][np.argsort(members[1])]
    )
    assert float(metrics["population_size"]) == capacity


def test_trains_in_the_trainer_and_compiles_once():
    algo = DominatedNoveltySearch(16, (8, 8), (0, 0), (1, 1), capacity=32, k=3, init_std=0.3)
    trainer = evolax.Trainer(algo, evolax.Direct(), evolax.Arm(4))
    chex.clear_trace_counter()  # traces are counted by function name
    run = jax.jit(chex.assert_max_traces(lambda s: trainer.run(s, 15), n=1))
    state, metrics = run(run(trainer.init(jax.random.key(0)))[0])
    assert float(metrics["coverage"][-1]) > float(metrics["coverage"][0])
    assert int(jnp.sum(jnp.isfinite(state.algo_state.fitness))) == 32


@pytest.mark.slow
def test_matches_qdax_dns_at_equal_evaluations():
    """Arm, 8 joints, 64 children for 150 generations, capacity 256, k = 3: coverage and
    QD-score of the passive 16 x 16 grid within the spread of QDax's rules over 5 seeds."""
    ours = [qd_runs.run_evolax_dns(seed, 150) for seed in range(5)]
    theirs = [qd_runs.run_reference_dns(seed, 150) for seed in range(5)]
    for metric in ("coverage", "qd_score"):
        a, b = [r[metric] for r in ours], [r[metric] for r in theirs]
        assert abs(np.median(a) - np.median(b)) <= 0.05 * abs(np.median(b)) + 2 * np.std(b)
