"""Configurations come from the components themselves: every field of every exported component
can be set from a file and from the command line, presets are files, overrides compose, and
runs recorded by evolax 0.1.0 (a flat mapping) still resume and evaluate."""

import dataclasses
import inspect
import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml

from evolax import algorithms, cli, optim, policies, schema, tasks
from evolax.algorithms import CMAES, Algorithm
from evolax.config import (
    REGISTRIES,
    Run,
    build_task,
    build_trainer,
    dump,
    presets,
    resolve,
)
from evolax.policies import Policy
from evolax.runs import load_run
from evolax.tasks import Task
from evolax.trainer import Trainer
from helpers import state_leaves

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "configuration.md"
EXAMPLES = ROOT / "examples"


def exported() -> list[tuple[str, str, type]]:
    """``(section, short name or "", class)`` of every exported concrete component."""
    rows = []
    for section, module, base in (
        ("algorithm", algorithms, Algorithm),
        ("policy", policies, Policy),
        ("task", tasks, Task),
    ):
        short = {cls: name for name, cls in module.REGISTRY.items()}
        for name in module.__all__:
            cls = getattr(module, name)
            if isinstance(cls, type) and issubclass(cls, base) and not inspect.isabstract(cls):
                rows.append((section, short.get(cls, ""), cls))
    return [*rows, ("trainer", "", Trainer), ("run", "", Run)]


def reachability_rows() -> list[str]:
    rows = []
    for section, short, cls in exported():
        fields = schema.fields(cls)
        if section == "trainer":  # the components come from their own sections
            fields = [
                f for f in fields if f.name not in ("algorithm", "policy", "task", "test_task")
            ]
        every = all(schema.reachable(f.annotation, REGISTRIES) for f in fields)
        name = f"`{short}`" if short else f"`{cls.__module__}:{cls.__qualname__}`"
        yes = "yes" if every else "**no**"
        rows.append(f"| {section} | `{cls.__name__}` | {name} | {len(fields)} | {yes} | {yes} |")
    return rows


def test_the_docs_table_of_reachable_fields_is_the_code_s():
    row = r"^\| (?:algorithm|policy|task|trainer|run) \| `\w+` \| `[^`]+` \| \d+ \|.*$"
    table = re.findall(row, PAGE.read_text(), re.M)
    assert table == reachability_rows()
    assert all(row.endswith("| yes | yes |") for row in table)


@pytest.mark.parametrize("section, short, cls", exported(), ids=lambda v: getattr(v, "__name__", v))
def test_every_field_with_a_default_takes_it_from_the_command_line(section, short, cls):
    """Each field whose default a file can hold is set to that value by a dotted override of
    the component, named as a configuration names it (so each field's type is understood)."""
    name = short or f"{cls.__module__}:{cls.__qualname__}"
    overrides = [] if section in ("trainer", "run") else [f"{section}.name={name}"]
    for f in schema.fields(cls):
        value = schema.plain(f.default, REGISTRIES)
        if f.default is schema.REQUIRED or f.factory or value is NotImplemented:
            continue
        if f.name == "test_task":  # the trainer's components come from their own sections
            continue
        text = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
        overrides.append(f"{section}.{f.name}={text}")
    required = {
        "MAPElites": ["algorithm.descriptor_low=[0]", "algorithm.descriptor_high=[1]"],
        "CVTMAPElites": ["algorithm.descriptor_low=[0]", "algorithm.descriptor_high=[1]"],
        "CMAMAE": ["algorithm.descriptor_low=[0]", "algorithm.descriptor_high=[1]"],
        "MOEAD": ["algorithm.n_objectives=2"],
        "NSGA2": ["algorithm.n_objectives=2"],
        "NSGA3": ["algorithm.n_objectives=2"],
        "SMSEMOA": ["algorithm.n_objectives=2"],
    }
    config = resolve("cartpole_easy", overrides + required.get(cls.__name__, []))
    for assignment in overrides:
        key, _, text = assignment.partition("=")
        assert config[section][key.split(".")[1]] == yaml.safe_load(text), assignment


