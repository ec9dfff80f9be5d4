"""Run configurations: named presets, resolution with overrides, and building a trainer.

A configuration is a flat JSON-able dict; ``config.json`` in a run folder holds the fully
resolved one, from which ``evolax train --resume``, ``eval`` and ``render`` rebuild the run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import optax
from jax.sharding import Mesh

from evolax.algorithms import (
    ARS,
    CMAES,
    CRFMNES,
    LMMAES,
    PGPE,
    PSO,
    SNES,
    XNES,
    Algorithm,
    DifferentialEvolution,
    MAPElites,
    OpenES,
    SepCMAES,
    SimpleGA,
)
from evolax.data import MnistData, load_mnist
from evolax.optim import clipup, evojax_adam
from evolax.policies import MLP, ConvNet, Direct, Policy, Seq2Seq
from evolax.policies.mlp import OUTPUT_ACTIVATIONS
from evolax.tasks import (
    MNIST,
    CartPoleSwingUp,
    ImageApproximation,
    MultiAgentWaterWorld,
    Seq2SeqAddition,
    Task,
    WaterWorld,
)
from evolax.trainer import Trainer
from evolax.validation import check_positive

DEFAULTS: dict[str, Any] = {
    "task": "cartpole",
    "hard": False,
    "max_steps": 1000,
    "batch_size": 1024,
    "data_dir": None,
    "policy": "mlp",
    "algo": "pgpe",
    "pop_size": 64,
    "optimizer": "adam",
    "center_lr": 0.05,
    "std_lr": 0.1,
    "init_std": 0.1,
    "std_max_change": 0.2,
    "max_speed": None,
    "top_directions": None,
    "grid_shape": [32, 32],
    "hidden_sizes": [64, 64],
    "output_activation": "tanh",
    "hidden_size": 256,
    "n_digits": 3,
    "n_triangles": 50,
    "canvas_size": [200, 200],
    "target": None,
    "n_agents": 16,
    "brax_env": "ant",
    "brax_backend": "mjx",
    "n_repeats": 16,
    "pop_chunk": "auto",
    "init_scale": 1.0,
    "cpu_devices": None,
    "normalize_obs": False,
    "generations": 1000,
    "seed": 0,
    "seeds": 1,
    "log_interval": 10,
    "test_interval": 100,
    "test_episodes": 100,
    "checkpoint_interval": 100,
    "keep_checkpoints": 3,
}

_EVOJAX_CARTPOLE = {  # EvoJAX examples/train_cartpole.py defaults
    "task": "cartpole",
    "pop_size": 64,
    "n_repeats": 16,
    "hidden_sizes": [64, 64],
    "optimizer": "adam",
    "center_lr": 0.05,
    "std_lr": 0.1,
    "init_std": 0.1,
    "generations": 1000,
    "test_interval": 100,
    "test_episodes": 100,
    "log_interval": 20,
    "seed": 42,
}

_EVOJAX_SEQ2SEQ = {  # EvoJAX examples/train_seq2seq.py, with the paper's hidden size 256
    "task": "seq2seq",
    "policy": "seq2seq",
    "pop_size": 1024,
    "batch_size": 128,
    "hidden_size": 256,
    "optimizer": "adam",
    "center_lr": 0.01,
    "std_lr": 0.03,
    "init_std": 0.05,
    "n_repeats": 1,
    "generations": 50_000,
    "test_interval": 1000,
    "log_interval": 100,
    "checkpoint_interval": 1000,
    "test_episodes": 1,  # the test is the whole held-out set
    "seed": 42,
}

PRESETS: dict[str, dict[str, Any]] = {
    "cartpole_easy": {**_EVOJAX_CARTPOLE, "hard": False},
    "cartpole_hard": {**_EVOJAX_CARTPOLE, "hard": True},
    "mnist": {  # EvoJAX scripts/benchmarks/configs/PGPE/mnist.yaml
        "task": "mnist",
        "policy": "convnet",
        "pop_size": 64,
        # EvoJAX's PGPE: its Adam's bias corrections advance once per 1000 generations (a
        # falling step size), and its centre starts at zero
        "optimizer": "evojax_adam",
        "init_scale": 0.0,
        "center_lr": 0.006,
        "std_lr": 0.089,
        "init_std": 0.039,
        "batch_size": 1024,
        "n_repeats": 1,
        "generations": 2000,
        "test_interval": 500,
        "log_interval": 100,
        "checkpoint_interval": 500,
        "test_episodes": 1,  # the test is the whole 10,000-image test set
        "seed": 42,
    },
    "seq2seq": _EVOJAX_SEQ2SEQ,
    # EvoJAX's concrete-painting notebook (Tian & Ha, 2021): PGPE with ClipUp, EvoJAX's
    # defaults (lr 0.15, max speed 0.15, std lr 0.1, init std 0.1), 50 triangles on 200 x 200
    "image_approximation": {
        "task": "image_approximation",
        "policy": "direct",
        "pop_size": 256,
        "optimizer": "clipup",
        "center_lr": 0.15,
        "max_speed": 0.15,
        "std_lr": 0.1,
        "init_std": 0.1,
        "std_max_change": 0.2,
        "n_triangles": 50,
        "canvas_size": [200, 200],
        "n_repeats": 1,  # the task is deterministic
        "generations": 10_000,
        "test_interval": 500,
        "test_episodes": 1,
        "log_interval": 100,
        "checkpoint_interval": 1000,
        "seed": 0,
    },
    # EvoJAX scripts/benchmarks/configs/PGPE/waterworld.yaml (and examples/train_waterworld.py):
    # an MLP with one hidden layer of 100 and a softmax
    # over the four thrusts (here: linear logits the task samples from), 500-step episodes
    "waterworld": {
        "task": "waterworld",
        "max_steps": 500,
        "hidden_sizes": [100],
        "output_activation": "linear",
        "pop_size": 256,
        "optimizer": "adam",
        "center_lr": 0.014,
        "std_lr": 0.088,
        "init_std": 0.069,
        "n_repeats": 32,
        "generations": 1000,  # EvoJAX's benchmark config (its example script: 500)
        "test_interval": 50,
        "test_episodes": 100,
        "log_interval": 10,
        "checkpoint_interval": 50,
        "seed": 42,
    },
    # EvoJAX scripts/benchmarks/configs/PGPE/waterworld_ma.yaml: the population is the 16
    # agents of one pool
    "waterworld_ma": {
        "task": "waterworld_ma",
        "n_agents": 16,
        "max_steps": 500,
        "hidden_sizes": [100],
        "output_activation": "linear",
        "pop_size": 16,
        "optimizer": "adam",
        "center_lr": 0.011,
        "std_lr": 0.054,
        "init_std": 0.095,
        "n_repeats": 64,
        "generations": 2000,
        "test_interval": 100,
        "test_episodes": 16,
        "log_interval": 10,
        "checkpoint_interval": 100,
        "seed": 42,
    },
    # EvoJAX scripts/benchmarks/configs/PGPE/brax_ant.yaml, with the MLP its problems.py builds
    # (4 x 32, tanh); 1024 x 16 episodes of 1000 steps a generation: accelerator work
    "ant": {
        "task": "brax",
        "brax_env": "ant",
        "brax_backend": "mjx",
        "max_steps": 1000,
        "hidden_sizes": [32, 32, 32, 32],
        "pop_size": 1024,
        "optimizer": "adam",
        "center_lr": 0.01,
        "std_lr": 0.07,
        "init_std": 0.04,
        "n_repeats": 16,
        "normalize_obs": True,
        "generations": 300,
        "test_interval": 100,
        "test_episodes": 128,
        "log_interval": 20,
        "checkpoint_interval": 100,
        "seed": 42,
    },
}
"""Named configurations reproducing EvoJAX's benchmark configs (``--config NAME``)."""


