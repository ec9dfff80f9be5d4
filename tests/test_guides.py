"""The user guides (docs/guides/*.md) say what is true.

Each page's ```python blocks run as written, in order, in one namespace per page (in a
temporary working folder, so run folders land there); each test then checks what the page
claims against a reference of its own: an analytic score, a run without vmap, a numpy
transcription, the package metadata. The ```bash blocks are not run, but every ``evolax``
command in them must parse with the command's own argument parser.
"""

import dataclasses
import importlib.metadata
import json
import math
import re
import shlex
import tomllib
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import evolax.algorithms as algorithms
import evolax.tasks as tasks
from evolax import cli
from evolax.config import presets
from evolax.problems import sphere, to_fitness
from evolax.seeded import densify

ROOT = Path(__file__).resolve().parents[1]
GUIDES = ROOT / "docs" / "guides"
PAGES = sorted(GUIDES.glob("*.md"))


def code_blocks(path: Path, language: str) -> list[tuple[int, str]]:
    """``(first line number, source)`` of each fenced block in ``language``."""
    text = path.read_text()
    return [
        (text.count("\n", 0, match.start(1)) + 1, match.group(1))
        for match in re.finditer(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)
    ]


def run_page(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Execute the page's python blocks in order in one namespace; tracebacks point at the
    page's own line numbers."""
    path = GUIDES / name
    blocks = code_blocks(path, "python")
    assert blocks, f"{name} has no python blocks"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"guide_{path.stem}"}
    for line, source in blocks:
        exec(compile("\n" * (line - 1) + source, str(path), "exec"), namespace)
    return namespace


def test_the_guides_are_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in PAGES:
        assert f"guides/{page.name}" in nav, page.name


def evolax_commands(path: Path) -> list[list[str]]:
    """The arguments of every ``evolax ...`` line in the page's bash blocks."""
    commands = []
    for _, source in code_blocks(path, "bash"):
        for line in source.replace("\\\n", " ").splitlines():  # continued lines joined
            words = shlex.split(line, comments=True)
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value prefixes
                words = words[1:]
            if words and words[0] == "evolax":
                commands.append(words[1:])
    return commands


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_evolax_commands_parse(page, capsys):
    for args in evolax_commands(page):
        try:
            cli.parse_args(args)
        except SystemExit as exit:  # --version and --help exit 0; bad arguments exit 2
            assert exit.code == 0, f"{page.name}: `evolax {' '.join(args)}` does not parse"
    capsys.readouterr()


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
STAMPED = re.compile(r"runs/([\w.-]+?)-\d{8}-\d{6}")  # a run folder named as the CLI names it
TINY = [
    "--pop-size", "4", "--n-repeats", "1", "--max-steps", "5", "--hidden-sizes", "4",
    "--generations", "2", "--test-episodes", "1", "--log-interval", "1000",
    "--test-interval", "1000", "--checkpoint-interval", "1000", "--no-progress",
]  # fmt: skip


