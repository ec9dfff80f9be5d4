"""Every mistake a user can make on the `evolax` command line ends in one line that names the
argument and what was expected: no traceback, unless `--debug` asks for it."""

import builtins
import os
import subprocess
import sys

import pytest

from evolax import cli
from evolax.data import mnist

TINY = [
    "--pop-size", "4", "--n-repeats", "1", "--max-steps", "5", "--hidden-sizes", "4",
    "--log-interval", "1", "--test-episodes", "1", "--no-progress",
]  # fmt: skip


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A finished 2-generation cart-pole run."""
    path = tmp_path_factory.mktemp("errors") / "run"
    assert cli.main(["train", "cartpole", *TINY, "--generations", "2", "--run-dir", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def corrupt_run(run_dir, tmp_path_factory):
    """A copy of ``run_dir`` whose every checkpoint is unreadable."""
    import shutil

    copy = tmp_path_factory.mktemp("corrupt") / "run"
    shutil.copytree(run_dir, copy)
    for folder in ("checkpoints", "best"):
        for step in (copy / folder).iterdir():
            for file in step.rglob("*"):
                if file.is_file():
                    file.write_bytes(b"garbage")
    return copy


@pytest.fixture
def files(tmp_path):
    (tmp_path / "notes.txt").write_text("not an image")
    (tmp_path / "empty").mkdir()
    return tmp_path


@pytest.fixture
def offline(monkeypatch):
    """MNIST cannot be downloaded (no network in tests) and is nowhere on disk."""

    def refuse(url, *args, **kwargs):
        raise OSError(f"network unreachable: {url}")

    monkeypatch.setattr(mnist, "_fetch", refuse)
    monkeypatch.setattr(mnist, "_answering", lambda mirrors, timeout: list(mirrors))
    monkeypatch.delenv("EVOLAX_DATA_DIR", raising=False)


def _hide(monkeypatch, package):
    """Imports of ``package`` fail, as where it is not installed."""
    real_import = builtins.__import__

    def hide(name, *args, **kwargs):
        if name == package or name.startswith(package + "."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", hide)


@pytest.fixture
def no_brax(monkeypatch):
    _hide(monkeypatch, "brax")


@pytest.fixture
def no_tensorboardx(monkeypatch, tmp_path):
    """No tensorboardX, and the layout measured, so that asking late would cost compiling."""
    _hide(monkeypatch, "tensorboardX")
    monkeypatch.setenv("EVOLAX_MEASURE_LAYOUT", "1")
    monkeypatch.setattr("evolax.placement.tuner.choose", lambda *a, **k: pytest.fail("tuned"))


# (arguments, fixtures the case needs, what the one line must say); {files}, {run} and
# {corrupt} stand for the fixtures' folders
CASES = [
    (["train", "--pop-size", "7"], [], "pop_size must be even"),
    (["train", "--pop-size", "0"], [], "algorithm: pop_size must be a positive integer, got 0"),
    (["train", "--pop-size", "x"], [], "algorithm.pop_size: expected int, got 'x'"),
    (["train", "--init-std", "-1"], [], "init_std must be a finite positive number, got -1.0"),
    (
        ["train", "--center-lr", "nan"],
        [],
        "algorithm.optimizer.learning_rate: expected a finite number, got nan",
    ),
    (["train", "--std-lr", "inf"], [], "algorithm.std_lr: expected a finite number, got inf"),
    (["train", "--center-lr", "0"], [], "learning_rate must be a finite positive number, got 0.0"),
    (["train", "--hidden-sizes", "64,x"], [], "policy.hidden_sizes[1]: expected int, got 'x'"),
    (["train", "--hidden-sizes", "64,,64"], [], "policy.hidden_sizes: '[64,,64]' is not a valid"),
    (["train", "--hidden-sizes", "64,-1"], [], "hidden_sizes[1] must be a positive integer"),
    (["train", "pong"], [], "config 'pong' is neither a file nor a preset; presets: ant,"),
    (["train", "--algo", "sgd"], [], "unknown name 'sgd'; choose from ars, asebo, clpso, cma_es"),
    (["train", "--config", "cartpole_medium"], [], "'cartpole_medium' is neither a file nor"),
    (["train", "--seed", "one"], [], "run.seed: expected int, got 'one'"),
    (
        ["train", "algorithm.pop_sze=8"],
        [],
        "algorithm: unknown field(s) ['pop_sze'] (did you mean 'pop_size'?); PGPE takes",
    ),
    (["train", "algorithms.pop_size=8"], [], "['algorithms'] (did you mean 'algorithm'?)"),
    (["train", "--algo", "cmaes"], [], "unknown name 'cmaes' (did you mean 'cma_es'?); choose"),
    (["train", "cartpol"], [], "(did you mean 'cartpole_easy' or 'cartpole_hard'?); presets:"),
    (["train", "task.name=no_such.module:Task"], [], "task: cannot import 'no_such.module:Task'"),
    (["train", "policy.hidden_sizes=[64"], [], "policy.hidden_sizes: '[64' is not a valid value"),
    (["train", "{files}/notes.txt"], ["files"], "expected a mapping of sections"),
    (["train", "cartpole", "mnist"], [], "give one preset or file, got ['cartpole', 'mnist']"),
    (["train", "--devices", "64", *TINY], [], "--devices 64 requested, but only"),
    (
        ["train", "image_approximation", "--target", "{files}/missing.png"],
        ["files"],
        "target image '{files}/missing.png' does not exist",
    ),
    (
        ["train", "image_approximation", "--target", "{files}/notes.txt"],
        ["files"],
        "target '{files}/notes.txt' is not an image Pillow can read",
    ),
    (["train", "--run-dir", "{files}/notes.txt"], ["files"], "is a file, expected a folder"),
    (
        ["train", "--run-dir", "{files}/notes.txt/run"],
        ["files"],
        "--run-dir {files}/notes.txt/run cannot be made: Not a directory",
    ),
    (["train", "--run-dir", "{run}"], ["run"], "already holds a run; resume it"),
    (
        ["train", "mnist", "--data-dir", "{files}/empty", "--pop-size", "4"],
        ["files", "offline"],
        "MNIST files not found",
    ),
    (
        ["train", "brax", "--pop-size", "4"],
        ["no_brax"],
        "the Brax task needs the optional brax package: pip install evolax[brax]",
    ),
    (
        ["train", "cartpole", *TINY, "--tensorboard", "--run-dir", "{files}/tb"],
        ["files", "no_tensorboardx"],
        "TensorBoard logging needs the optional tensorboard package: "
        "pip install 'evolax[tensorboard]'",
    ),
    (["train", "--resume", "{files}/empty"], ["files"], "is not an evolax run folder"),
    (
        ["train", "--resume", "{run}", "--pop-size", "8"],
        ["run"],
        "--resume continues a run as configured; only run.generations, run.log_interval, ",
    ),
    (
        ["train", "task.max_steps=-1", "--max-steps", "50"],
        [],
        "task.max_steps is given twice, as task.max_steps=-1 and as --max-steps 50: give it once",
    ),
    (
        ["train", "--seed=1", "run.seed=2"],
        [],
        "run.seed is given twice, as run.seed=2 and as --seed 1: give it once",
    ),
    (["eval", "{files}/empty"], ["files"], "is not an evolax run folder (no config.json)"),
    (["eval", "{run}", "--episodes", "0"], ["run"], "argument --episodes: must be a positive"),
    (["eval", "{run}", "--checkpoint", "middle"], ["run"], "argument --checkpoint: invalid"),
    (["eval", "{corrupt}"], ["corrupt"], "no usable checkpoint in"),
    (["render", "{files}/empty"], ["files"], "is not an evolax run folder"),
    (["plot", "{files}/empty"], ["files"], "no metrics file at"),
    ([], [], "the following arguments are required: command"),
    (["fly"], [], "argument command: invalid choice: 'fly'"),
]


@pytest.mark.parametrize(("args", "needs", "message"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_a_mistake_is_one_line(request, capsys, args, needs, message):
    places = {}
    for need in needs:
        fixture = {"run": "run_dir", "corrupt": "corrupt_run"}.get(need, need)
        value = request.getfixturevalue(fixture)
        if need in ("files", "run", "corrupt"):
            places[need] = str(value)
    args = [a.format(**places) for a in args]
    try:
        code = cli.main(args)
    except SystemExit as exit:  # argparse's errors
        code = exit.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2
    assert len(lines) == 1 and "Traceback" not in err, err
    command = args[0] if args and args[0] in ("train", "eval", "render", "plot") else ""
    assert lines[0].startswith(f"evolax {command}".strip() + ": error: "), lines[0]
    assert message.format(**places) in lines[0]


def test_a_corrupt_best_falls_back_to_the_latest(run_dir, tmp_path, capsys):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    for file in (copy / "best").rglob("*"):
        if file.is_file():
            file.write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="no usable checkpoint in .*best.*using the latest"):
        assert cli.main(["eval", str(copy), "--episodes", "2"]) == 0
    assert "(latest solution, generation 2)" in capsys.readouterr().out  # not "best"


def test_a_field_given_twice_with_one_value_is_not_an_error():
    args = cli.parse_args(["train", "task.max_steps=50", "--max-steps", "50", "--hidden-sizes=8"])
    assert cli.parser.assignments(args) == [
        "task.max_steps=50",
        "policy.hidden_sizes=[8]",
        "task.max_steps=50",
    ]


def test_a_resume_checks_the_configuration_against_the_checkpoint_first(run_dir, tmp_path, capsys):
    """An edited config.json is named field by field, with both values, before any work (it
    once said `pop_chunk=32 must divide the population evaluated here (16)`); the fields a
    resume may change pass."""
    import json
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    config = json.loads((copy / "config.json").read_text())
    config["algorithm"]["pop_size"] = 8  # 4 saved
    config["policy"]["hidden_sizes"] = [4, 4]  # [4] saved
    config["run"]["test_interval"] = 1  # may change
    (copy / "config.json").write_text(json.dumps(config))
    assert cli.main(["train", "--resume", str(copy), "--generations", "3"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"evolax train: error: the configuration no longer matches the checkpoint in {copy}: "
        "algorithm.pop_size 8 here, 4 saved; policy.hidden_sizes [4, 4] here, [4] saved (a "
        "resumed run may change only run.generations, run.log_interval, run.test_interval, "
        "run.checkpoint_interval, run.keep_checkpoints, run.cpu_devices, run.loggers, host)"
    ]


def test_render_checks_that_the_task_draws_before_any_work(run_dir, tmp_path, capsys):
    """A task without a renderer is refused before any checkpoint is read or episode run (it
    took 63 s of work before): here the checkpoints hold another task's state, which reading
    them would have reported instead."""
    import json
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    config = json.loads((copy / "config.json").read_text())
    config["task"] = {"name": "gymnax:Pendulum-v1"}
    (copy / "config.json").write_text(json.dumps(config))
    assert cli.main(["render", str(copy)]) == 2
    assert capsys.readouterr().err == "evolax render: error: GymnaxTask has no renderer\n"
    assert not (copy / "episode.gif").exists()


def test_there_are_at_least_25_cases():
    assert len(CASES) >= 25


def test_debug_shows_the_traceback():
    with pytest.raises(ValueError, match="pop_size must be even"):
        cli.main(["train", "--pop-size", "7", "--debug"])


def test_the_command_prints_one_line(tmp_path):
    """The installed command, as a user runs it (the table above calls `main` in-process)."""
    env = {**os.environ, "EVOLAX_DATA_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "evolax.cli", "train", "--center-lr", "nan"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "evolax train: error: algorithm.optimizer.learning_rate: expected a finite number, got nan"
    ]