DEFAULT_PRESET = {
    "cartpole": "cartpole_easy",
    "mnist": "mnist",
    "seq2seq": "seq2seq",
    "image_approximation": "image_approximation",
    "waterworld": "waterworld",
    "waterworld_ma": "waterworld_ma",
    "brax": "ant",
}
"""The preset a bare ``evolax train TASK`` starts from."""


def resolve(preset: str | None, overrides: dict[str, Any]) -> dict[str, Any]:
    """``DEFAULTS``, then the preset (by name, or the task's default), then ``overrides``.

    ``overrides`` entries that are ``None`` are ignored (flags the user did not give).
    """
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown configuration keys {unknown}; known: {sorted(DEFAULTS)}")
    if preset is None:
        preset = DEFAULT_PRESET.get(given.get("task", DEFAULTS["task"]))
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"unknown config {preset!r}; choose from {sorted(PRESETS)}")
    config = {**DEFAULTS, **PRESETS.get(preset, {}), **given}  # type: ignore[arg-type]
    if config["task"] not in TASKS:
        raise ValueError(f"unknown task {config['task']!r}; choose from {sorted(TASKS)}")
    if config["policy"] not in POLICIES:
        raise ValueError(f"unknown policy {config['policy']!r}; choose from {sorted(POLICIES)}")
    if config["algo"] not in ALGORITHMS:
        raise ValueError(f"unknown algo {config['algo']!r}; choose from {sorted(ALGORITHMS)}")
    if config["output_activation"] not in OUTPUT_ACTIVATIONS:
        raise ValueError(
            f"unknown output_activation {config['output_activation']!r}; choose from "
            f"{sorted(OUTPUT_ACTIVATIONS)}"
        )
    if config["optimizer"] not in OPTIMIZERS:
        raise ValueError(
            f"unknown optimizer {config['optimizer']!r}; choose from {sorted(OPTIMIZERS)}"
        )
    config["hidden_sizes"] = list(config["hidden_sizes"])
    config["grid_shape"] = list(config["grid_shape"])
    config["canvas_size"] = list(config["canvas_size"])
    config["preset"] = preset
    return config


