"""The Craftax adapter against Craftax's own episodes (same keys and actions)."""

import jax
import numpy as np
import pytest

from evolax.tasks import Craftax, UniformParams
from family_helpers import check_name_and_install_errors, check_same_episodes

pytest.importorskip("craftax")
from craftax.craftax_env import make_craftax_env_from_name


@pytest.mark.parametrize(
    "name",
    ["Craftax-Classic-Symbolic-v1", "Craftax-Classic-Pixels-v1", "Craftax-Symbolic-v1"],
)
@pytest.mark.slow  # compiling Craftax's step takes about 20 s on 2 cores (each of 4 programs)
def test_reset_and_step_match_craftax(name):
    env = make_craftax_env_from_name(name, auto_reset=False)
    params = env.default_params.replace(max_timesteps=10)
    task = Craftax(name, max_steps=10)

    def ref_reset(key):
        return env.reset(key, params)

    def ref_step(key, state, action):
        obs, state, reward, done, _ = env.step(key, state, action, params)
        return obs, state, reward, done

    assert check_same_episodes(task, ref_reset, ref_step, 24) >= 1


def test_params_drawn_per_episode():
    task = Craftax(
        "Craftax-Classic-Symbolic-v1",
        max_steps=10,
        distribution=UniformParams({"day_length": (100.0, 400.0)}),
    )
    lengths = jax.vmap(lambda k: task.episode_params(k)[1].day_length)(
        jax.random.split(jax.random.key(0), 16)
    )
    assert 100 <= float(lengths.min()) < float(lengths.max()) <= 400
    assert len(np.unique(np.asarray(lengths))) > 8


def test_shapes_unknown_name_and_missing_package(monkeypatch):
    task = Craftax("Craftax-Classic-Symbolic-v1")
    assert task.obs_shape == (1345,) and task.action_shape == (17,)
    assert task.max_steps == 10000
    name = "Craftax-Classic-Symbolic-v1"
    modules = ["craftax", "craftax.craftax_env"]
    check_name_and_install_errors(monkeypatch, Craftax, name[:-3], name, modules, "craftax")
