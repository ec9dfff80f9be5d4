"""The Python examples of the README and the guides run as written."""

import re
from pathlib import Path

import jax
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    exec(compile("\n".join(blocks), str(README), "exec"), namespace)
    assert namespace["history"]["fitness_max"].shape == (4, 10)
    # the trainer holding an array runs under eqx.filter_jit, where jax.jit's static path fails
    assert namespace["painting_history"]["fitness_max"].shape == (5,)
    painting = namespace["painting"]
    with pytest.raises(TypeError, match=r"holds arrays \(trainer\.task\..*eqx\.filter_jit"):
        jax.jit(painting.run, static_argnums=1)(painting.init(jax.random.key(0)), 5)


def test_algorithms_guide_examples_run(capsys, tmp_path, monkeypatch):
    guide = README.parent / "docs" / "algorithms.md"
    cma, tasks, nsga2, effort = re.findall(r"```python\n(.*?)```", guide.read_text(), flags=re.S)
    exec(compile(cma, str(guide), "exec"), {})
    assert float(capsys.readouterr().out) < 1e-6  # CMA-ES solves BBOB's Rosenbrock in d = 10
    exec(compile(tasks, str(guide), "exec"), {})  # multi-task MAP-Elites fills most tasks
    coverage, tournament = map(float, capsys.readouterr().out.split())
    assert coverage > 0.5 and tournament >= 1
    exec(compile(nsga2, str(guide), "exec"), {})
    assert float(capsys.readouterr().out) > 0.95 * (1.21 - 1 / 3)  # NSGA-II's ZDT1 front
    # the 2-objective trainer, for 2 generations of its 100, in a folder of the test's
    monkeypatch.chdir(tmp_path)
    short = effort.replace("evolax.train(trainer, 100,", "evolax.train(trainer, 2, progress=False,")
    short = short.replace("NSGA2(pop_size=64,", "NSGA2(pop_size=8,")
    short = short.replace("evolax.CartPoleSwingUp()", "evolax.CartPoleSwingUp(max_steps=20)")
    assert short.count("progress=False") == short.count("pop_size=8") == 1, short
    assert "max_steps=20" in short
    namespace: dict = {}
    exec(compile(short, str(guide), "exec"), namespace)
    summary = namespace["result"].summary
    assert summary["generations"] == 2 and summary["final_test_mean"] is not None