def test_the_run_folders_the_docs_name_are_the_ones_the_cli_writes(tmp_path, monkeypatch):
    """Every dated run folder the docs name is the one `evolax train cartpole` writes (up to
    its date and time; the quickstart once named `runs/cartpole-pgpe-...`, which the CLI never
    writes, so its commands failed when copied), and the quickstart's commands on it run as
    written, on the folder a run of its command (made tiny) wrote."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["train", "cartpole", *TINY]) == 0
    (made,) = (tmp_path / "runs").iterdir()
    written = STAMPED.fullmatch(f"runs/{made.name}")
    assert written, made.name
    named = {(page.name, m.group(1)) for page in DOCS for m in STAMPED.finditer(page.read_text())}
    assert named and {prefix for _, prefix in named} == {written.group(1)}, named
    ran = []
    for args in evolax_commands(GUIDES / "quickstart.md"):
        if any(STAMPED.fullmatch(a) for a in args):
            args = [str(made) if STAMPED.fullmatch(a) else a for a in args]
            assert cli.main([*args, "--no-progress"] if args[0] == "train" else args) == 0
            ran.append(args[0])
    assert sorted(ran) == ["eval", "plot", "render", "train"]
    assert json.loads((made / "summary.json").read_text())["generations"] == 2000  # resumed
    assert (made / "episode.gif").is_file() and (made / "learning_curves.png").is_file()


def test_the_defaults_the_docs_quote_are_the_codes():
    """`FIELD` (default N) of a run setting, and `PRESET` sets `FIELD` to N, wherever the
    docs say it, against `evolax.config.Run` and the preset files (runs.md said 10 where the
    presets it meant set 20)."""
    from evolax.config import Run, load

    defaults = {f.name: f.default for f in dataclasses.fields(Run)}
    quoted = [
        (page.name, field, value)
        for page in DOCS
        for field, value in re.findall(r"`(\w+)` \(default (\d+)\)", page.read_text())
        if field in defaults
    ]
    assert len(quoted) >= 3  # log_interval, checkpoint_interval, keep_checkpoints in runs.md
    assert [(p, f, int(v)) for p, f, v in quoted] == [(p, f, defaults[f]) for p, f, _ in quoted]
    sets = [
        (page.name, preset, field, value)
        for page in DOCS
        for preset, field, value in re.findall(r"`(\w+)` sets\s+`(\w+)` to (\d+)", page.read_text())
    ]
    assert sets
    for page, preset, field, value in sets:
        assert load(preset)["run"][field] == int(value), (page, preset, field)


def test_install_extras_exist():
    text = (GUIDES / "install.md").read_text()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    table = set(re.findall(r"^\| `([a-z-]+)` \|", text, flags=re.M))
    assert table == set(extras), "the extras table lists exactly pyproject's extras"
    assert set(re.findall(r'pip install -e? ?"\.\[([a-z,]+)\]"', text)) <= set(extras)
    # the JAX extras the page names exist in the installed JAX's metadata
    jax_extras = set(importlib.metadata.metadata("jax").get_all("Provides-Extra"))
    for extra in re.findall(r'"jax\[([a-z0-9]+)\]"', text):
        assert extra in jax_extras, extra


def test_quickstart(tmp_path, monkeypatch):
    ns = run_page("quickstart.md", tmp_path, monkeypatch)
    (folder,) = (tmp_path / "runs").glob("python-quickstart-*")  # a new folder per run
    for name in ("config.json", "metrics.jsonl", "summary.json", "episode.gif"):
        assert (folder / name).is_file(), name
    assert (folder / "learning_curves.png").stat().st_size > 0
    assert list((folder / "checkpoints").iterdir()), "a checkpoint was written"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["generations"] == 20
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    first = next(row for row in rows if row["kind"] == "train")
    # 20 generations of PGPE on 200-step cart-pole: well above the first population's mean
    assert summary["final_test_mean"] > first["fitness_mean"] + 20
    assert ns["scores"].shape == (20,)
    assert ns["action"].shape == ns["task"].action_shape


def test_concepts(tmp_path, monkeypatch, capsys):
    ns = run_page("concepts.md", tmp_path, monkeypatch)
    # a generation of `Trainer.run` is ask -> evaluate -> tell, as written out on the page
    np.testing.assert_allclose(ns["history"]["fitness_max"][0], jnp.max(ns["fitness"]), 1e-5)
    assert ns["history"]["fitness_max"].shape == (5,)
    assert int(ns["final_state"].generation) == 5
    assert jnp.all(jnp.isfinite(ns["told"].std))
    # a NaN is ranked last: numpy ranks with NaN as -inf
    ranks = np.argsort(np.argsort(np.nan_to_num([1.0, np.nan, 3.0, 2.0], nan=-np.inf)))
    shaped = ns["centered_rank"](jnp.array([1.0, jnp.nan, 3.0, 2.0]))
    np.testing.assert_allclose(shaped, ranks / 3 - 0.5, rtol=1e-6)
    assert np.array_equal(ns["a"]["fitness_max"], ns["b"]["fitness_max"])
    assert not np.array_equal(ns["a"]["fitness_max"], ns["c"]["fitness_max"])
    assert "True\nFalse\n" in capsys.readouterr().out


def test_custom_task(tmp_path, monkeypatch, capsys):
    ns = run_page("custom_task.md", tmp_path, monkeypatch)
    # standing still scores -max_steps * E|goal| for goal ~ U([-1, 1]^2), where
    # E|goal| = (sqrt(2) + asinh(1)) / 3 (the mean distance from the centre of a square)
    still = -50 * (math.sqrt(2) + math.asinh(1)) / 3
    assert ns["result"].summary["final_test_mean"] > 0.4 * still, "it steers to the goal"
    assert ns["frames"] > 2 and (tmp_path / "runs" / "point-mass" / "episode.gif").is_file()
    assert 0 < float(ns["archive_metrics"](ns["qd_state"].algo_state)["coverage"]) <= 1
    assert "expected task.action_shape (2,)" in capsys.readouterr().out
    # the integrator the page describes: velocity t * dt * a after t steps from rest
    task = ns["PointMass"]()
    state = task.reset(jax.random.key(5))
    for _ in range(7):
        state, _, done = task.step(state, jnp.array([0.5, -0.25]), jax.random.key(0))
    np.testing.assert_allclose(state.velocity, 7 * 0.1 * np.array([0.5, -0.25]), rtol=1e-5)
    assert not bool(done)
    with pytest.raises(ValueError, match="max_steps"):
        ns["PointMass"](max_steps=0)


def test_custom_algorithm(tmp_path, monkeypatch, capsys):
    ns = run_page("custom_algorithm.md", tmp_path, monkeypatch)
    # a complete algorithm on the template in at most 40 lines, as the page says
    page = (GUIDES / "custom_algorithm.md").read_text()
    source = page[page.index("class GaussianES") :].split("```")[0].strip()
    lines = len(source.splitlines())
    assert lines <= 40 and f"The algorithm is {lines} lines" in page
    assert float(ns["distance"]) < 1e-2, "the ES converges to the sphere's optimum"
    # the step size follows std * decay^t exactly
    np.testing.assert_allclose(ns["metrics"]["std"][-1], 0.5 * 0.97**200, rtol=1e-4)
    history = ns["history"]
    assert float(history["fitness_mean"][-1]) > float(history["fitness_mean"][0]) + 20
    assert history["std"].shape == (30,) and history["best_fitness"].shape == (30,)
    out = capsys.readouterr().out
    assert "n_elite must be at most pop_size=4, got 5" in out
    assert "init_std must be a finite positive number, got 0.0" in out
    assert "fitness must have shape (pop_size,) = (6,), got (5,)" in out


def test_own_loop(tmp_path, monkeypatch):
    ns = run_page("own_loop.md", tmp_path, monkeypatch)
    assert 0 <= float(ns["precision"]) < 1e-6, "Sep-CMA-ES solves the separable ellipsoid"
    # evolve: four seeds side by side, each as precise as the hand-written loop
    assert ns["history"]["best_fitness"].shape == (4, 600)
    assert np.all(-np.asarray(ns["history"]["best_fitness"][:, -1]) < 1e-6)
    # the numpy Rosenbrock run stopped on CMA-ES's own criteria, at the optimum (1, ..., 1)
    assert ns["iteration"] < 999
    np.testing.assert_allclose(ns["algorithm"].best(ns["state"]), np.ones(4), atol=1e-3)
    best = ns["es"].best(ns["es_state"])
    np.testing.assert_allclose(
        [best["amplitude"], best["frequency"], best["phase"]], [1.5, 2.0, 0.5], atol=0.05
    )


def test_embedding(tmp_path, monkeypatch):
    ns = run_page("embedding.md", tmp_path, monkeypatch)
    scores = np.asarray(ns["scores"])
    assert scores.shape == (3, 4) and np.all(np.isfinite(scores))
    assert ns["scores_2"].shape == (3, 4)  # a second call with new values did not retrace
    # an element of the sweep is the same run without vmap, as the page says
    np.testing.assert_allclose(scores[1, 0], ns["history"]["fitness_mean"][-1], rtol=1e-3)
    state, best = ns["state"], float(ns["best"])
    assert best >= 20.0 or int(state.generation) == 50
    assert int(state.generation) <= 50


# settings that make each algorithm valid on a small problem, and a value for each field
ALGORITHM_SETUP = {
    "MAPElites": dict(grid_shape=(4, 4), descriptor_low=(-1, -1), descriptor_high=(1, 1)),
    "CVTMAPElites": dict(n_cells=16, descriptor_low=(-1, -1), descriptor_high=(1, 1)),
    "CMAMAE": dict(
        grid_shape=(4, 4), descriptor_low=(-1, -1), descriptor_high=(1, 1), n_emitters=2
    ),
    "PSO": dict(velocity_rule="inertia"),
}
FIELD_VALUES = {"tol_condition": 1e14, "inertia": 0.7, "sigma_decay": 0.99, "qd_offset": 0.0}


def names(cell: str) -> set[str]:
    """The `code` names in a table cell."""
    return set(re.findall(r"`(\w+)`", cell))


def table_rows(module, base):
    """``(name, class, fields, traced names, static names)`` of each row of the embedding
    page's table that names a subclass of ``base`` in ``module``."""
    text = (GUIDES / "embedding.md").read_text()
    for name, traced, static in re.findall(r"^\| `(\w+)` \| (.*?) \| (.*?) \|$", text, re.M):
        cls = getattr(module, name, None)
        if isinstance(cls, type) and issubclass(cls, base):
            yield name, cls, dataclasses.fields(cls), names(traced), names(static)


