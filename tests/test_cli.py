"""The `evolax` command, run as a new user would: subprocesses and fresh run folders."""

import json
import os

import pytest
from PIL import Image

from helpers import run_evolax

SMALL = [
    "--pop-size", "8", "--n-repeats", "2", "--max-steps", "50", "--hidden-sizes", "8",
    "--log-interval", "2", "--test-interval", "3", "--checkpoint-interval", "2",
    "--test-episodes", "4", "--no-progress",
]  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One short hard cart-pole run, in the default run folder, shared by the tests of the
    other commands."""
    cwd = tmp_path_factory.mktemp("cli")
    result = run_evolax(
        "train", "--config", "cartpole_hard", *SMALL, "--generations", "6", "--tensorboard",
        cwd=cwd,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (run_dir,) = (cwd / "runs").iterdir()
    return run_dir, result


def test_train_writes_config_metrics_summary_and_checkpoints(run):
    run_dir, result = run
    assert "final test score" in result.stdout
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    train_rows = [r for r in rows if r["kind"] == "train"]
    test_rows = [r for r in rows if r["kind"] == "test"]
    chunk_rows = [r for r in rows if r["kind"] == "chunk"]
    assert [r["generation"] for r in train_rows] == [1, 2, 3, 4, 5, 6]
    assert [r["generation"] for r in test_rows] == [3, 6]
    assert [r["generations"] for r in chunk_rows] == [2, 1, 1, 2]  # cut at tests/checkpoints
    assert chunk_rows[0]["compile_s"] > 0 and chunk_rows[-1]["compile_s"] < 0.5  # compiled once
    assert all(r["env_steps_per_s"] > 0 for r in chunk_rows)
    assert all(r["fitness_min"] <= r["fitness_mean"] <= r["fitness_max"] for r in train_rows)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["generations"] == 6
    assert summary["final_test_mean"] == test_rows[-1]["test_mean"]
    assert summary["compile_s"] > 0 and summary["run_s"] > 0
    config = json.loads((run_dir / "config.json").read_text())
    umask = os.umask(0)
    os.umask(umask)
    for name in ("config.json", "summary.json"):  # readable as any file the user writes
        assert (run_dir / name).stat().st_mode & 0o777 == 0o666 & ~umask
    assert config["task"]["hard"] is True and config["run"]["seed"] == 42  # from the preset
    assert config["algorithm"]["pop_size"] == 8  # a flag overrides
    assert config["task"]["pole_length"] == 0.6  # every field, defaults too
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["2", "4", "6"]
    assert len(list((run_dir / "best").iterdir())) == 1
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*"))


def test_eval_scores_the_saved_solution(run):
    run_dir, _ = run
    result = run_evolax("eval", run_dir, "--episodes", "3", cwd=run_dir.parent)
    assert result.returncode == 0, result.stderr
    assert "over 3 episodes" in result.stdout and "best solution" in result.stdout
    latest = run_evolax("eval", run_dir, "--checkpoint", "latest", "--episodes", "3", cwd=run_dir)
    assert "generation 6" in latest.stdout


def test_plot_and_render_write_pictures(run):
    run_dir, _ = run
    plot = run_evolax("plot", run_dir, cwd=run_dir.parent)
    assert plot.returncode == 0, plot.stderr
    with Image.open(run_dir / "learning_curves.png") as image:
        assert image.size[0] > 600
    gif = run_dir.parent / "episode.gif"
    render = run_evolax("render", run_dir, "--out", gif, cwd=run_dir.parent)
    assert render.returncode == 0, render.stderr
    with Image.open(gif) as image:
        assert image.n_frames > 1 and image.size == (600, 400)


def test_default_run_dir_and_refusal_to_overwrite(run):
    run_dir, _ = run
    assert run_dir.name.startswith("cartpole_hard-pgpe-seed42-")
    again = run_evolax("train", "cartpole", *SMALL, "--run-dir", run_dir, cwd=run_dir.parent)
    assert again.returncode == 2 and "already holds a run" in again.stderr


def test_configs_lists_presets(tmp_path):
    result = run_evolax("configs", cwd=tmp_path)
    for name in ("cartpole_easy", "cartpole_hard", "mnist", "seq2seq", "image_approximation"):
        assert f"{name}:" in result.stdout


def test_version(tmp_path):
    result = run_evolax("--version", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("evolax ")


def test_a_whole_test_set_is_not_counted_in_episodes():
    """MNIST's test is its whole test set, once: `eval` said "over 1 episodes"."""
    import numpy as np

    from evolax import CartPoleSwingUp
    from evolax.cli.common import over_episodes
    from evolax.data import MnistData
    from evolax.tasks import MNIST

    images, labels = np.zeros((3, 28, 28), np.uint8), np.array([0, 1, 2])
    test = MNIST(test=True, data=MnistData(images, labels, images, labels))
    assert over_episodes(1, test) == "on the test set (3 images)"
    assert over_episodes(1, CartPoleSwingUp()) == "over 1 episode"
    assert over_episodes(4, CartPoleSwingUp()) == "over 4 episodes"
