"""Every algorithm the CLI can name builds, trains a few generations inside the trainer's
jitted scan, checkpoints its state exactly, and is listed by `evolax algos`."""

import jax
import numpy as np
import pytest

from evolax.checkpoint import CheckpointStore
from evolax.config import ALGORITHMS, build_trainer, resolve
from helpers import state_leaves


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_each_registered_algorithm_trains_in_the_trainer_and_checkpoints(name, tmp_path):
    config = resolve(
        None,
        {
            "algo": name,
            "pop_size": 8,
            "init_std": 0.2,
            "hidden_sizes": [4],
            "max_steps": 5,
            "n_repeats": 2,
            "grid_shape": [4, 4],
        },
    )
    trainer = build_trainer(config)
    assert isinstance(trainer.algorithm, ALGORITHMS[name].cls)
    state, metrics = jax.jit(trainer.run, static_argnums=1)(trainer.init(jax.random.key(0)), 3)
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


def test_cli_lists_every_algorithm(capsys):
    from evolax.cli import main

    assert main(["algos"]) == 0
    listed = [line.split(":")[0] for line in capsys.readouterr().out.splitlines()]
    assert set(ALGORITHMS) <= set(listed)


def test_map_elites_needs_a_task_with_descriptors():
    config = resolve(None, {"task": "seq2seq", "algo": "map_elites", "pop_size": 8})
    with pytest.raises(ValueError, match="behaviour descriptors"):
        build_trainer(config)
