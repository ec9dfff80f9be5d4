"""The `evolax` command, run as a new user would: a subprocess and a fresh run folder."""

import json
import subprocess
import sys

import pytest


def evolax(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "evolax.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_train_cartpole_writes_metrics_and_summary(tmp_path):
    run_dir = tmp_path / "run"
    result = evolax(
        "train",
        "cartpole",
        "--hard",
        "--pop-size",
        "8",
        "--n-repeats",
        "2",
        "--max-steps",
        "50",
        "--hidden-sizes",
        "8",
        "--generations",
        "6",
        "--log-interval",
        "2",
        "--test-interval",
        "3",
        "--test-episodes",
        "4",
        "--run-dir",
        str(run_dir),
        "--no-progress",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "final test score" in result.stdout
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    train_rows = [r for r in rows if r["kind"] == "train"]
    test_rows = [r for r in rows if r["kind"] == "test"]
    assert [r["generation"] for r in train_rows] == [1, 2, 3, 4, 5, 6]
    assert [r["generation"] for r in test_rows] == [3, 6]
    assert all(r["fitness_min"] <= r["fitness_mean"] <= r["fitness_max"] for r in train_rows)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["generations"] == 6
    assert summary["final_test_mean"] == test_rows[-1]["test_mean"]
    config = json.loads((run_dir / "config.json").read_text())
    assert config["hard"] is True and config["pop_size"] == 8


def test_default_run_dir_is_under_runs(tmp_path):
    result = evolax(
        "train",
        "cartpole",
        "--pop-size",
        "4",
        "--n-repeats",
        "1",
        "--max-steps",
        "10",
        "--generations",
        "1",
        "--test-episodes",
        "2",
        "--no-progress",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name.startswith("cartpole-pgpe-seed0-") and (run / "summary.json").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pop-size", "7"], "pop_size must be even"),
        (["--pop-size", "0"], "must be a positive integer"),
        (["--init-std", "-1"], "init_std must be positive"),
        (["--hidden-sizes", "64,x"], "comma-separated integers"),
    ],
)
def test_bad_arguments_exit_with_a_clear_message(tmp_path, args, message):
    result = evolax("train", "cartpole", "--generations", "1", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr


def test_version(tmp_path):
    result = evolax("--version", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("evolax ")