def test_embedding_table_of_traced_fields():
    """The page's table names each algorithm's static fields exactly, and every field it calls
    traced really is: the algorithm builds, asks and tells with it as a vmapped tracer
    (checked with `jax.eval_shape`, which traces without compiling)."""
    checked = 0
    for name, cls, fields, traced, static in table_rows(algorithms, algorithms.Algorithm):
        assert static == {f.name for f in fields if f.metadata.get("static")}, name
        assert traced <= {f.name for f in fields if not f.metadata.get("static")}, name
        dim = 50 if name == "LMMAES" else 5  # LM-MA-ES's default c_sigma needs pop <= dim / 2
        for field in sorted(traced):

            def generation(value, key, field=field, cls=cls, name=name, dim=dim):
                kwargs = {"pop_size": 8, **ALGORITHM_SETUP.get(name, {}), field: value}
                algorithm = cls(**kwargs)
                state = algorithm.init(key, jnp.zeros(dim))
                population, state = algorithm.ask(key, state)
                fitness = to_fitness(sphere)(densify(population))  # seeds: their members
                extra = {name: population[:, :2] for name in algorithm.extra_inputs}
                return algorithm.tell(key, state, population, fitness, **extra)

            values = jnp.full(2, FIELD_VALUES.get(field, 0.5))
            jax.eval_shape(jax.vmap(generation, in_axes=(0, None)), values, jax.random.key(0))
            checked += 1
    assert checked >= 30


