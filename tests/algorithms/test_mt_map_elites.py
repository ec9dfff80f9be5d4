"""Multi-task MAP-Elites: per-task elites against a sequential numpy loop, the tournament's
nearest task, the UCB1 bandit against its formula, the trainer's per-member tasks, and (in
`nox -s slow`) the authors' algorithm at equal evaluations."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import evolax
import qd_reference
import qd_runs
from evolax.algorithms import MTMAPElites
from evolax.tasks import MultiTaskArm, on_member

TASKS = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])


def test_each_child_enters_its_own_tasks_cell_as_a_sequential_loop(key):
    pop, dim = 16, 3
    algo = MTMAPElites(pop, TASKS, tournament_sizes=(1, 10))
    state = algo.init(key, jnp.zeros(dim))
    rng = np.random.default_rng(0)
    best = np.full(len(TASKS), -np.inf)
    arm_successes = np.zeros(2)
    for round_, arm in enumerate([-1, 1, 0]):  # a seeding batch, then two bandit arms
        genomes = rng.normal(size=(pop, dim)).astype(np.float32)
        fitness = rng.integers(0, 6, size=pop).astype(np.float32)  # ties within a task
        fitness[rng.random(pop) < 0.1] = np.nan
        tasks = rng.integers(0, len(TASKS), size=pop)
        state = state.replace(task_index=jnp.asarray(tasks, jnp.int32), arm=jnp.asarray(arm))
        state, metrics = algo.tell(key, state, jnp.asarray(genomes), fitness)
        successes = 0
        for f, t in zip(fitness, tasks, strict=True):  # pymap_elites' add_to_archive
            if not np.isnan(f) and f > best[t]:
                best[t], successes = f, successes + 1
        if arm >= 0:
            arm_successes[arm] += successes
        np.testing.assert_array_equal(state.archive.fitness, best, err_msg=f"round {round_}")
        np.testing.assert_array_equal(
            state.archive.descriptors[np.isfinite(best)], TASKS[np.isfinite(best)]
        )
        assert float(metrics["archive_insertions"]) == successes
    np.testing.assert_array_equal(state.successes, arm_successes)
    np.testing.assert_array_equal(state.pulls, [1, 1])


def test_a_large_tournament_picks_the_parents_own_task(key):
    """With 4 tasks and tournaments of 200 draws, the parent's own task is drawn (and is the
    nearest) but for a chance of (3/4)^200; children equal their parents (no variation)."""
    algo = MTMAPElites(64, TASKS, mutation_std=0.0, line_std=0.0, tournament_sizes=(200,))
    state = algo.init(key, jnp.zeros(2))
    genomes = jnp.asarray(TASKS * 10.0, jnp.float32)  # elite t = 10 * task t
    state = state.replace(task_index=jnp.tile(jnp.arange(4, dtype=jnp.int32), 16))
    state = algo.tell(key, state, jnp.tile(genomes, (16, 1)), jnp.tile(jnp.arange(4.0), 16))[0]
    children, state = algo.ask(jax.random.key(3), state)
    parent_task = np.argmin(np.abs(np.asarray(children)[:, None] - TASKS[None] * 10).sum(-1), 1)
    np.testing.assert_array_equal(algo.task_indices(state), parent_task)
    # a tournament of one is a uniform task instead: not always the parent's
    uniform = MTMAPElites(64, TASKS, mutation_std=0.0, line_std=0.0, tournament_sizes=(1,))
    _, drawn = uniform.ask(
        jax.random.key(3),
        state.replace(pulls=jnp.ones(1), successes=jnp.ones(1), task_index=state.task_index),
    )
    assert len(set(np.asarray(drawn.task_index).tolist())) == 4


def test_seeding_draws_random_individuals_in_the_box_on_random_tasks(key):
    algo = MTMAPElites(256, TASKS, lower=0.0, upper=1.0, init_fraction=0.5)
    state = algo.init(key, jnp.zeros(3))
    x, state = algo.ask(key, state)
    assert int(state.arm) == -1 and np.all((np.asarray(x) >= 0) & (np.asarray(x) <= 1))
    assert set(np.asarray(state.task_index).tolist()) == {0, 1, 2, 3}
    assert np.std(np.asarray(x)) > 0.2  # uniform on [0, 1], not around x0


def test_the_bandit_is_ucb1_once_every_size_was_used(key):
    algo = MTMAPElites(8, TASKS, tournament_sizes=(1, 10, 50))
    state = algo.init(key, jnp.zeros(2))
    successes, pulls = np.array([30.0, 12.0, 5.0]), np.array([10.0, 3.0, 1.0])
    ucb = successes / pulls + np.sqrt(2 * np.log(pulls.sum()) / pulls)  # pymap_elites' bandit
    state = state.replace(successes=jnp.asarray(successes), pulls=jnp.asarray(pulls))
    assert int(algo._pick_arm(key, state)) == int(np.argmax(ucb))
    untried = state.replace(pulls=jnp.asarray([1.0, 0.0, 1.0]))
    picks = {int(algo._pick_arm(k, untried)) for k in jax.random.split(key, 30)}
    assert picks == {0, 1, 2}


def test_multi_task_arm_matches_the_authors_arm_on_each_task():
    task = MultiTaskArm(n_joints=5, n_tasks=8)
    params = np.asarray(task.distribution.vectors())
    rng = np.random.default_rng(1)
    for t in range(8):
        genome = rng.random(5)
        pinned = on_member(task, t)
        state = pinned.reset(jax.random.key(t))
        _, reward, _ = pinned.step(state, jnp.asarray(genome, jnp.float32), jax.random.key(0))
        assert float(reward) == pytest.approx(qd_reference.arm_fitness(genome, params[t]), abs=1e-5)


def test_trainer_evaluates_each_member_on_its_task_and_compiles_once():
    task = MultiTaskArm(n_joints=4, n_tasks=32)
    algo = MTMAPElites(
        16, task.distribution.vectors(), lower=0.0, upper=1.0, tournament_sizes=(1, 8)
    )
    trainer = evolax.Trainer(algo, evolax.Direct(), task)
    chex.clear_trace_counter()  # traces are counted by function name
    run = jax.jit(chex.assert_max_traces(lambda s: trainer.run(s, 10), n=1))
    state, metrics = run(run(trainer.init(jax.random.key(0)))[0])
    archive = state.algo_state.archive
    filled = np.isfinite(np.asarray(archive.fitness))
    params = np.asarray(task.distribution.vectors())
    for t in np.flatnonzero(filled):  # each elite's fitness is its genome's on its own task
        want = qd_reference.arm_fitness(np.asarray(archive.genomes[t]), params[t])
        assert float(archive.fitness[t]) == pytest.approx(want, abs=1e-5)
    assert filled.mean() == pytest.approx(float(metrics["coverage"][-1]))
    assert float(metrics["coverage"][-1]) > 0.5


def test_a_task_without_a_matching_set_is_refused():
    algo = MTMAPElites(8, TASKS)
    with pytest.raises(ValueError, match="must draw its parameters from a ParamSet"):
        evolax.Trainer(algo, evolax.Direct(), MultiTaskArm(n_joints=3))
    with pytest.raises(ValueError, match=r"has 4 tasks, but task\.distribution holds 8"):
        evolax.Trainer(algo, evolax.Direct(), MultiTaskArm(n_joints=3, n_tasks=8))
    with pytest.raises(ValueError, match=r"task_params must have shape \(n_tasks, task_dim\)"):
        MTMAPElites(8, np.zeros((2, 2, 2)))


@pytest.mark.slow
def test_matches_the_authors_multi_task_map_elites_at_equal_evaluations():
    """10-joint arm, 200 tasks, 20,000 evaluations: evolax's QD-score (the tasks' best
    fitness summed, offset -2) and coverage within the spread of pymap_elites' rules (numpy)
    over 5 seeds."""
    ours = [qd_runs.run_evolax_mt_map_elites(seed, 20_000) for seed in range(5)]
    theirs = [qd_runs.run_reference_mt_map_elites(seed, 20_000) for seed in range(5)]
    for metric in ("coverage", "qd_score"):
        a, b = [r[metric] for r in ours], [r[metric] for r in theirs]
        assert abs(np.median(a) - np.median(b)) <= 0.02 * abs(np.median(b)) + 2 * np.std(b), (a, b)
