"""Shared test helpers: a task and policy with closed-form returns, and run-folder readers."""

import dataclasses
import functools
import os
import subprocess
import sys
from pathlib import Path

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax import evolve
from evolax.algorithms import SNES, OpenES
from evolax.coco import bbob_runs
from evolax.coco.report import report_tables
from evolax.policies import Policy
from evolax.tasks import Task


@chex.dataclass(frozen=True)
class CountdownState:
    obs: jax.Array  # [t, t * t]
    t: jax.Array
    length: jax.Array


class Countdown(Task):
    """Episodes of 2..6 steps (drawn from the reset key); reward = action[0] each step."""

    max_steps: int = eqx.field(static=True, default=100)
    obs_shape: tuple = eqx.field(static=True, default=(2,))
    action_shape: tuple = eqx.field(static=True, default=(1,))

    @staticmethod
    def episode_length(key):
        return jax.random.randint(key, (), 2, 7)

    def reset(self, key):
        zero = jnp.zeros([], jnp.int32)
        return CountdownState(obs=jnp.zeros(2), t=zero, length=self.episode_length(key))

    def step(self, state, action, key):
        t = state.t + 1
        obs = jnp.stack([t, t * t]).astype(jnp.float32)
        return state.replace(obs=obs, t=t), action[0], t >= state.length


class Constant(Policy):
    """Acts ``[params["c"]]`` whatever it observes (the obs still flows through)."""

    action_size: int = eqx.field(static=True, default=1)

    def init(self, key, obs_shape, action_shape):
        return {"c": jnp.zeros([])}

    def apply(self, params, obs, state, key):
        return jnp.full((self.action_size,), params["c"]) + 0.0 * obs[0], state


LEGACY_CODEGEN = "--xla_cpu_use_fusion_emitters=false" in os.environ.get("XLA_FLAGS", "")
"""Whether this process compiles with XLA:CPU's older fusion code generator (the default suite
does, tests/conftest.py): there one program fused two ways (vmapped and not, in a scan or
step by step) agrees to float rounding only, where XLA's default code gives the same bits."""


def assert_same_or_rounding(actual, expected, rtol: float = 1e-6, atol: float = 1e-6):
    """Equal bit for bit, or to ``rtol``/``atol`` under :data:`LEGACY_CODEGEN`."""
    if LEGACY_CODEGEN:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(actual, expected)


def evolax_command(*args) -> list[str]:
    """The `evolax` command line, run with this interpreter."""
    return [sys.executable, "-m", "evolax.cli", *map(str, args)]


def run_evolax(*args, cwd) -> subprocess.CompletedProcess:
    """Run `evolax ARGS` in ``cwd`` as a user would; its output captured as text."""
    return subprocess.run(
        evolax_command(*args), cwd=cwd, capture_output=True, text=True, timeout=600
    )