def test_a_renamed_component_keeps_the_search_settings_and_resets_the_rest():
    config = resolve("cartpole_easy", ["algorithm.name=cma_es"])
    assert config["algorithm"]["pop_size"] == 64 and config["algorithm"]["init_std"] == 0.1
    assert "optimizer" not in config["algorithm"] and "std_lr" not in config["algorithm"]
    clipup = resolve("cartpole_easy", ["algorithm.optimizer.name=clipup"])["algorithm"]
    assert clipup["optimizer"]["learning_rate"] == 0.05  # carried
    (max_speed,) = [f.default for f in schema.fields(optim.clipup) if f.name == "max_speed"]
    assert clipup["optimizer"]["max_speed"] == max_speed  # ClipUp's default
    assert "b1" not in clipup["optimizer"]  # Adam's fields are gone
    later = resolve("cartpole_easy", ["algorithm.name=open_es", "algorithm.optimizer.name=sgd"])
    assert later["algorithm"]["optimizer"] == {"name": "sgd", "learning_rate": 0.05} | {
        k: v
        for k, v in later["algorithm"]["optimizer"].items()
        if k not in ("name", "learning_rate")
    }
    # a field set before the rename survives it too (`--algo` comes after dotted overrides)
    before = resolve("arm", ["algorithm.n_emitters=4", "algorithm.name=cma_mae"])["algorithm"]
    assert before["n_emitters"] == 4 and "mutation_std" not in before


def test_the_printed_configuration_rebuilds_the_same_run(capsys):
    assert (
        cli.main(
            ["train", "cartpole_hard", "--pop-size", "8", "task.pole_length=0.9", "--print-config"]
        )
        == 0
    )
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed == resolve(printed)
    assert printed["task"]["pole_length"] == 0.9 and printed["task"]["hard"] is True
    assert printed["algorithm"]["optimizer"]["b1"] == 0.9  # defaults of nested components too


def test_presets_are_files_that_build():
    assert {"cartpole_easy", "cartpole_hard", "mnist", "seq2seq", "waterworld", "ant"} <= set(
        presets()
    )
    for name in ("cartpole_easy", "waterworld_ma", "seq2seq"):
        config = resolve(name)
        assert resolve(yaml.safe_load(dump(config))) == config  # the dump is a file that loads


def test_every_preset_builds_its_trainer():
    """Each preset file builds (those of optional packages where they are installed; mnist
    needs its data and ant takes Brax's 5 s: both are built by their own tests, as are the
    JAX environment families' presets, whose packages take seconds to import, by
    tests/tasks/test_env_presets.py)."""
    families = {"navix_empty", "minigrid_empty", "jumanji_game2048", "craftax_classic"}
    families |= {"mpe_spread", "xland_mt_map_elites", "kinetix_levels"}
    for name in sorted(set(presets()) - {"mnist", "ant"} - families):
        try:
            build_trainer(resolve(name))
        except ImportError:  # an optional extra (playground) that is not installed
            continue


def test_describe_lists_fields_from_the_code(capsys):
    assert cli.main(["describe", "cma_es"]) == 0
    out = capsys.readouterr().out
    assert "evolax.algorithms.cma.cma_es:CMAES" in out
    for f in schema.fields(CMAES):
        assert f"  {f.name}: " in out
    assert "generations between eigendecompositions" in out  # the docstring's Args


