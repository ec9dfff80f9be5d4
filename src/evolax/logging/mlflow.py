"""MLflow runs (the ``mlflow`` extra: mlflow-skinny, MLflow's tracking client)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any

from evolax.logging.sink import PACKAGES, Row, needs, scalars


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested mappings as dotted names and their values as text (MLflow's parameters):
    ``{"algorithm": {"pop_size": 64}}`` -> ``{"algorithm.pop_size": "64"}``."""
    flat: dict[str, str] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value if isinstance(value, str) else json.dumps(value)
    return flat


class MlflowSink:
    """An MLflow run: the rows' :func:`~evolax.logging.scalars` at their generation as the
    step, ``config`` flattened to parameters (``algorithm.pop_size``, ...).

    Args:
        name: the run's name (``None``: MLflow's own).
        config: the configuration to record.
        tracking_uri: the tracking server or store (``None``: ``$MLFLOW_TRACKING_URI``, else
            MLflow's default).
        experiment: the experiment, made if new (``None``: ``$MLFLOW_EXPERIMENT_NAME``, else
            ``evolax``).
    """

    def __init__(
        self,
        name: str | None = None,
        config: Mapping[str, Any] | None = None,
        tracking_uri: str | None = None,
        experiment: str | None = None,
    ):
        mlflow = needs(*PACKAGES["mlflow"])
        self._entities = mlflow.entities
        self._client = mlflow.tracking.MlflowClient(tracking_uri)
        experiment = experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or "evolax"
        found = self._client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found else self._client.create_experiment(experiment)
        self.run_id: str = self._client.create_run(experiment_id, run_name=name).info.run_id
        params = [self._entities.Param(k, v) for k, v in flatten(config or {}).items()]
        for start in range(0, len(params), 100):  # MLflow takes 100 parameters a batch
            self._client.log_batch(self.run_id, params=params[start : start + 100])

    def write(self, row: Row) -> None:
        now, step = int(time.time() * 1000), int(row["generation"])
        metrics = [self._entities.Metric(k, v, now, step) for k, v in scalars(row).items()]
        if metrics:
            self._client.log_batch(self.run_id, metrics=metrics)

    def close(self) -> None:
        self._client.set_terminated(self.run_id)
