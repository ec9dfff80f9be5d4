"""Population sharding: same results on 1, 2 and 8 devices; the population (or, where it
cannot be, its episodes) really is split."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import jax
import numpy as np
import pytest

from evolax import MLP, PGPE, CartPoleSwingUp, Trainer, sharding
from evolax.sharding import CPU_DEVICES_ENV, even_split, population_mesh, split_axis


def eight_devices(*args):
    """`sharding_script.py` run with 8 fake CPU devices: its JSON results."""
    script = Path(__file__).with_name("sharding_script.py")
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    result = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=600, env=env
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["n_devices"] == 8
    return out


@pytest.mark.slow  # 40 s; one-device meshes and two processes stay in the default run
def test_eight_fake_devices_agree_and_split_the_population():
    out = eight_devices()
    for n in ("2", "8"):
        np.testing.assert_allclose(out["history"][n], out["history"]["1"], rtol=1e-4)
        assert out["obs_count"][n] == out["obs_count"]["1"]
    assert out["fitness_spec"] == ["pop"]
    assert out["shard_shapes"] == [[2, 3]] * 8  # 16 individuals x 3 repeats over 8 devices
    assert out["run_traces"] == out["population_run_traces"] == 1
    assert out["population_placed"] == ["P()"] * 2  # returned as it came
    assert out["chunked_run"] == out["relaid_chunk"] == 2
    assert "pop_size=18 does not divide evenly over 8 devices" in out["error"]
    assert "pop_size=16 or 24" in out["error"]
    assert out["default_mesh"] == [8, 3, 6, 8]


@pytest.mark.slow
def test_a_population_held_as_seeds_gives_the_same_run_and_moves_only_fitness():
    """LowRankES on 1, 2 and 8 devices: the same history, and the step's only collectives
    carry the fitness (an all-gather of f32[16]) and scalars, never the genome (225)."""
    out = eight_devices("seeded")
    for n in ("2", "8"):
        np.testing.assert_allclose(out["history"][n], out["history"]["1"], rtol=1e-4)
    assert out["genome_size"] == 225
    assert out["collective_sizes"] and max(out["collective_sizes"]) == 16


@pytest.mark.slow
def test_eight_fake_devices_vmap_compose_and_split_episodes():
    out = eight_devices("more")
    assert out["vmap_seeds_error"] < 1e-3
    assert out["vmap_std_lr"][0] == pytest.approx(0.1) and out["vmap_std_lr"][1] != pytest.approx(
        0.1
    )
    best, total = out["composed"]
    assert len(best) == 2 and total == pytest.approx(16 * 4 * np.tanh(1.0) ** 2, rel=1e-5)
    for name, rows in out["split_repeats"].items():
        assert [rows[n]["split"] for n in ("1", "2", "8")] == (
            ["pop", "repeats", "repeats"] if name == "waterworld_ma" else ["pop", "pop", "repeats"]
        ), name
        for n in ("2", "8"):
            np.testing.assert_allclose(rows[n]["fitness"], rows["1"]["fitness"], rtol=1e-4)
            assert rows[n]["obs_count"] == rows["1"]["obs_count"]
            np.testing.assert_allclose(rows[n]["obs_mean"], rows["1"]["obs_mean"], atol=1e-4)
    assert out["split_repeats_returns"] == [[4, 8]] * 8  # every device: all 8 episodes
    assert (
        "pop_size=4 does not divide evenly over 8 devices in whole environments"
        in (out["split_error"])
    )
    assert "n_repeats=12" in out["split_error"] and "pop_size=32" in out["split_error"]
    one, split = out["test_returns"]
    assert len(split) == 8 and np.std(one) > 0  # the episodes differ
    np.testing.assert_allclose(split, one, rtol=1e-5, atol=1e-6)
    assert out["test_devices"] == [8, 1]


def test_one_device_mesh_equals_no_mesh(key):
    def history(mesh):
        trainer = Trainer(
            algorithm=PGPE(pop_size=8),
            policy=MLP(hidden_sizes=(8,)),
            task=CartPoleSwingUp(max_steps=30),
            n_repeats=2,
            mesh=mesh,
        )
        return jax.jit(trainer.run, static_argnums=1)(trainer.init(key), 2)[1]["fitness_mean"]

    np.testing.assert_allclose(
        history(population_mesh(jax.devices()[:1])), history(None), rtol=1e-5
    )


@pytest.fixture
def fresh_jax(monkeypatch):
    """JAX as before its first computation, the device counts it is asked for recorded."""
    asked = []
    monkeypatch.setattr(sharding, "_jax_started", lambda: False)
    monkeypatch.setattr(jax.config, "update", lambda name, value: asked.append((name, value)))
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    return asked


def test_importing_evolax_asks_for_a_device_per_core(fresh_jax, monkeypatch):
    monkeypatch.setattr(sharding, "cpu_cores", lambda: 4)
    assert sharding.arrange_cpu_devices({}) == 4
    assert sharding.arrange_cpu_devices({CPU_DEVICES_ENV: "3"}) == 3
    assert sharding.arrange_cpu_devices({CPU_DEVICES_ENV: "1"}) is None  # JAX's own one
    assert fresh_jax == [("jax_num_cpu_devices", 4), ("jax_num_cpu_devices", 3)]
    with pytest.raises(ValueError, match="EVOLAX_CPU_DEVICES must be a positive number"):
        sharding.arrange_cpu_devices({CPU_DEVICES_ENV: "0"})
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8 --other")
    assert sharding.arrange_cpu_devices({}) is None  # the user's count stays
    assert len(fresh_jax) == 2


def test_a_started_jax_on_one_device_of_several_cores_is_told_once(monkeypatch):
    monkeypatch.setattr(sharding, "_jax_started", lambda: True)
    monkeypatch.setattr(sharding, "cpu_cores", lambda: 4)
    monkeypatch.setattr(jax, "device_count", lambda: 1)
    with pytest.warns(UserWarning, match="JAX ran a computation before evolax was imported"):
        assert sharding.arrange_cpu_devices({}) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the user asked for one: nothing to say
        assert sharding.arrange_cpu_devices({CPU_DEVICES_ENV: "1"}) is None


def test_request_cpu_devices_respects_an_explicit_setting(fresh_jax, monkeypatch):
    assert sharding.request_cpu_devices(1)  # one device for all cores, as the user asked
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8 --other")
    assert not sharding.request_cpu_devices(2)
    assert os.environ["XLA_FLAGS"] == "--xla_force_host_platform_device_count=8 --other"
    assert fresh_jax == [("jax_num_cpu_devices", 1)]


def test_split_axis_prefers_the_population_then_the_episodes():
    assert split_axis(16, 3, 8) == "pop"
    assert split_axis(16, 8, 8) == "pop"
    assert split_axis(18, 8, 8) == "repeats"
    assert split_axis(32, 64, 2, group=16) == "pop"
    assert split_axis(16, 64, 2, group=16) == "repeats"  # EvoJAX's multi-agent WaterWorld
    assert even_split(16, 3, 2, group=16) is None
    with pytest.raises(ValueError, match=r"pop_size=16 does not divide .* whole environments of "):
        split_axis(16, 3, 2, group=16)