def test_the_example_files_configure_what_they_say(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))  # as `evolax train FILE` does
    gymnax = resolve(EXAMPLES / "gymnax_cma_es.yaml")
    defaults = {f.name: f.default for f in schema.fields(CMAES) if f.name != "pop_size"}
    changed = [k for k, v in defaults.items() if gymnax["algorithm"][k] != v]
    assert len(changed) == 3 and gymnax["task"]["name"] == "gymnax:Pendulum-v1"
    assert ":" in gymnax["policy"]["name"]  # the user's policy, by import path
    reverse = build_task(resolve(EXAMPLES / "lm_reverse.yaml"), test=True)
    assert reverse.obs_shape == (64, 5) and type(reverse).__module__ == "lm_reverse"
    words, answers = reverse.prompts(jax.random.key(0), 3)  # the user's functions
    assert bytes(words[0].tolist()).endswith(b">") and (answers == words[:, 3::-1]).all()
    assert float(reverse.reward(jnp.array([100, 99, 98, 97, 0]), jnp.array([100, 99, 1, 2]))) == 0.5
    pole = resolve(EXAMPLES / "cartpole_long_pole.yaml")["task"]
    assert pole["pole_length"] == pytest.approx(
        1.5 * resolve("cartpole_easy")["task"]["pole_length"]
    )


TINY = ["run.log_interval=1", "run.test_episodes=2", "run.checkpoint_interval=2", "--no-progress"]


ADAPTER_RUNS = {
    "gymnax_example": [str(EXAMPLES / "gymnax_cma_es.yaml"), "task.max_steps=20"],
    "gymnax": ["cartpole_easy", "task.name=gymnax:CartPole-v1", "task.max_steps=20"],
    "evojax": [
        "cartpole_easy",
        "task={name: evojax, task: {name: 'evojax.task.cartpole:CartPoleSwingUp'}}",
        "policy.hidden_sizes=[4]",
    ],
    "user": ["cartpole_easy", "task.name=my_task:ShortCartPole", "task.max_steps=10"],
    "lm_example": [str(EXAMPLES / "lm_reverse.yaml"), "task.batch_size=2", "run.test_interval=2"],
}
USER_TASK = '''from evolax.tasks import CartPoleSwingUp


class ShortCartPole(CartPoleSwingUp):
    """Cart-pole with short episodes.

    Args:
        max_steps: episode length.
    """

    def __init__(self, max_steps: int = 20):
        super().__init__(max_steps=max_steps)
'''


@pytest.mark.parametrize(
    "name",
    [n if n == "gymnax_example" else pytest.param(n, marks=pytest.mark.slow) for n in ADAPTER_RUNS],
)
def test_each_task_adapter_trains_through_the_command_line(name, tmp_path, monkeypatch):
    """gymnax (the example file: CMA-ES and the user's policy by import path) in the default
    run; a gymnax name, an EvoJAX task and a user's own Task class in `nox -s slow`: each two
    generations through `evolax train`, then `evolax eval` rebuilds the run."""
    (tmp_path / "my_task.py").write_text(USER_TASK)
    monkeypatch.syspath_prepend(str(tmp_path))
    run_dir = tmp_path / name
    small = ["run.generations=2", "algorithm.pop_size=8", "trainer.n_repeats=1"]
    assert cli.main(["train", *ADAPTER_RUNS[name], *small, *TINY, "--run-dir", str(run_dir)]) == 0
    config, _, state, _ = load_run(run_dir)
    assert int(state.generation) == 2 and config["run"]["generations"] == 2
    assert cli.main(["eval", str(run_dir), "--episodes", "2"]) == 0
    if name == "gymnax_example":
        recorded = json.loads((run_dir / "config.json").read_text())
        assert recorded["policy"]["name"] == "linear_policy:LinearPolicy"
        assert recorded["host"]["import_paths"] == [str(EXAMPLES)]


