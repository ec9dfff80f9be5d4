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
    assert "only run.generations, run.loggers and run.cpu_devices may change" in result.stderr


def test_a_folder_without_a_recorded_configuration_cannot_be_rebuilt(tmp_path):
    (tmp_path / "config.json").write_text("{}")  # what evolax.train writes without config=
    with pytest.raises(ValueError, match="does not record a configuration"):
        load_run(tmp_path)
