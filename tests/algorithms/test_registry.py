"""Every algorithm the CLI can name builds, trains a few generations inside the trainer's
jitted scan, checkpoints its state exactly, and is listed by `evolax describe`."""

import jax
import numpy as np
import pytest

from evolax.algorithms import REGISTRY
from evolax.checkpoint import CheckpointStore
from evolax.config import build_trainer, resolve
from helpers import state_leaves

# variants whose family runs in the default suite (its state and update code shared): they
# run in `nox -s slow`, to keep the default suite under 12 minutes on 2 cores
SIBLINGS = {
    "iamalgam_univariate",  # iamalgam_full
    "sv_open_es",  # sv_cma_es
    "noise_reuse_es",  # persistent_es
    "samr_ga",  # mr15_ga
    "gesmr_ga",
    "shade",  # jade
    "sade",  # code
    "cso",  # clpso
    "sl_pso",
    "random_search",  # hill_climbing
    "simulated_annealing",
    "gradientless_descent",
    "xnes",  # snes
    "rm_es",  # ma_es
}


# tested in the default suite by its own module (tests/algorithms/test_neat.py: the trainer's
# scan and a checkpoint); here in `nox -s slow`
OWN_MODULE = {"neat"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n in SIBLINGS | OWN_MODULE else n
        for n in sorted(REGISTRY)
    ],
)
def test_each_registered_algorithm_trains_in_the_trainer_and_checkpoints(name, tmp_path):
    settings = [f"algorithm.name={name}", "algorithm.pop_size=8", "task.max_steps=5"]
    settings += ["trainer.n_repeats=2"]
    if name == "neat":  # its own genomes, from its own policy
        settings += ["policy.name=neat", "policy.max_nodes=10", "policy.max_conns=16"]
    else:
        settings += ["algorithm.init_std=0.2", "policy.hidden_sizes=[4]"]
    if name == "map_elites":
        settings.append("algorithm.grid_shape=[4, 4]")
    if name == "cvt_map_elites":
        settings.append("algorithm.n_cells=16")
    if name == "cma_mae":
        settings += ["algorithm.grid_shape=[4, 4]", "algorithm.n_emitters=2"]
    if name == "code":  # three trials for each of 6 members
        settings.append("algorithm.pop_size=18")
    if name == "dns":
        settings += ["algorithm.grid_shape=[4, 4]", "algorithm.capacity=16", "algorithm.k=3"]
    if name == "mome":  # two objectives: the return and the effort
        settings += ["algorithm.grid_shape=[4, 4]", "algorithm.n_objectives=2"]
        settings += ["algorithm.reference_point=[-10, -1000]", "algorithm.max_front_size=3"]
        settings += ["task.name=evolax.tasks.action_cost:ActionCost", "task.task.name=cartpole"]
        settings.remove("task.max_steps=5")
        settings.append("task.task.max_steps=5")
    preset = "cartpole_easy"
    if name == "mt_map_elites":  # a task set: the arm's
        preset, settings = "multi_task_arm", [f"algorithm.name={name}", "algorithm.pop_size=8"]
        settings += ["task.n_tasks=16", "task.n_joints=3", "algorithm.tournament_sizes=[1, 4]"]
    trainer = build_trainer(resolve(preset, settings))
    assert isinstance(trainer.algorithm, REGISTRY[name])
    # a task holding arrays (a task set) is not hashable as jax.jit's static self
    run = trainer.run if name == "mt_map_elites" else jax.jit(trainer.run, static_argnums=1)
    state, metrics = run(trainer.init(jax.random.key(0)), 3)
    assert np.all(np.isfinite(metrics["fitness_max"]))
    best, _ = trainer.solution(state)
    x0 = trainer.policy.init(jax.random.key(1), trainer.task.obs_shape, trainer.task.action_shape)
    assert jax.tree.structure(best) == jax.tree.structure(x0)
    assert all(np.all(np.isfinite(leaf)) for leaf in jax.tree.leaves(best))

    # the whole state, archive or covariance included, survives a checkpoint exactly
    store = CheckpointStore(tmp_path, keep=1)
    store.save(state, {})
    restored, _ = store.restore(trainer.init(jax.random.key(5)))
    store.close()
    for x, y in zip(state_leaves(state), state_leaves(restored), strict=True):
        np.testing.assert_array_equal(x, y)


def test_siblings_are_registered():
    assert SIBLINGS <= set(REGISTRY)


def test_cli_lists_every_algorithm(capsys):
    from evolax.cli import main

    assert main(["describe"]) == 0
    (listed,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Alg")]
    assert listed.split(": ")[1].split(", ") == list(REGISTRY)


def test_map_elites_needs_a_task_with_descriptors():
    config = resolve("seq2seq", ["algorithm.name=map_elites", "algorithm.grid_shape=[4, 4]"])
    with pytest.raises(ValueError, match=r"MAPElites needs \['descriptor_low', 'desc"):
        build_trainer(config)