def test_a_run_recorded_by_0_1_0_resumes_as_it_would_have_gone(tmp_path):
    """A 0.1.0 run folder (its config.json one flat mapping) resumes to the state a straight
    run reaches, and eval reads it."""
    flat = {  # what 0.1.0 recorded for `evolax train cartpole --pop-size 8 ...`
        "task": "cartpole", "hard": False, "max_steps": 30, "batch_size": 1024, "data_dir": None,
        "policy": "mlp", "algo": "pgpe", "pop_size": 8, "optimizer": "adam", "center_lr": 0.05,
        "std_lr": 0.1, "init_std": 0.1, "std_max_change": 0.2, "max_speed": None,
        "top_directions": None, "grid_shape": [32, 32], "hidden_sizes": [8],
        "output_activation": "tanh", "hidden_size": 256, "n_digits": 3, "n_triangles": 50,
        "canvas_size": [200, 200], "target": None, "n_agents": 16, "brax_env": "ant",
        "brax_backend": "mjx", "n_repeats": 2, "pop_chunk": "auto", "init_scale": 1.0,
        "cpu_devices": None, "normalize_obs": False, "generations": 2, "seed": 3, "seeds": 1,
        "log_interval": 1, "test_interval": 2, "test_episodes": 2, "checkpoint_interval": 2,
        "keep_checkpoints": 3, "preset": "cartpole_easy", "devices": 2, "processes": 1,
    }  # fmt: skip
    nested = [
        "algorithm.pop_size=8", "policy.hidden_sizes=[8]", "task.max_steps=30",
        "trainer.n_repeats=2", "run.seed=3", "run.log_interval=1", "run.test_interval=2",
        "run.test_episodes=2", "run.checkpoint_interval=2", "--no-progress",
    ]  # fmt: skip
    old, straight = tmp_path / "old", tmp_path / "straight"
    assert cli.main(["train", *nested, "run.generations=2", "--run-dir", str(old)]) == 0
    (old / "config.json").write_text(json.dumps(flat))
    assert cli.main(["eval", str(old), "--episodes", "2"]) == 0
    assert cli.main(["train", "--resume", str(old), "--generations", "4", "--no-progress"]) == 0
    assert cli.main(["train", *nested, "run.generations=4", "--run-dir", str(straight)]) == 0
    (_, _, resumed, _), (_, _, reference, _) = load_run(old), load_run(straight)
    for x, y in zip(state_leaves(resumed), state_leaves(reference), strict=True):
        np.testing.assert_array_equal(x, y)
    assert json.loads((old / "config.json").read_text())["algorithm"]["name"] == "pgpe"


def test_a_field_can_be_vmapped_from_a_configuration():
    """A task's physics is a field a configuration sets and vmap batches: the trainer built
    from a configuration runs with its pole length traced."""
    config = resolve("cartpole_easy", ["algorithm.pop_size=4", "trainer.n_repeats=1",
                                       "task.max_steps=20", "policy.hidden_sizes=[4]"])  # fmt: skip
    trainer = build_trainer(config, mesh=None)

    def fitness(length):
        task = dataclasses.replace(trainer.task, pole_length=length)
        state = trainer.init(jax.random.key(0))
        return dataclasses.replace(trainer, task=task).run(state, 1)[1]["fitness_mean"]

    batched = jax.vmap(fitness)(jax.numpy.array([0.6, 0.9]))
    assert batched.shape == (2, 1) and not np.allclose(batched[0], batched[1])
    np.testing.assert_allclose(batched[1], fitness(0.9), rtol=1e-5)


def test_every_shorthand_flag_sets_a_field_some_component_has():
    """``--FLAG`` stands for ``PATH=VALUE``: the path's field (and, nested, its sub-field) is a
    field of at least one exported component of that section (or of a registered optimizer)."""
    from evolax.config import OPTIMIZERS
    from evolax.data import load_mnist

    names: dict[str, set[str]] = {}
    for section, _, cls in exported():
        names.setdefault(section, set()).update(f.name for f in schema.fields(cls))
    nested = {
        "optimizer": {f.name for make in OPTIMIZERS.values() for f in schema.fields(make)},
        "data": {f.name for f in schema.fields(load_mnist)},
    }
    for flag, (path, _) in cli.SHORTHANDS.items():
        section, field, *sub = path.split(".")
        assert field in names[section] | {"name"}, (flag, path)
        if sub:
            assert sub[0] in nested[field] | {"name"}, (flag, path)
