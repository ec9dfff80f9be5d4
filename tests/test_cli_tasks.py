"""The `evolax` command on the other presets' tasks (seq2seq, MNIST, image approximation),
run as a new user would: subprocesses and fresh run folders."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from helpers import evolax_command, run_evolax, shared_data_dir


@pytest.mark.slow  # 21 s; the seq2seq policy and task have their own tests
def test_seq2seq_trains_evaluates_and_renders_a_table(tmp_path):
    run_dir = tmp_path / "s2s"
    train = run_evolax(
        "train", "seq2seq", "--pop-size", "8", "--hidden-size", "8", "--n-digits", "2",
        "policy.output_length=3", "--batch-size", "16", "--generations", "2", "--log-interval",
        "1", "--test-interval", "2", "--checkpoint-interval", "2", "--no-progress",
        "--run-dir", run_dir, cwd=tmp_path,
    )  # fmt: skip
    assert train.returncode == 0, train.stderr
    config = json.loads((run_dir / "config.json").read_text())
    assert config["task"]["name"] == "seq2seq" and config["algorithm"]["pop_size"] == 8
    assert config["algorithm"]["optimizer"]["learning_rate"] == 0.01
    assert config["task"]["n_digits"] == 2
    render = run_evolax("render", run_dir, cwd=tmp_path)
    assert render.returncode == 0, render.stderr
    assert "1 frame(s)" in render.stdout
    with Image.open(run_dir / "predictions.png") as image:
        assert image.size[1] > 100  # a header and 12 problems


@pytest.mark.slow  # 29 s; MNIST through the library: tests/tasks/test_mnist.py
def test_mnist_preset_trains_and_renders_predictions(tmp_path):
    """The mnist preset, shortened: two generations of a small population on the real data."""
    root = Path(
        os.environ.get("EVOLAX_DATA_DIR") or Path(__file__).parents[1] / ".." / "shared" / "data"
    )
    folder = next(
        (f for f in (root / "mnist", root) if (f / "t10k-labels-idx1-ubyte.gz").is_file()), None
    )
    if folder is None:
        pytest.skip(f"no MNIST files in {root} (set EVOLAX_DATA_DIR)")
    run_dir = tmp_path / "mnist"
    train = run_evolax(
        "train", "mnist", "--data-dir", folder, "--pop-size", "4", "--batch-size", "64",
        "--generations", "2", "--log-interval", "1", "--test-interval", "2",
        "--checkpoint-interval", "2", "--no-progress", "--run-dir", run_dir, cwd=tmp_path,
    )  # fmt: skip
    assert train.returncode == 0, train.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert 0.0 <= summary["final_test_mean"] <= 1.0  # accuracy on the 10,000 test images
    config = json.loads((run_dir / "config.json").read_text())
    assert config["algorithm"]["optimizer"]["name"] == "evojax_adam"  # EvoJAX's
    assert config["trainer"]["init_scale"] == 0.0
    render = run_evolax("render", run_dir, cwd=tmp_path)
    assert render.returncode == 0, render.stderr
    assert (run_dir / "predictions.png").is_file()


@pytest.mark.slow  # 15 s; tests/tasks/test_image_approximation.py covers the task itself
def test_image_approximation_trains_and_renders_the_painting(tmp_path):
    run_dir = tmp_path / "paint"
    train = run_evolax(
        "train", "image_approximation", "--pop-size", "8", "--pop-chunk", "2", "--n-triangles", "6",
        "--canvas-size", "24,32", "--generations", "4", "--log-interval", "2",
        "--test-interval", "4", "--checkpoint-interval", "4", "--no-progress",
        "--run-dir", run_dir, cwd=tmp_path,
    )  # fmt: skip
    assert train.returncode == 0, train.stderr
    config = json.loads((run_dir / "config.json").read_text())
    optimizer = config["algorithm"]["optimizer"]
    assert optimizer["name"] == "clipup" and optimizer["max_speed"] == 0.15
    assert config["task"]["size"] == [24, 32] and config["policy"]["name"] == "direct"
    render = run_evolax("render", run_dir, cwd=tmp_path)
    assert render.returncode == 0, render.stderr
    with Image.open(run_dir / "predictions.png") as image:
        assert image.size[0] >= 2 * 32 and image.size[1] >= 24  # painting beside target


@pytest.mark.slow  # 25 s: a one-step task's eval is batched like any other's
def test_eval_of_an_mnist_run_fits_in_2_gb(tmp_path):
    """`eval` takes its episodes from the run (MNIST's test is the whole test set, once), runs
    a one-step task's episodes one after another, and finds the data the run recorded."""
    data = shared_data_dir()
    # a user's shell: not the XLA flags this test process was given (or tests set)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["EVOLAX_DATA_DIR"] = str(data)
    run_dir = tmp_path / "run"
    train = ["train", "mnist", "--generations", "1", "--pop-size", "2", "--batch-size", "8"]
    command = evolax_command(*train, "--no-progress", "--run-dir", run_dir)
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=600)
    recorded = json.loads((run_dir / "config.json").read_text())["task"]["data"]
    assert recorded["data_dir"] == str(data)
    del env["EVOLAX_DATA_DIR"]  # eval finds the data through config.json
    # the peak of this process's own memory (VmHWM): ru_maxrss would also count the pytest
    # worker's, which Linux carries over into a child through fork and exec
    measure = (
        "import re, sys; from evolax.cli import main; code = main(sys.argv[1:]); "
        "status = open('/proc/self/status').read(); "
        "print(re.search(r'VmHWM:\\s+(\\d+) kB', status).group(1)); sys.exit(code)"
    )
    for episodes in ([], ["--episodes", "8"]):
        result = subprocess.run(
            [sys.executable, "-c", measure, "eval", str(run_dir), *episodes],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, result.stderr
        report, peak_kb = result.stdout.strip().splitlines()
        assert "on the test set (" in report and "episode" not in report
        peak = f"eval {' '.join(episodes)} peaked at {int(peak_kb) / 1024**2:.1f} GB"
        assert int(peak_kb) < 2 * 1024**2, f"{peak} (XLA_FLAGS here: {os.environ.get('XLA_FLAGS')})"