def _cartpole(config: dict[str, Any], test: bool) -> Task:
    del test  # the test task is the training task: same distribution, held-out seeds
    return CartPoleSwingUp(hard=config["hard"], max_steps=config["max_steps"])


@functools.lru_cache(maxsize=2)
def _mnist_data(data_dir: str | None) -> MnistData:
    return load_mnist(data_dir)  # read once for the training and the test task


def _mnist(config: dict[str, Any], test: bool) -> Task:
    data = _mnist_data(config["data_dir"])
    return MNIST(batch_size=config["batch_size"], test=test, data=data)


def _seq2seq(config: dict[str, Any], test: bool) -> Task:
    return Seq2SeqAddition(batch_size=config["batch_size"], n_digits=config["n_digits"], test=test)


def _image_approximation(config: dict[str, Any], test: bool) -> Task:
    del test  # deterministic: the test scores the centre on the same target
    return ImageApproximation(
        target=config["target"],
        n_triangles=config["n_triangles"],
        size=tuple(config["canvas_size"]),
    )


def _waterworld(config: dict[str, Any], test: bool) -> Task:
    del test  # the test task is the training task: same distribution, held-out seeds
    return WaterWorld(max_steps=config["max_steps"])


def _waterworld_ma(config: dict[str, Any], test: bool) -> Task:
    del test
    return MultiAgentWaterWorld(n_agents=config["n_agents"], max_steps=config["max_steps"])


def _brax(config: dict[str, Any], test: bool) -> Task:
    del test  # the same environment; tests use held-out seeds
    from evolax.tasks.brax import Brax  # the optional extra evolax[brax], imported when used

    return Brax(config["brax_env"], backend=config["brax_backend"], max_steps=config["max_steps"])


TASKS: dict[str, Callable[[dict[str, Any], bool], Task]] = {
    "cartpole": _cartpole,
    "mnist": _mnist,
    "seq2seq": _seq2seq,
    "image_approximation": _image_approximation,
    "waterworld": _waterworld,
    "waterworld_ma": _waterworld_ma,
    "brax": _brax,
}

OPTIMIZERS: dict[str, Callable[[float, float | None], optax.GradientTransformation]] = {
    "adam": lambda lr, max_speed: optax.adam(lr),
    "sgd": lambda lr, max_speed: optax.sgd(lr),
    "clipup": lambda lr, max_speed: clipup(lr, max_speed=max_speed or 2 * lr),
    "evojax_adam": lambda lr, max_speed: evojax_adam(lr),
}
"""Centre optimizers by name: ``(center_lr, max_speed) -> optax transformation``; only ClipUp
reads ``max_speed`` (default twice the learning rate)."""


def _optimizer(config: dict[str, Any]) -> optax.GradientTransformation:
    check_positive("center_lr", config["center_lr"])
    if config["max_speed"] is not None:
        check_positive("max_speed", config["max_speed"])
    return OPTIMIZERS[config["optimizer"]](config["center_lr"], config["max_speed"])


class Registered(NamedTuple):
    """An algorithm the CLI can build: its class, the configuration keys it reads, a builder."""

    cls: type[Algorithm]
    keys: tuple[str, ...]
    build: Callable[[dict[str, Any]], Algorithm]


