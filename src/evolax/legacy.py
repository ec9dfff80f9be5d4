"""What evolax 0.1.0 recorded, read by today's evolax: its flat run configuration.

A run folder written by evolax 0.1.0 records one flat mapping (``algo``, ``pop_size``,
``center_lr``, ...) in ``config.json``. :func:`translate` gives any recorded configuration in
today's nested form (:mod:`evolax.config`), translating a flat one with :func:`from_flat`, so
that such runs still resume, eval and render.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from evolax.config import Run

# what 0.1.0 recorded beside the configuration: the host it ran on
_HOST_KEYS = ("devices", "processes")


def translate(config: dict[str, Any]) -> dict[str, Any]:
    """A recorded configuration in today's nested form: 0.1.0's flat one translated (its host
    keys kept as the ``host`` section), any other returned as it is."""
    if "algo" not in config:  # 0.1.0 named the algorithm `algo`; today's sections do not
        return config
    host = {k: config[k] for k in _HOST_KEYS if k in config}
    return {**from_flat(config), **({"host": host} if host else {})}


def from_flat(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The nested configuration of a run recorded by evolax 0.1.0 (one flat mapping with
    ``algo``, ``center_lr``, ...), as 0.1.0's builder read it."""
    c = dict(flat)
    get = c.get
    lr = get("center_lr", 0.05)
    optimizer: dict[str, Any] = {"name": get("optimizer", "adam"), "learning_rate": lr}
    if optimizer["name"] == "clipup":
        optimizer["max_speed"] = get("max_speed") or 2 * lr
    algo = get("algo", "pgpe")
    algorithm: dict[str, Any] = {"name": algo, "pop_size": get("pop_size", 64)}
    std = get("init_std", 0.1)
    if algo == "pgpe":
        algorithm |= {"optimizer": optimizer, "init_std": std, "std_lr": get("std_lr", 0.1)}
        algorithm["std_max_change"] = get("std_max_change", 0.2)
    elif algo == "open_es":
        algorithm |= {"optimizer": optimizer, "init_std": std}
    elif algo == "ars":
        algorithm |= {"optimizer": {"name": "sgd", "learning_rate": lr}, "init_std": std}
        algorithm["top_directions"] = get("top_directions")
    elif algo == "simple_ga":
        algorithm["mutation_std"] = std
    elif algo == "map_elites":
        algorithm |= {
            "grid_shape": get("grid_shape", [32, 32]),
            "mutation_std": std,
            "init_std": std,
        }
    else:
        algorithm["init_std"] = std
    policy: dict[str, Any] = {"name": get("policy", "mlp")}
    if policy["name"] == "mlp":
        policy |= {"hidden_sizes": get("hidden_sizes", [64, 64])}
        policy["output_activation"] = get("output_activation", "tanh")
    elif policy["name"] == "seq2seq":
        policy |= {"hidden_size": get("hidden_size", 256), "output_length": get("n_digits", 3) + 1}
    name = get("task", "cartpole")
    steps = get("max_steps", 1000)
    task: dict[str, Any] = {
        "cartpole": {"name": "cartpole", "hard": get("hard", False), "max_steps": steps},
        "mnist": {
            "name": "mnist",
            "batch_size": get("batch_size", 1024),
            "data": {"name": "load_mnist", "data_dir": get("data_dir")},
        },
        "seq2seq": {
            "name": "seq2seq",
            "batch_size": get("batch_size", 1024),
            "n_digits": get("n_digits", 3),
        },
        "image_approximation": {
            "name": "image_approximation",
            "target": get("target"),
            "n_triangles": get("n_triangles", 50),
            "size": get("canvas_size", [200, 200]),
        },
        "waterworld": {"name": "waterworld", "max_steps": steps},
        "waterworld_ma": {
            "name": "waterworld_ma",
            "n_agents": get("n_agents", 16),
            "max_steps": steps,
        },
        "brax": {
            "name": f"brax:{get('brax_env', 'ant')}",
            "backend": get("brax_backend", "mjx"),
            "max_steps": steps,
        },
    }[name]
    trainer = {
        "n_repeats": get("n_repeats", 16),
        "normalize_obs": get("normalize_obs", False),
        "pop_chunk": get("pop_chunk", "auto"),
        "init_scale": get("init_scale", 1.0),
    }
    run = {k: c[k] for k in (f.name for f in dataclasses.fields(Run)) if k in c}
    return {"algorithm": algorithm, "policy": policy, "task": task, "trainer": trainer, "run": run}
