"""Two processes on localhost (gloo CPU collectives) train together like one process does."""

import json
import os
import socket
import subprocess
import sys

import jax
import numpy as np

from evolax.checkpoint import CheckpointStore
from evolax.config import build_trainer
from evolax.runner import initial_state

SMALL = [
    "train", "cartpole", "--pop-size", "8", "--n-repeats", "2", "--max-steps", "60",
    "--hidden-sizes", "8", "--log-interval", "2", "--test-interval", "2",
    "--checkpoint-interval", "2", "--test-episodes", "4", "--seed", "5", "--no-progress",
]  # fmt: skip
ENV = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=1"}


def free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def evolax(*args):
    return [sys.executable, "-m", "evolax.cli", *map(str, args)]


def run_two_processes(*args):
    port = free_port()
    procs = [
        subprocess.Popen(
            evolax(
                *args, "--coordinator", f"localhost:{port}", "--num-processes", 2, "--process-id", i
            ),
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    outputs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
    return [out for out, _ in outputs]


def train_rows(run_dir):
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if r["kind"] == "train"]


def final_state(run_dir):
    config = json.loads((run_dir / "config.json").read_text())
    trainer = build_trainer(config)
    store = CheckpointStore(run_dir)
    state, _ = store.restore(initial_state(trainer, config["seed"]))
    store.close()
    return state, config


def test_two_processes_match_one_and_resume(tmp_path):
    single, multi = tmp_path / "single", tmp_path / "multi"
    done = subprocess.run(
        evolax(*SMALL, "--generations", 4, "--run-dir", single),
        env=ENV, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    out0, out1 = run_two_processes(*SMALL, "--generations", 4, "--run-dir", multi)
    assert "2 processes, 2 cpu device(s)" in out0 and "final test score" in out0
    assert "training" not in out1 and "final test score" not in out1  # only process 0 reports

    a, b = train_rows(single), train_rows(multi)
    assert [r["generation"] for r in b] == [1, 2, 3, 4]
    for key in ("fitness_max", "fitness_mean", "fitness_min", "env_steps"):
        np.testing.assert_allclose([r[key] for r in b], [r[key] for r in a], rtol=1e-4)
    (state_a, _), (state_b, config) = final_state(single), final_state(multi)
    assert config["processes"] == 2 and config["devices"] == 2
    for x, y in zip(
        jax.tree.leaves(state_a.algo_state), jax.tree.leaves(state_b.algo_state), strict=True
    ):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)

    # Resuming with two processes: process 0 restores and broadcasts the checkpoint.
    out0, _ = run_two_processes("train", "--resume", multi, "--generations", 6, "--no-progress")
    assert "resuming" in out0
    assert [r["generation"] for r in train_rows(multi)] == [1, 2, 3, 4, 5, 6]
