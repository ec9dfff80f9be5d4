"""COCO-style benchmarking: the measures against their definitions (Hansen et al. 2021) on
hand-made runs, the vmapped runs against one run driven by hand and valued by COCO's own
cocoex, and `evolax bench bbob` end to end."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax import cli
from evolax.algorithms import SNES
from evolax.coco import (
    TARGETS,
    bbob_runs,
    ecdf,
    expected_running_time,
    hitting_evaluations,
    report_tables,
)
from evolax.problems.bbob import bbob_problem
from helpers import LEGACY_CODEGEN


def test_targets_are_coco_s_fifty_one_precisions():
    assert TARGETS.shape == (51,)
    np.testing.assert_allclose(TARGETS[[0, 5, 50]], [100.0, 10.0, 1e-8])


def test_measures_follow_their_definitions():
    # two runs, three generations of 10 evaluations: run 0 reaches 1e-1 at 20 evaluations and
    # 1e-3 at 30; run 1 reaches 1e-1 at 10 evaluations and never 1e-3
    precision = np.array([[5.0, 0.05, 1e-4], [0.1, 0.1, 0.02]])
    evaluations = np.array([10.0, 20.0, 30.0])
    targets = np.array([10.0, 1e-1, 1e-3])
    hits = hitting_evaluations(precision, evaluations, targets)
    np.testing.assert_array_equal(hits, [[10, 20, 30], [10, 10, np.inf]])
    # ERT = evaluations of all runs (unsuccessful ones: the whole budget) / successes
    np.testing.assert_allclose(
        expected_running_time(hits, budget=30.0), [10.0, 15.0, (30 + 30) / 1]
    )
    assert np.isinf(expected_running_time(np.full((2, 1), np.inf), 30.0)).all()
    # the ECDF counts (run, target) pairs reached within each budget
    np.testing.assert_allclose(ecdf(hits, [5, 10, 20, 30]), [0, 3 / 6, 4 / 6, 5 / 6])


def test_vmapped_runs_equal_one_run_driven_by_hand_and_valued_by_cocoex():
    """One (function, instance, seed) of the compiled program, replayed step by step with
    the documented keys, each population valued by cocoex: the same best precision after
    every generation."""
    cocoex = pytest.importorskip("cocoex")
    algorithm, dim = SNES(pop_size=6, init_std=2.0), 5
    functions, budget = (1, 8, 15), 30.0  # 25 generations
    runs = bbob_runs(algorithm, dim, functions=functions, instances=(2,), seeds=2, budget=budget)
    generations = runs.precision.shape[-1]
    assert runs.precision.shape == (3, 2, generations) and generations == 25
    assert np.all(np.diff(runs.precision, axis=-1) <= 0)  # best so far

    f, instance, s = 8, 2, 1
    suite = cocoex.Suite("bbob", f"instances:{instance}", f"function_indices:{f} dimensions:{dim}")
    problem = next(iter(suite))
    with jax.enable_x64(True):
        f_opt = float(bbob_problem(f, dim, instance).f_opt)
        key = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(
            jax.random.key(0), f), instance), s)  # fmt: skip
        x0_key, init_key = jax.random.split(jax.random.fold_in(key, generations))
        state = algorithm.init(init_key, jax.random.uniform(x0_key, (dim,), jnp.float64, -4, 4))
        ask, tell = jax.jit(algorithm.ask), jax.jit(algorithm.tell)
        best, curve = np.inf, []
        for g in range(generations):
            ask_key, tell_key = jax.random.split(jax.random.fold_in(key, g))
            population, state = ask(ask_key, state)
            delta = np.array([problem(x) for x in np.asarray(population)]) - f_opt
            state, _ = tell(tell_key, state, population, -jnp.asarray(delta))
            best = min(best, delta.min())
            curve.append(best)
    # the suite's code generator (helpers.LEGACY_CODEGEN) rounds the two programs apart
    rtol = 1e-5 if LEGACY_CODEGEN else 1e-9
    np.testing.assert_allclose(runs.precision[1, s], curve, rtol=rtol, atol=1e-12)
    assert curve[-1] < curve[0] / 10  # the run made progress worth comparing


def test_report_tables_count_solved_functions():
    sphere = bbob_runs(SNES(pop_size=6, init_std=2.0), 2, functions=(1, 3), seeds=2, budget=300)
    tables = report_tables({"snes": sphere}, target=1e-8)
    assert tables["ert"]["snes"][1]["successes"] == 2  # the sphere, every run
    assert tables["summary"][0]["solved"] >= 1
    assert 0 < tables["summary"][0]["targets_reached"] <= 1


def test_bench_bbob_writes_its_tables(tmp_path, capsys):
    out = tmp_path / "bench"
    argv = ["bench", "bbob", "open_es", "snes", "snes.init_std=1.5", "--dim", "2"]
    argv += ["--functions", "1,2", "--seeds", "2", "--budget", "100", "--out", str(out)]
    assert cli.main(argv) == 0
    tables = json.loads((out / "bbob.json").read_text())
    assert [row["algorithm"] for row in tables["summary"]] == ["open_es", "snes"]
    assert tables["functions"] == [1, 2] and tables["runs"] == 2
    assert tables["summary"][0]["pop_size"] == 6  # 4 + floor(3 ln 2), even
    markdown = (out / "bbob.md").read_text()
    assert "| f1 sphere |" in markdown and "| f2 separable ellipsoid |" in markdown
    assert (out / "bbob_ecdf.png").stat().st_size > 1000


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bench", "bbob"], "name at least one algorithm to benchmark (pgpe, open_es"),
        (["bench", "bbob", "cma_es", "snes.init_std=1"], "snes is not one of the algorithms"),
        (["bench", "bbob", "map_elites"], "MAPElites needs"),
        (["bench", "bbob", "cma_es", "--functions", "25"], "function_id must be an integer in"),
    ],
)
def test_bench_mistakes_are_one_line(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
