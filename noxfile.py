"""Developer sessions: `nox -s tests` (default suite), `slow`, `lint`, `docs`, `types`, `bench`;
`kinetix` (not a default session) checks the Kinetix adapter in an environment of its own, with
jax 0.9.0: kinetix-env 3.0.2 requires jax <= 0.9.0."""

import os

import nox

nox.options.sessions = ["tests", "lint", "docs", "types"]
nox.options.reuse_existing_virtualenvs = True

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "shared", "data")


def _env() -> dict[str, str]:
    env = {"PYTHONHASHSEED": "0"}
    if os.path.isdir(DATA_DIR):
        env.setdefault("EVOLAX_DATA_DIR", os.environ.get("EVOLAX_DATA_DIR", DATA_DIR))
    return env


@nox.session
def tests(session: nox.Session) -> None:
    """The default test suite (slow tests excluded), over up to 4 processes (JAX compiles on
    one core; `nox -s tests -- -n 0` runs in one process)."""
    session.install("-e", ".[test]")
    workers = ["-n", "auto", "--maxprocesses", "4", "--dist", "loadscope"]  # a module per worker
    session.run("pytest", *workers, "--durations=20", *session.posargs, env=_env())


@nox.session
def slow(session: nox.Session) -> None:
    """Long checks: EvoJAX's published cart-pole scores, seq2seq learning addition, whole BBOB
    runs against evosax and pycma, the DE and PSO variants against EvoX, the multi-objective
    algorithms against pymoo, multi-task MAP-Elites, DNS and MOME against pymap_elites' and
    QDax's rules, 8 fake devices composing and splitting episodes, MuJoCo host
    tasks, Ray actors on a two-node local cluster, MuJoCo Playground's episodes."""
    session.install("-e", ".[test,reference-torch,reference-qd-mo,ray,playground]")
    session.run("pytest", "-m", "slow", "-v", *session.posargs, env=_env())


@nox.session
def lint(session: nox.Session) -> None:
    """ruff lint and format checks."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site (mkdocs, API reference from docstrings); warnings fail."""
    session.install("-e", ".[docs]")
    session.run("mkdocs", "build", "--strict", *session.posargs, env={"NO_MKDOCS_2_WARNING": "1"})


@nox.session
def bench(session: nox.Session) -> None:
    """Side-by-side speed: against EvoJAX 0.2.17 (cart-pole, MNIST) or evosax 0.3.2 (ES on a
    shifted sphere), installed into this session's environment.

    `nox -s bench` times cart-pole; `nox -s bench -- mnist [ARGS]` MNIST;
    `nox -s bench -- evosax [ARGS]` OpenES, PGPE, Sep-CMA-ES and CMA-ES against evosax.
    """
    benchmark, *args = session.posargs or ["cartpole"]
    if benchmark not in ("cartpole", "mnist", "evosax"):
        args, benchmark = [benchmark, *args], "cartpole"
    baseline = "evosax==0.3.2" if benchmark == "evosax" else "evojax==0.2.17"
    session.install("-e", ".", baseline)
    env = _env() | {"OPENBLAS_NUM_THREADS": "1"}  # LAPACK threads fight XLA's for 2 cores
    session.run("python", f"benchmarks/{benchmark}_speed.py", *args, env=env)


@nox.session
def types(session: nox.Session) -> None:
    """mypy over the typed package (configuration in pyproject.toml's [tool.mypy])."""
    session.install("-e", ".", "mypy>=1.14", "types-tqdm", "types-PyYAML")
    session.run("mypy", *session.posargs)


# kinetix-env 3.0.2 requires jax <= 0.9.0 (its Jax2D calls `jnp.clip(a_min=...)`, which jax 0.10
# removed), so Kinetix is checked apart from the other families, at the newest jax it allows
KINETIX = ("jax==0.9.0", "jaxlib==0.9.0", "kinetix-env==3.0.2")


@nox.session
def kinetix(session: nox.Session) -> None:
    """The Kinetix adapter against Kinetix's own episodes (symbolic, entity and pixel
    observations; continuous, discrete and multi-discrete actions; random levels, level files,
    held-out levels and mutated copies of a level) and the `kinetix_levels` preset, in an
    environment of jax 0.9.0 and kinetix-env 3.0.2 with its declared dependencies. Minutes
    of CPU per variant, mostly compiling Kinetix's physics. The Kinetix rows of the family
    benchmarks run here too, `nox -s kinetix -- bench`, into benchmarks/results/kinetix/
    (the rows merged into docs/results/ by hand: docs/environments.md)."""
    session.install("-e", ".", "pytest>=8", "pytest-timeout>=2.3", *KINETIX)
    if session.posargs[:1] == ["bench"]:
        # tables to a folder of their own: the committed ones hold the other families' rows
        env = _env() | {"EVOLAX_BENCHMARK_RESULTS": "benchmarks/results/kinetix"}
        session.run(
            "python", "benchmarks/env_family_presets.py", "--presets", "kinetix_levels", env=env
        )
        session.run("python", "benchmarks/env_family_speed.py", "--only", "kinetix", env=env)
        return
    tests = ["tests/tasks/test_kinetix.py", "tests/tasks/test_env_presets.py", "-k", "kinetix"]
    session.run("pytest", "-m", "slow or not slow", "-v", *tests, *session.posargs, env=_env())
