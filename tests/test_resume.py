"""A training process killed with SIGKILL and resumed ends bit for bit like an uninterrupted run."""

import signal
import subprocess
import time

import jax
import numpy as np
import pytest

from evolax.runs import load_run
from helpers import evolax_command, metric_rows

ARGS = [
    "train", "cartpole", "--pop-size", "8", "--n-repeats", "2", "--max-steps", "200",
    "--hidden-sizes", "8", "--generations", "16", "--log-interval", "2", "--test-interval", "4",
    "--checkpoint-interval", "1", "--keep-checkpoints", "2", "--test-episodes", "4",
    "--seed", "3", "--no-progress",
]  # fmt: skip


@pytest.mark.slow  # 39 s; the default suite resumes exactly after SIGINT (test_interrupt)
def test_sigkill_then_resume_equals_uninterrupted_run(tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    done = subprocess.run(
        evolax_command(*ARGS, "--run-dir", str(straight)), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr

    process = subprocess.Popen(
        evolax_command(*ARGS, "--run-dir", str(killed)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        saved = [int(p.name) for p in (killed / "checkpoints").glob("*") if p.name.isdigit()]
        if saved and max(saved) >= 6:
            break
        time.sleep(0.01)
    assert process.poll() is None, "the run finished before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL

    resumed = subprocess.run(
        evolax_command("train", "--resume", str(killed), "--no-progress"),
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stdout

    _, _, a, meta_a = load_run(straight)
    _, _, b, meta_b = load_run(killed)
    assert meta_a["generation"] == meta_b["generation"] == 16
    for x, y in zip(
        jax.tree.leaves(a.replace(key=jax.random.key_data(a.key))),
        jax.tree.leaves(b.replace(key=jax.random.key_data(b.key))),
        strict=True,
    ):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))  # bit for bit
    for kind in ("train", "test"):
        assert metric_rows(killed, kind, True) == metric_rows(straight, kind, True)


def test_resume_refuses_to_change_the_configuration(tmp_path):
    result = subprocess.run(
        evolax_command("train", "--resume", str(tmp_path), "--pop-size", "16"),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "--resume continues a run as configured; only run.generations, " in result.stderr
    assert "may change (got ['algorithm.pop_size'])" in result.stderr


def test_a_folder_without_a_recorded_configuration_cannot_be_rebuilt(tmp_path):
    (tmp_path / "config.json").write_text("{}")  # what evolax.train writes without config=
    with pytest.raises(ValueError, match="does not record a configuration"):
        load_run(tmp_path)


def test_a_resume_may_change_what_runner_resumable_lists(tmp_path):
    """The fields `evolax.runner.RESUMABLE` lets a resume change (intervals, checkpoints kept,
    generations) leave every generation's arithmetic alone: the state ends bit for bit as an
    uninterrupted run's."""
    from evolax import MLP, PGPE, CartPoleSwingUp, Trainer, train
    from helpers import state_leaves

    trainer = Trainer(
        algorithm=PGPE(pop_size=8),
        policy=MLP(hidden_sizes=(8,)),
        task=CartPoleSwingUp(max_steps=50),
        n_repeats=2,
    )
    first = dict(log_interval=1, test_interval=3, checkpoint_interval=3, keep_checkpoints=3)
    common = dict(n_test_episodes=2, progress=False, seed=5)
    straight = train(trainer, 6, run_dir=tmp_path / "straight", **first, **common)
    train(trainer, 3, run_dir=tmp_path / "resumed", **first, **common)
    changed = dict(log_interval=2, test_interval=1, checkpoint_interval=1, keep_checkpoints=1)
    resumed = train(trainer, 6, run_dir=tmp_path / "resumed", resume=True, **changed, **common)
    for x, y in zip(state_leaves(straight.state), state_leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(x, y)