def test_embedding_table_of_task_fields():
    """The table names each task's ordinary fields exactly, and static ones that are static;
    an episode's reset and step trace with each ordinary field vmapped over."""
    checked = 0
    for name, cls, fields, traced, static in table_rows(tasks, tasks.Task):
        assert static <= {f.name for f in fields if f.metadata.get("static")}, name
        assert traced == {f.name for f in fields if not f.metadata.get("static")}, name
        for field in sorted(traced):

            def episode_step(value, key, field=field, cls=cls):
                task = cls(**{field: value})
                state = task.reset(key)
                agents = (task.n_agents,) if isinstance(task, tasks.MultiAgentTask) else ()
                return task.step(state, jnp.zeros((*agents, *task.action_shape)), key)

            values = jnp.full(2, getattr(cls(), field))
            jax.eval_shape(jax.vmap(episode_step, in_axes=(0, None)), values, jax.random.key(0))
            checked += 1
    assert checked >= 20


def test_reproducing_covers_every_preset_with_recorded_figures():
    text = (GUIDES / "reproducing.md").read_text()
    table = text.split("## The presets")[1].split("\n## ")[0]
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+)` \|.*$", table, re.M)}
    assert set(rows) == set(presets()), "one row per preset that `evolax configs` lists"
    tables = sorted((ROOT / "docs" / "results").glob("*.md"))  # the benchmarks' tables
    pages = [ROOT / "README.md", ROOT / "docs" / "results.md", *tables]
    sources = "".join(p.read_text() for p in pages)
    for name, row in rows.items():
        assert f"--config {name}" in row
        # every figure in the row is one that results.md or the README records
        for number in re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", row):
            assert number in sources, f"{name}: {number} is not a recorded figure"
