"""Ctrl-C (SIGINT) or SIGTERM loses nothing: the run checkpoints its last chunk, says how to
resume, and the resumed run ends exactly as an uninterrupted one."""

import json
import shutil
import signal
import subprocess
import time

import numpy as np
import pytest

from evolax.runs import load_run
from helpers import evolax_command, start_evolax, state_leaves

FLAGS = [
    "cartpole", "--pop-size", "8", "--n-repeats", "2", "--max-steps", "100",
    "--hidden-sizes", "8", "--log-interval", "1", "--test-interval", "100000",
    "--checkpoint-interval", "100000", "--test-episodes", "4", "--no-progress",
]  # fmt: skip


def train(*args, cwd):
    result = subprocess.run(
        evolax_command("train", *args), cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return result


def train_rows(run_dir):
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [
        {k: v for k, v in row.items() if k != "wall_time"}  # the same numbers, not times
        for row in rows
        if row["kind"] in ("train", "test")
    ]


def assert_same_runs(a, b):
    assert train_rows(a) == train_rows(b)
    (_, _, state_a, _), (_, _, state_b, _) = load_run(a, "latest"), load_run(b, "latest")
    for x, y in zip(state_leaves(state_a), state_leaves(state_b), strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    "signal_number",
    [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.slow)],  # the same path
)
def test_a_stop_before_the_first_checkpoint_resumes_exactly(tmp_path, signal_number):
    """The stopped run resumes as if it had not stopped: as a copy of its configuration alone
    runs, resumed from generation 0."""
    stopped = tmp_path / "stopped"
    process = start_evolax(
        "train", *FLAGS, "--generations", "1000000", "--run-dir", stopped, cwd=tmp_path
    )
    metrics = stopped / "metrics.jsonl"
    deadline = time.monotonic() + 240
    while not (metrics.exists() and metrics.read_text().count('"train"') >= 3):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal_number)
    _, err = process.communicate(timeout=120)
    name = signal.Signals(signal_number).name
    assert process.returncode == 130, err
    summary = json.loads((stopped / "summary.json").read_text())
    generation = summary["generations"]
    assert err.strip().splitlines() == [  # one line, no traceback
        f"evolax train: stopped at generation {generation} on {name}, saved; resume with: "
        f"evolax train --resume {stopped}"
    ]
    assert summary["interrupted"] == name and generation < 100000  # before any checkpoint
    assert [p.name for p in (stopped / "checkpoints").iterdir()] == [str(generation)]

    # a run that stopped before it saved anything (a crash, a failed start) keeps its
    # configuration, and --resume starts it again from generation 0: run without a stop, it
    # is the reference the stopped run must equal
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(stopped / "config.json", bare / "config.json")
    (bare / "metrics.jsonl").write_text('{"kind": "train", "generation": 1}\n')  # torn start
    total = str(generation + 3)
    train("--resume", bare, "--generations", total, cwd=tmp_path)
    generations = [row["generation"] for row in train_rows(bare) if row["kind"] == "train"]
    assert generations == list(range(1, generation + 4))  # from 0, the torn row gone
    train("--resume", stopped, "--generations", total, cwd=tmp_path)
    assert_same_runs(stopped, bare)