def start_evolax(*args, cwd) -> subprocess.Popen:
    """Start `evolax ARGS` in ``cwd`` in the background; its output captured as text."""
    return subprocess.Popen(
        evolax_command(*args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def metric_rows(run_dir, kind: str, drop_wall_time: bool = False) -> list[dict]:
    """The rows of one kind in a run's metrics.jsonl."""
    from evolax.logging import read_rows

    rows = [r for r in read_rows(run_dir / "metrics.jsonl") if r["kind"] == kind]
    if drop_wall_time:
        rows = [{k: v for k, v in r.items() if k != "wall_time"} for r in rows]
    return rows


@chex.dataclass(frozen=True)
class BatchState:
    obs: jax.Array  # [batch, features]
    target: jax.Array  # [batch]


class LinearRegression(Task):
    """A one-step supervised task: predict ``target`` from a batch of features."""

    max_steps: int = eqx.field(static=True, default=1)
    obs_shape: tuple = eqx.field(static=True, default=(4096, 64))
    action_shape: tuple = eqx.field(static=True, default=(4096,))

    def reset(self, key):
        x = jax.random.normal(key, self.obs_shape)
        return BatchState(obs=x, target=jnp.sum(x, axis=1))

    def step(self, state, action, key):
        return state, -jnp.mean((action - state.target) ** 2), jnp.array(True)


class Linear(Policy):
    def init(self, key, obs_shape, action_shape):
        return {"w": jnp.zeros(obs_shape[1])}

    def apply(self, params, obs, state, key):
        return obs @ params["w"], state


def state_leaves(state) -> list:
    """A ``TrainState``'s leaves as numpy arrays (its PRNG key as raw key data)."""
    state = state.replace(key=jax.random.key_data(state.key))
    return [np.asarray(x) for x in jax.tree.leaves(state)]


def optimize(algo, fitness_fn, gap_fn, n_generations: int, key, x0):
    """Run ``algo`` from ``x0`` for ``n_generations`` in one jitted scan, maximising
    ``fitness_fn(population)``; returns the final state and ``gap_fn(best)`` per generation."""

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        population, state = algo.ask(ask_key, state)
        state, _ = algo.tell(tell_key, state, population, fitness_fn(population))
        return state, gap_fn(algo.best(state))

    run = jax.jit(lambda s, k: jax.lax.scan(generation, s, jax.random.split(k, n_generations)))
    return run(algo.init(key, x0), key)


def shifted_sphere_states(algo, dim: int, generations: int, keys) -> list:
    """The final states of ``algo`` maximising ``-|x - x*|^2``, ``x* = linspace(-2, 3, dim)``,
    from ``x0 = 0`` for ``generations``, one run per key (one compile for all)."""
    optimum = jnp.linspace(-2.0, 3.0, dim)

    def fitness(x):
        return -jnp.sum((x - optimum[None]) ** 2, axis=1)

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        x, state = algo.ask(ask_key, state)
        return algo.tell(tell_key, state, x, fitness(x))[0], None

    @jax.jit
    def run(key):
        state = algo.init(key, jnp.zeros(dim))
        return jax.lax.scan(generation, state, jax.random.split(key, generations))[0]

    return [run(key) for key in keys]


def solve(algo, function, dim, gens, n_seeds=3):
    """The final best-ever fitness of ``n_seeds`` runs (one jit, called per seed)."""

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        population, state = algo.ask(ask_key, state)
        state, metrics = algo.tell(tell_key, state, population, function(population))
        return state, metrics["best_fitness"]

    @jax.jit
    def run(key):
        init_key, key = jax.random.split(key)
        state = algo.init(init_key, jnp.zeros(dim))
        return jax.lax.scan(generation, state, jax.random.split(key, gens))[1][-1]

    return np.array([run(key) for key in jax.random.split(jax.random.key(0), n_seeds)])


def cma_vs_pycma(tmp_path, *args) -> list[dict]:
    """The rows of ``benchmarks/cma_vs_pycma.py args`` (run in a subprocess, which keeps its
    float64 mode and its pycma subprocess to itself)."""
    import json
    import subprocess
    from pathlib import Path

    import pytest

    pytest.importorskip("cma")
    pytest.importorskip("cocoex")
    script = Path(__file__).parents[1] / "benchmarks" / "cma_vs_pycma.py"
    subprocess.run(
        [sys.executable, str(script), *args, "--out", str(tmp_path)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    (result,) = tmp_path.glob("cma_vs_pycma*.json")
    rows = json.loads(result.read_text())["rows"]
    for row in rows:
        print(
            f"{row['algorithm']} f{row['function']} d={row['dim']}: evolax {row['evolax']}, "
            f"pycma {row['pycma']}, ratio {row['ratio']}"
        )
    return rows


def shared_data_dir() -> Path:
    root = os.environ.get("EVOLAX_DATA_DIR")
    root = Path(root) if root else Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
    names = [f"{n}.gz" for n in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte")]
    names += [f"{n}.gz" for n in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")]
    for folder in (root / "mnist", root):
        if all((folder / name).is_file() for name in names):
            return folder.resolve()
    pytest.skip(f"MNIST .gz files not found in {root} or {root / 'mnist'} (set EVOLAX_DATA_DIR)")


HELD_OUT = (2, 3, 5, 7, 9, 10, 12, 13, 14, 18, 21, 22, 23, 24)
"""The BBOB functions the shipped LES and LGA weights were not meta-trained on."""


@functools.cache
def held_out_areas(label: str, learned) -> dict[str, dict[float, float]]:
    """ECDF areas of ``learned`` (as ``label``), SNES and OpenES on the held-out functions
    (d = 10, 5 seeds, population 16) after 100 d and 1000 d evaluations, as
    ``benchmarks/meta_train_learned.py --mode evaluate`` measures them (the baselines with the
    settings it chose on the training functions): ``{label: {budget: area}}``."""
    contenders = {
        label: learned,
        "SNES": SNES(pop_size=16, init_std=1.0),
        "OpenES": OpenES(pop_size=16, init_std=0.3, optimizer=optax.adam(0.3), std_decay=0.99),
    }
    areas: dict[str, dict[float, float]] = {}
    for name, algorithm in contenders.items():
        runs = bbob_runs(algorithm, 10, functions=HELD_OUT, seeds=5, budget=1000)
        for budget in (100, 1000):
            generations = -(-budget * runs.dim // runs.pop_size)
            view = dataclasses.replace(runs, precision=runs.precision[..., :generations])
            area = report_tables({name: view})["summary"][0]["ecdf_area"]
            areas.setdefault(name, {})[budget] = area
    return areas


def front_runs(algo, problem, dim: int, generations: int) -> dict:
    """Two runs of a multi-objective ``algo`` on ``problem`` (minimised objectives, told
    negated) with one compiled program: ``"clean"``, and ``"broken"``, whose even children of
    the last generation have a NaN objective. Each is ``(final state, (metrics, x))`` with a
    generation axis on the metrics and the children."""

    traces = []

    @jax.jit
    def run(key, nan_children):
        traces.append(1)  # (chex.assert_max_traces counts by code: every call of this helper)

        def one(state, inputs):
            key, nan = inputs
            ask_key, tell_key = jax.random.split(key)
            x, state = algo.ask(ask_key, state)
            fitness = jnp.where(nan[:, None], jnp.nan, -problem(x))
            state, metrics = algo.tell(tell_key, state, x, fitness)
            return state, (metrics, x)

        init_key, key = jax.random.split(key)
        state = algo.init(init_key, jnp.zeros(dim))
        return jax.lax.scan(one, state, (jax.random.split(key, generations), nan_children))

    clean = jnp.zeros((generations, algo.pop_size), bool)
    broken = clean.at[-1].set(jnp.arange(algo.pop_size) % 2 == 0)
    runs = {"clean": run(jax.random.key(0), clean), "broken": run(jax.random.key(0), broken)}
    assert len(traces) == 1, "the generation compiled more than once"
    return runs


def assert_nonfinite_children_never_survive(runs: dict) -> None:
    """In :func:`front_runs`' ``"broken"`` run, the children with a NaN objective are counted
    in the last generation's metrics and none of them is kept."""
    state, (metrics, x) = runs["broken"]
    pop = x.shape[1]
    assert float(metrics["nonfinite"][-1]) == pop // 2
    assert float(metrics["nonfinite"][-2]) == 0
    assert jnp.all(jnp.isfinite(state.fitness))
    kept, bad = np.asarray(state.population), np.asarray(x[-1, ::2])
    assert not np.any(np.all(kept[:, None, :] == bad[None, :, :], axis=-1))


def qd_run(algo, problem, x0, generations: int):
    """``key -> (state, metrics)``: ``generations`` of a quality-diversity ``algo`` on
    ``problem(x) -> (fitness, descriptors)`` from ``x0``, as one ``lax.scan`` (jit or vmap
    it over keys); ``metrics`` has a leading generation axis."""

    def objective(x):
        fitness, descriptors = problem(x)
        return fitness, {"descriptors": descriptors}

    return lambda key: evolve(algo, objective, x0, key, generations)
