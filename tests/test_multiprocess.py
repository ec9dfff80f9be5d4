"""Two processes on localhost (gloo CPU collectives) train together like one process does."""

import os
import socket
import subprocess

import jax
import numpy as np
import pytest

from evolax.runs import load_run
from helpers import evolax_command, metric_rows

SMALL = [
    "train", "cartpole", "--pop-size", "8", "--n-repeats", "2", "--max-steps", "60",
    "--hidden-sizes", "8", "--log-interval", "2", "--test-interval", "2",
    "--checkpoint-interval", "2", "--test-episodes", "4", "--seed", "5", "--no-progress",
]  # fmt: skip
# on the CPU: two processes on one GPU cannot form an NCCL clique (seen on an H200)
ENV = {
    **os.environ,
    "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
    "JAX_PLATFORMS": "cpu",
}


def free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def run_two_processes(*args, each=((), ()), status=0):
    """Run `evolax ARGS` as two processes of one run (process i also given ``each[i]``); their
    outputs, once both have exited with ``status`` (their errors, for a status other than 0)."""
    port = free_port()
    procs = [
        subprocess.Popen(
            evolax_command(
                *args, *each[i], "--coordinator", f"localhost:{port}", "--num-processes", 2,
                "--process-id", i,
            ),
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]  # fmt: skip
    outputs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outputs, strict=True):
        assert p.returncode == status, err
    return [out if status == 0 else err for out, err in outputs]


@pytest.mark.slow  # two processes that join and stop: 15 s
def test_the_processes_of_a_run_must_share_its_folder(tmp_path):
    """Process 0 writes the run: a process given another folder would believe the run is
    there, so both stop, before any work, naming the mismatch."""
    each = [("--run-dir", tmp_path / "a"), ("--run-dir", tmp_path / "b")]
    errors = run_two_processes(*SMALL, "--generations", 2, each=each, status=2)
    for error in errors:
        assert "the processes of this run were given different run folders" in error, error
        assert "give every process the same --run-dir" in error
    assert not (tmp_path / "a" / "metrics.jsonl").exists()


@pytest.mark.slow  # 50 s of the default run's 12 minutes; one process's devices: test_sharding
@pytest.mark.parametrize("algo", ["pgpe", "low_rank_es"])  # low_rank_es: held as seeds
def test_two_processes_match_one_and_resume(tmp_path, algo):
    single, multi = tmp_path / "single", tmp_path / "multi"
    small = [*SMALL, "--algo", algo]
    done = subprocess.run(
        evolax_command(*small, "--generations", 4, "--run-dir", single),
        env=ENV, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    out0, out1 = run_two_processes(*small, "--generations", 4, "--run-dir", multi)
    assert "2 processes, 2 cpu device(s)" in out0 and "final test score" in out0
    assert "training" not in out1 and "final test score" not in out1  # only process 0 reports

    a, b = metric_rows(single, "train"), metric_rows(multi, "train")
    assert [r["generation"] for r in b] == [1, 2, 3, 4]
    for key in ("fitness_max", "fitness_mean", "fitness_min", "env_steps"):
        np.testing.assert_allclose([r[key] for r in b], [r[key] for r in a], rtol=1e-4)
    # the tests, whose 4 episodes the 2 processes' devices split
    a, b = metric_rows(single, "test"), metric_rows(multi, "test")
    assert [r["generation"] for r in b] == [2, 4]
    for key in ("test_mean", "test_min", "test_max"):
        np.testing.assert_allclose([r[key] for r in b], [r[key] for r in a], rtol=1e-4)
    _, _, state_a, _ = load_run(single)
    config, _, state_b, _ = load_run(multi)
    assert config["host"] == {"devices": 2, "processes": 2}
    for x, y in zip(
        jax.tree.leaves(state_a.algo_state), jax.tree.leaves(state_b.algo_state), strict=True
    ):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)

    # Resuming with two processes: process 0 restores and broadcasts the checkpoint.
    out0, _ = run_two_processes("train", "--resume", multi, "--generations", 6, "--no-progress")
    assert "resuming" in out0
    assert [r["generation"] for r in metric_rows(multi, "train")] == [1, 2, 3, 4, 5, 6]
