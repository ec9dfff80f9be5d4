"""The planar arm: the end effector by hand-computed postures, the reward, descriptors through
evaluate, and the arm preset training MAP-Elites with `evolax train` and `evolax plot` (its
archive.json and heatmap)."""

import json

import jax.numpy as jnp
import numpy as np
import pytest

import evolax
from evolax import cli
from evolax.policies import Direct
from evolax.tasks import Arm
from evolax.tasks.arm import end_effector


@pytest.mark.parametrize(
    "angles, tip",
    [
        ([0.0, 0.0, 0.0, 0.0], [1.0, 0.0]),  # stretched along x
        ([np.pi / 2, 0.0, 0.0, 0.0], [0.0, 1.0]),  # stretched along y
        ([0.0, 0.0, np.pi, 0.0], [0.0, 0.0]),  # folded back onto the base
        ([0.0, np.pi, 0.0, 0.0], [-0.5, 0.0]),  # angles are relative: three links point back
        ([0.0, 0.0, np.pi / 2, 0.0], [0.5, 0.5]),  # half along x, then up
    ],
)
def test_end_effector_of_hand_computed_postures(angles, tip):
    np.testing.assert_allclose(end_effector(jnp.asarray(angles)), tip, atol=1e-6)


def test_evaluate_gives_minus_the_angles_std_and_the_tip_as_descriptor(key):
    task = Arm(n_joints=4)
    postures = jnp.array([[0.5, 0.5, 0.5, 0.5], [0.75, 0.5, 0.5, 0.5], [2.0, 0.5, 0.5, -1.0]])
    fitness, info = evolax.evaluate(Direct(), task, postures, key, descriptors=True)
    angles = 2 * np.pi * (np.clip(np.asarray(postures), 0, 1) - 0.5)  # actions are clipped
    np.testing.assert_allclose(fitness, -angles.std(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        info.descriptors, 0.5 + 0.5 * np.asarray(end_effector(jnp.asarray(angles))), atol=1e-6
    )
    assert task.descriptor_bounds == ((0.0, 0.0), (1.0, 1.0))
    with pytest.raises(ValueError, match="n_joints must be a positive integer"):
        Arm(n_joints=0)


def test_the_arm_preset_fills_an_archive_that_evolax_plot_draws(tmp_path, capsys):
    run_dir = tmp_path / "arm"
    settings = ["run.generations=20", "run.seeds=2", "algorithm.grid_shape=[8, 8]"]
    assert cli.main(["train", "arm", *settings, "--run-dir", str(run_dir)]) == 0
    record = json.loads((run_dir / "archive.json").read_text())
    assert record["seeds"] == [0, 1] and record["grid_shape"] == [8, 8]
    assert record["n_cells"] == 64 and record["generation"] == 20
    for elites in record["elites"]:
        fitness, descriptors = np.asarray(elites["fitness"]), np.asarray(elites["descriptors"])
        assert 1 < len(fitness) <= 64 and descriptors.shape == (len(fitness), 2)
        assert np.all(fitness <= 0) and np.all((descriptors >= 0) & (descriptors <= 1))
        # one elite per cell
        cells = np.minimum((descriptors * 8).astype(int), 7)
        assert len({tuple(c) for c in cells}) == len(fitness)
    # the summary and the closing line give each seed's coverage: its elites over the 64 cells
    summary = json.loads((run_dir / "summary.json").read_text())
    coverages = [len(elites["fitness"]) / 64 for elites in record["elites"]]
    assert [s["final_coverage"] for s in summary["per_seed"]] == pytest.approx(coverages)
    assert summary["final_coverage_median"] == pytest.approx(np.median(coverages))
    assert "last generation's median coverage" in capsys.readouterr().out
    assert cli.main(["plot", str(run_dir)]) == 0
    assert (run_dir / "archive.png").stat().st_size > 10_000
    assert "archive.png" in capsys.readouterr().out
