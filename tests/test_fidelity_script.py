"""benchmarks/fidelity.py, the script behind docs/fidelity.md, runs part by part (tiny sizes).

Each part runs in its own process with a configuration of a few seconds and writes its table
to a temporary folder (``EVOLAX_BENCHMARK_RESULTS``), so that the script cannot rot unseen.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

QD_ARGUMENTS = ["--domains", "rastrigin", "--algorithms", "map_elites", "cma_mae", "--dim", "4"]
QD_ARGUMENTS += ["--generations", "3", "--seeds", "1"]
MODULE = {"bbob": "cocoex", "mo": "pymoo", "evosax32": "evosax", "qd": "ribs"}
TINY = {  # part: (arguments, a column header its table must have)
    "bbob": (
        ["--dims", "2", "--instances", "1", "--points", "3", "--exact-points", "1"],
        "max relative difference to cocoex",
    ),
    "speed": (["--dims", "10", "--seconds-each", "0.05", "--rounds", "1"], "pycma (float64)"),
    "cma32": (["--dims", "2", "--functions", "1", "--seeds", "1"], "evolax float32"),
    "restarts": (
        ["--dims", "2", "--functions", "15", "--seeds", "1", "--budget", "50"],
        "restarts",
    ),
    "evosax32": (
        ["--functions", "1", "--seeds", "1", "--generations", "5", "--algorithms", "SNES"],
        "evosax float32",
    ),
    "mo": (["--problems", "zdt1", "--seeds", "1"], "pymoo"),
    "qd": (QD_ARGUMENTS, "pyribs"),
}


@pytest.mark.slow
@pytest.mark.parametrize("part", sorted(TINY))
def test_fidelity_part_writes_its_table(part, tmp_path):
    pytest.importorskip(MODULE.get(part, "cma"))
    arguments, header = TINY[part]
    env = {**os.environ, "EVOLAX_BENCHMARK_RESULTS": str(tmp_path)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "fidelity.py"), part, *arguments],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = (tmp_path / f"fidelity_{part}.md").read_text()
    assert header in table, table
    assert (tmp_path / f"fidelity_{part}.json").exists()


def test_the_qd_parts_rastrigin_spans_0_to_100():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import jax.numpy as jnp

    from fidelity_qd import rastrigin_linear_projection

    fitness, descriptors = rastrigin_linear_projection(jnp.array([[2.048] * 4, [-5.12] * 4]))
    assert abs(float(fitness[0]) - 100.0) < 1e-4 and abs(float(fitness[1])) < 1e-4
    assert descriptors.shape == (2, 2)