def _pgpe(config: dict[str, Any]) -> Algorithm:
    return PGPE(
        pop_size=config["pop_size"],
        optimizer=_optimizer(config),
        init_std=config["init_std"],
        std_lr=config["std_lr"],
        std_max_change=config["std_max_change"],
    )


def _open_es(config: dict[str, Any]) -> Algorithm:
    return OpenES(
        pop_size=config["pop_size"],
        optimizer=_optimizer(config),
        init_std=config["init_std"],
    )


def _map_elites(config: dict[str, Any]) -> Algorithm:
    task = TASKS[config["task"]](config, False)
    if task.descriptor_bounds is None:
        raise ValueError(
            f"map_elites needs a task with behaviour descriptors, not {config['task']!r}"
        )
    return MAPElites(
        pop_size=config["pop_size"],
        grid_shape=tuple(config["grid_shape"]),
        descriptor_low=task.descriptor_bounds[0],
        descriptor_high=task.descriptor_bounds[1],
        mutation_std=config["init_std"],
        init_std=config["init_std"],
    )


def _with_std(cls: type[Algorithm]) -> Registered:
    """Algorithms with their papers' learning rates: only the population and the initial
    std are configured."""
    return Registered(
        cls,
        ("pop_size", "init_std"),
        lambda c: cls(pop_size=c["pop_size"], init_std=c["init_std"]),  # type: ignore[call-arg]
    )


ALGORITHMS: dict[str, Registered] = {
    "pgpe": Registered(
        PGPE,
        (
            "pop_size",
            "optimizer",
            "center_lr",
            "max_speed",
            "init_std",
            "std_lr",
            "std_max_change",
        ),
        _pgpe,
    ),
    "open_es": Registered(
        OpenES, ("pop_size", "optimizer", "center_lr", "max_speed", "init_std"), _open_es
    ),
    "ars": Registered(  # the paper's update: plain steps of center_lr, noise std init_std
        ARS,
        ("pop_size", "top_directions", "center_lr", "init_std"),
        lambda c: ARS(
            pop_size=c["pop_size"],
            top_directions=c["top_directions"],
            optimizer=optax.sgd(c["center_lr"]),
            init_std=c["init_std"],
        ),
    ),
    "snes": _with_std(SNES),
    "xnes": _with_std(XNES),
    "cma_es": _with_std(CMAES),
    "sep_cma_es": _with_std(SepCMAES),
    "lm_ma_es": _with_std(LMMAES),
    "cr_fm_nes": _with_std(CRFMNES),
    "simple_ga": Registered(  # mutation std init_std; the paper's truncation and one elite
        SimpleGA,
        ("pop_size", "init_std"),
        lambda c: SimpleGA(pop_size=c["pop_size"], mutation_std=c["init_std"]),
    ),
    "de": _with_std(DifferentialEvolution),
    "pso": _with_std(PSO),
    "map_elites": Registered(MAPElites, ("pop_size", "grid_shape", "init_std"), _map_elites),
}
"""Algorithms by CLI name (``--algo NAME``; ``evolax algos`` lists them)."""


POLICIES: dict[str, Callable[[dict[str, Any]], Policy]] = {
    "mlp": lambda config: MLP(
        hidden_sizes=tuple(config["hidden_sizes"]),
        output_activation=config["output_activation"],
    ),
    "convnet": lambda config: ConvNet(),
    "direct": lambda config: Direct(),
    "seq2seq": lambda config: Seq2Seq(
        hidden_size=config["hidden_size"], output_length=config["n_digits"] + 1
    ),
}


def build_trainer(config: dict[str, Any], mesh: Mesh | str | None = "auto") -> Trainer:
    """The :class:`Trainer` a resolved configuration describes (its evaluation laid out as
    ``mesh`` and ``config["pop_chunk"]`` say; see :class:`Trainer`)."""
    return Trainer(
        algorithm=ALGORITHMS[config["algo"]].build(config),
        policy=POLICIES[config["policy"]](config),
        task=TASKS[config["task"]](config, False),
        n_repeats=config["n_repeats"],
        normalize_obs=config["normalize_obs"],
        test_task=TASKS[config["task"]](config, True),
        mesh=mesh,
        pop_chunk=config["pop_chunk"],
        init_scale=config.get("init_scale", 1.0),  # runs recorded before it existed: 1.0
    )
