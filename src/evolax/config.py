"""Run configurations: nested sections whose fields are the components' own.

A configuration is a mapping of five sections::

    algorithm: {name: pgpe, pop_size: 64, optimizer: {name: adam, learning_rate: 0.05}}
    policy:    {name: mlp, hidden_sizes: [64, 64]}
    task:      {name: cartpole, hard: false}
    trainer:   {n_repeats: 16}            # Trainer's fields
    run:       {generations: 1000, seed: 42}  # Run's fields: how the host drives training

Components are named as :mod:`evolax.schema` describes (a registered name, a class name, an
``ADAPTER:ARG`` such as ``gymnax:Pendulum-v1``, or ``package.module:Class``) and every
constructor field can be set, nested ones too. Presets are YAML files shipped in
``evolax/presets``; :func:`resolve` merges a preset or file with dotted overrides
(``algorithm.optimizer.learning_rate=0.01``), and :func:`complete` fills in every default, as
``config.json`` in a run folder records it. Runs recorded by evolax 0.1.0 (one flat mapping)
are translated by :mod:`evolax.legacy`.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import optax
import yaml
from jax.sharding import Mesh

from evolax import algorithms, policies, schema, tasks
from evolax.algorithms import Algorithm
from evolax.data import MnistData, load_mnist
from evolax.logging import check_loggers
from evolax.optim import clipup, evojax_adam
from evolax.placement import trainer_class
from evolax.policies import Policy
from evolax.tasks import ParamSet, Task
from evolax.trainer import Trainer
from evolax.validation import check_positive, did_you_mean

SECTIONS = ("algorithm", "policy", "task", "trainer", "run")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Run:
    """How the host drives training (:func:`evolax.train`'s arguments).

    Args:
        generations: the generation to train up to.
        seed: random seed; the first of ``seeds`` consecutive seeds.
        seeds: seeds trained as one vmapped program (``seed``, ``seed + 1``, ...).
        log_interval: generations per compiled chunk (a metrics row each).
        test_interval: generations between tests of the solution.
        test_episodes: held-out episodes per test.
        checkpoint_interval: generations between checkpoints.
        keep_checkpoints: recent checkpoints kept (besides the best).
        cpu_devices: on a CPU host, XLA devices to create (``None``: one per core).
        loggers: trackers the metrics go to besides ``metrics.jsonl``: ``tensorboard``,
            ``wandb`` (Weights & Biases), ``mlflow``, each an optional extra
            (:func:`evolax.logging.open_logger`).
    """

    generations: int = 1000
    seed: int = 0
    seeds: int = 1
    log_interval: int = 10
    test_interval: int = 100
    test_episodes: int = 100
    checkpoint_interval: int = 100
    keep_checkpoints: int = 3
    cpu_devices: int | None = None
    loggers: tuple[str, ...] = ()

    def __post_init__(self):
        check_loggers(self.loggers, "run.loggers")
        object.__setattr__(self, "loggers", tuple(self.loggers))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name not in ("seed", "loggers") and value is not None and value <= 0:
                raise ValueError(f"{f.name} must be a positive integer, got {value}")

    @property
    def seed_list(self) -> int | list[int]:
        """The run's seed, or its ``seeds`` consecutive seeds."""
        return self.seed if self.seeds == 1 else list(range(self.seed, self.seed + self.seeds))

    def train_kwargs(self) -> dict[str, Any]:
        """:func:`evolax.train`'s keyword arguments these settings give."""
        return {
            "seed": self.seed_list,
            "log_interval": self.log_interval,
            "test_interval": self.test_interval,
            "n_test_episodes": self.test_episodes,
            "checkpoint_interval": self.checkpoint_interval,
            "keep_checkpoints": self.keep_checkpoints,
            "loggers": self.loggers,
        }


def _positive_learning_rate(make: Callable[..., Any]) -> Callable[..., Any]:
    """``make`` (an optimizer constructor) refusing a learning rate that is not positive."""

    @functools.wraps(make)
    def checked(*args: Any, **kwargs: Any) -> Any:
        rate = inspect.signature(make).bind(*args, **kwargs).arguments.get("learning_rate")
        if isinstance(rate, int | float):
            check_positive("learning_rate", rate)
        return make(*args, **kwargs)

    return checked


OPTIMIZERS: dict[str, Any] = {
    name: _positive_learning_rate(make)
    for name, make in {
        "adam": optax.adam,
        "adamw": optax.adamw,
        "sgd": optax.sgd,
        "rmsprop": optax.rmsprop,
        "lion": optax.lion,
        "clipup": clipup,
        "evojax_adam": evojax_adam,
    }.items()
}
"""Optimizers by short name (any other by import path, ``optax:nadam``)."""

REGISTRIES: schema.Registries = {
    Algorithm: algorithms.REGISTRY,
    Policy: policies.REGISTRY,
    Task: tasks.REGISTRY,
    optax.GradientTransformation: OPTIMIZERS,
    # read once for the training and the test task
    MnistData: {"load_mnist": functools.lru_cache(maxsize=2)(load_mnist)},
    Callable: algorithms.SHAPINGS,
}
"""The names of each kind of component (see :mod:`evolax.schema`)."""

_KINDS = {"algorithm": Algorithm, "policy": Policy, "task": Task}
_BUILT_BY_TRAINER = ("algorithm", "policy", "task", "test_task")
PRESET_DIR = resources.files("evolax") / "presets"


def presets() -> list[str]:
    """The names of the shipped presets (``evolax/presets/NAME.yaml``)."""
    return sorted(
        p.name.removesuffix(".yaml") for p in PRESET_DIR.iterdir() if p.name.endswith(".yaml")
    )


def load(source: str | os.PathLike) -> dict[str, Any]:
    """A configuration from a preset name or a YAML file."""
    path = Path(source)
    if isinstance(source, str) and not path.suffix and source in presets():
        text = (PRESET_DIR / f"{source}.yaml").read_text()
    elif path.is_file():
        text = path.read_text()
    else:
        raise ValueError(
            f"config {str(source)!r} is neither a file nor a preset"
            f"{did_you_mean(str(source), presets())}; presets: "
            f"{', '.join(presets())}"
        )
    try:
        config = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        raise ValueError(
            f"config {source}: not valid YAML ({' '.join(str(error).split())})"
        ) from None
    if not isinstance(config, dict):
        raise ValueError(f"config {source}: expected a mapping of sections {list(SECTIONS)}")
    return config


def override(config: Mapping[str, Any], assignment: str) -> dict[str, Any]:
    """``config`` with one dotted assignment applied: ``algorithm.pop_size=32``. The value is
    read as YAML (``[64, 64]``, ``true``, ``null``)."""
    key, equals, text = assignment.partition("=")
    path = key.strip().split(".")
    if not equals or not all(path):
        raise ValueError(f"override {assignment!r}: expected SECTION.FIELD=VALUE")
    try:
        value = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError:
        raise ValueError(f"{key.strip()}: {text!r} is not a valid value") from None
    if isinstance(value, str) and value.strip().lower() in ("nan", "inf", "-inf", "+inf"):
        value = float(value)  # refused where a finite number is expected
    return set_path(config, path, value)


def set_path(config: Mapping[str, Any], path: Sequence[str], value: Any) -> dict[str, Any]:
    """``config`` with ``value`` at ``path``."""
    result = copy.deepcopy(dict(config))
    node = result
    for i, part in enumerate(path[:-1]):
        child = node.get(part)
        if isinstance(child, str):  # a bare component name: now a mapping with fields
            child = {"name": child}
        if not isinstance(child, dict):
            if child is not None:
                raise ValueError(f"{'.'.join(path[: i + 1])} is {child!r}, not a section")
            child = {}
        node[part] = child
        node = child
    node[path[-1]] = value
    return result


def resolve(
    source: str | os.PathLike | Mapping[str, Any] | None, overrides: Sequence[str] = ()
) -> dict[str, Any]:
    """The complete configuration of a preset name, a file or a mapping, after ``overrides``
    (dotted assignments): every section present and every default a file can hold filled in.
    A component renamed by an override starts from its own defaults, but for the
    :data:`CARRIED` fields and those that other overrides set (before the rename or after:
    the command line puts ``--algo`` after ``algorithm.FIELD=VALUE``)."""
    config = dict(source) if isinstance(source, Mapping) else load(source or "cartpole_easy")
    paths = [a.partition("=")[0].strip().split(".") for a in overrides]
    renamed = []
    for i, (assignment, path) in enumerate(zip(overrides, paths, strict=True)):
        if path[-1] == "name":
            at = path[:-1]
            given = {
                p[len(at)]
                for j, p in enumerate(paths)
                if j != i and p[: len(at)] == at and len(p) > len(at)
            }
            renamed.append((at, set(_at(config, at)) - set(CARRIED) - given))
        config = override(config, assignment)
    for path, stale in renamed:
        _reset(config, path, stale)
    return complete(config)


CARRIED = ("pop_size", "init_std", "learning_rate")
"""Fields that describe the search rather than one component: when an override names a
different component, these carry over (where the new one takes them) and the rest reset."""


def _at(config: Mapping[str, Any], path: Sequence[str]) -> dict[str, Any]:
    node: Any = config
    for part in path:
        node = node.get(part) if isinstance(node, Mapping) else None
    return dict(node) if isinstance(node, Mapping) else {}


def _reset(config: dict[str, Any], path: Sequence[str], stale: set[str]) -> None:
    """Drop from the component at ``path`` the ``stale`` fields of the one it replaced, and
    any field it does not take."""
    registry: Mapping[str, Any] = REGISTRIES[_KINDS[path[0]]] if path[0] in _KINDS else {}
    node: Any = config
    for i, part in enumerate(path):
        node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict) or "name" not in node:
            return
        target, _ = schema.find(node["name"], registry, ".".join(path[: i + 1]))
        if i + 1 < len(path):
            annotation = {f.name: f.annotation for f in schema.fields(target)}.get(path[i + 1])
            registry = schema.kind_registry(annotation, REGISTRIES)
    known = {f.name for f in schema.fields(target)}
    for key in set(node) - {"name"}:
        if key in stale or key not in known:
            del node[key]


