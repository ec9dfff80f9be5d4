"""The trackers a run logs to besides metrics.jsonl: Weights & Biases (offline) and MLflow (a
local file store) record what metrics.jsonl records, read back through their own formats."""

import json
import struct
import sys

import numpy as np
import optax
import pytest

from evolax import MLP, PGPE, CartPoleSwingUp, Trainer, cli, train
from evolax.cli.parser import assignments
from evolax.config import Run, run_settings
from evolax.logging import open_logger, read_rows, scalars
from evolax.logging.mlflow import flatten

CONFIG = {"algorithm": {"name": "pgpe", "pop_size": 8, "optimizer": {"name": "adam"}}}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One 4-generation run logging to W&B (offline) and MLflow (a file store), in tmp."""
    tmp = tmp_path_factory.mktemp("loggers")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("WANDB_MODE", "offline")
        env.setenv("WANDB_SILENT", "true")
        env.setenv("WANDB_PROJECT", "evolax-tests")
        env.setenv("MLFLOW_TRACKING_URI", (tmp / "mlruns").as_uri())
        env.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 asks for a database otherwise
        trainer = Trainer(
            algorithm=PGPE(pop_size=8, optimizer=optax.adam(0.05)),
            policy=MLP(hidden_sizes=(4,)),
            task=CartPoleSwingUp(max_steps=20),
        )
        run_dir = tmp / "run-42"
        train(
            trainer, 4, log_interval=2, test_interval=2, n_test_episodes=2, run_dir=run_dir,
            config=CONFIG, progress=False, loggers=["wandb", "mlflow"],
        )  # fmt: skip
    return tmp, run_dir, read_rows(run_dir / "metrics.jsonl")


def expected(rows, kind: str, name: str) -> dict[int, float]:
    return {row["generation"]: row[name] for row in rows if row["kind"] == kind}


def wandb_records(path):
    """The protobuf records of a W&B run file: a 7-byte header, then LevelDB-log records
    (a 7-byte header each: CRC, length, type: full, first, middle, last) in 32 KiB blocks."""
    from wandb.proto import wandb_internal_pb2

    data, pos, chunk = path.read_bytes(), 7, b""
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a header is padding
            pos += 32768 - pos % 32768
            continue
        length, kind = struct.unpack("<HB", data[pos + 4 : pos + 7])
        if kind == 0:
            break
        chunk += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(chunk)
            chunk = b""
            yield record


def test_wandb_records_the_rows_and_the_configuration(run):
    _, run_dir, rows = run
    (path,) = (run_dir / "wandb").glob("offline-run-*/run-*.wandb")
    records = list(wandb_records(path))
    (start,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert start.display_name == "run-42" and start.project == "evolax-tests"
    config = {item.key: json.loads(item.value_json) for item in start.config.update}
    assert config["algorithm"] == CONFIG["algorithm"]
    logged: dict[str, dict[int, float]] = {}
    for record in records:
        if record.WhichOneof("record_type") == "history":
            for item in record.history.item:  # a name with "/" is a nested key of one part
                name, value = item.key or "/".join(item.nested_key), json.loads(item.value_json)
                logged.setdefault(name, {})[record.history.step.num] = value
    assert logged["train/fitness_max"] == pytest.approx(expected(rows, "train", "fitness_max"))
    assert logged["test/test_mean"] == pytest.approx(expected(rows, "test", "test_mean"))
    assert logged["profile/compile_s"] == pytest.approx(expected(rows, "chunk", "compile_s"))


def test_mlflow_records_the_rows_and_the_configuration(run, monkeypatch):
    from mlflow.tracking import MlflowClient

    tmp, _, rows = run
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient((tmp / "mlruns").as_uri())
    (found,) = client.search_runs([client.get_experiment_by_name("evolax").experiment_id])
    assert found.info.run_name == "run-42" and found.info.status == "FINISHED"
    assert found.data.params["algorithm.pop_size"] == "8"
    assert found.data.params["algorithm.optimizer.name"] == "adam"
    for kind, name, key in [
        ("train", "fitness_max", "train/fitness_max"),
        ("train", "fitness_mean", "train/fitness_mean"),
        ("test", "test_mean", "test/test_mean"),
    ]:
        history = client.get_metric_history(found.info.run_id, key)
        assert {m.step: m.value for m in history} == pytest.approx(expected(rows, kind, name))


def test_a_row_becomes_scalars_named_by_kind_and_seed():
    row = {"kind": "train", "generation": 3, "fitness_max": 2, "seed": 43, "flag": True}
    assert scalars(row) == {"train/seed43/fitness_max": 2.0}
    assert scalars({"kind": "chunk", "generation": 3, "run_s": 0.5}) == {"profile/run_s": 0.5}
    assert scalars({"kind": "other", "generation": 3, "x": 1}) == {}
    assert flatten({"a": {"b": [1, 2], "c": "x", "d": {}}}) == {
        "a.b": "[1, 2]", "a.c": "x", "a.d": "{}"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("logger", "module", "extra"),
    [
        ("wandb", "wandb", "wandb"),
        ("mlflow", "mlflow", "mlflow"),
        ("tensorboard", "tensorboardX", "tensorboard"),
    ],
)
def test_a_missing_package_names_its_extra(logger, module, extra, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    with pytest.raises(ImportError, match=rf"pip install 'evolax\[{extra}\]'"):
        open_logger(logger, tmp_path)


def test_loggers_are_chosen_in_the_configuration_and_on_the_command_line():
    args = cli.parse_args(["train", "cartpole", "--loggers", "wandb,mlflow"])
    assert "run.loggers=[wandb,mlflow]" in assignments(args)
    run = run_settings({"run": {"loggers": ["wandb", "mlflow"]}})
    assert run.loggers == ("wandb", "mlflow") and run.train_kwargs()["loggers"] == run.loggers
    with pytest.raises(ValueError, match=r"run\.loggers: unknown logger 'comet'; choose from"):
        Run(loggers=("comet",))
    with pytest.raises(ValueError, match="loggers: unknown logger 'x'"):
        train(None, 1, loggers=["x"])  # type: ignore[arg-type]
    np.testing.assert_equal(Run().loggers, ())