def complete(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with each section's defaults filled in (checked as :func:`build` will)."""
    unknown = sorted(set(config) - set(SECTIONS) - {"host"})
    if unknown:
        raise ValueError(
            f"unknown section(s) {unknown}{did_you_mean(unknown, SECTIONS)}; a configuration "
            f"has {list(SECTIONS)}"
        )
    result: dict[str, Any] = {}
    for section, kind in _KINDS.items():
        if section not in config:
            raise ValueError(f"the configuration has no {section} section (its name is required)")
        result[section] = schema.complete(config[section], REGISTRIES[kind], REGISTRIES, section)
    for section, cls in (("trainer", Trainer), ("run", Run)):
        given = dict(config.get(section) or {})
        taken = sorted(set(given) & set(_BUILT_BY_TRAINER))
        if taken:
            raise ValueError(f"trainer: {taken} come from their own sections")
        filled = schema.complete(
            {"name": cls.__name__, **given}, {cls.__name__: cls}, REGISTRIES, section
        )
        result[section] = {
            k: v for k, v in filled.items() if k != "name" and k not in _BUILT_BY_TRAINER
        }
    if "host" in config:  # where a run ran (recorded, not read back)
        result["host"] = dict(config["host"])
    return result


def _build(section: str, config: Mapping[str, Any], **given: Any) -> Any:
    return schema.build(config[section], REGISTRIES[_KINDS[section]], REGISTRIES, section, **given)


def build_task(config: Mapping[str, Any], test: bool = False) -> Task:
    """The configuration's task; ``test`` sets its ``test`` field where it has one (MNIST's
    held-out images), else the test task is the training task."""
    return _build("task", config, **({"test": True} if test and _has_test_split(config) else {}))


def _has_test_split(config: Mapping[str, Any]) -> bool:
    target, _ = schema.find(_name(config["task"]), tasks.REGISTRY, "task")
    return any(f.name == "test" for f in schema.fields(target))


def build_trainer(config: Mapping[str, Any], mesh: Mesh | str | None = "auto") -> Trainer:
    """The :class:`Trainer` a configuration describes (its evaluation laid out as ``mesh``
    and the trainer section say)."""
    task = build_task(config)
    test_task = build_task(config, test=True) if _has_test_split(config) else None
    algorithm_target, _ = schema.find(_name(config["algorithm"]), algorithms.REGISTRY, "algorithm")
    names = {f.name for f in schema.fields(algorithm_target)}
    bounds = getattr(task, "descriptor_bounds", None)
    given: dict[str, Any] = {}
    if {"descriptor_low", "descriptor_high"} <= names and bounds is not None:
        given = {"descriptor_low": bounds[0], "descriptor_high": bounds[1]}  # MAP-Elites
    task_set = getattr(task, "distribution", None)
    if "task_params" in names and isinstance(task_set, ParamSet):
        given["task_params"] = np.asarray(task_set.vectors())  # multi-task MAP-Elites
    algorithm = _build(
        "algorithm", config, **{k: v for k, v in given.items() if k not in config["algorithm"]}
    )
    trainer = dict(config.get("trainer", {}))
    placed = {} if mesh == "auto" else {"mesh": mesh}
    if placed:
        trainer.pop("mesh", None)
    return schema.build(
        {"name": "Trainer", **trainer},
        {"Trainer": trainer_class(task)},  # a task stepped on the host: HostTrainer
        REGISTRIES,
        "trainer",
        algorithm=algorithm,
        policy=_build("policy", config),
        task=task,
        test_task=test_task,
        **placed,
    )


def run_settings(config: Mapping[str, Any]) -> Run:
    """The run section as a checked :class:`Run`."""
    return schema.build({"name": "Run", **config.get("run", {})}, {"Run": Run}, REGISTRIES, "run")


def _name(spec: Mapping[str, Any] | str) -> str:
    return spec if isinstance(spec, str) else spec["name"]


def dump(config: Mapping[str, Any]) -> str:
    """``config`` as YAML, sections in their order."""
    ordered = {s: config[s] for s in SECTIONS if s in config}
    ordered.update({k: v for k, v in config.items() if k not in ordered})
    return yaml.dump(ordered, Dumper=_Dumper, sort_keys=False)


class _Dumper(yaml.SafeDumper):
    """YAML with lists of numbers or strings on one line: ``hidden_sizes: [64, 64]``."""

    def represent_list(self, data):
        flat = all(not isinstance(v, dict | list) for v in data)
        return self.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)


_Dumper.add_representer(list, _Dumper.represent_list)
