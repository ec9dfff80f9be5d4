"""The NAVIX adapter against NAVIX's own episodes (same keys and actions)."""

import jax
import numpy as np
import pytest

from evolax.tasks import Navix
from family_helpers import check_name_and_install_errors, check_same_episodes

nx = pytest.importorskip("navix")


@pytest.mark.parametrize(
    "name, make_kwargs",
    [
        ("Navix-Empty-5x5-v0", {}),
        ("Navix-Dynamic-Obstacles-5x5-v0", {}),  # moving obstacles: NAVIX's own key
        pytest.param("Navix-DoorKey-5x5-v0", {}, marks=pytest.mark.slow),
        pytest.param(  # pixels
            "Navix-Empty-Random-5x5-v0", {"observation_fn": "rgb"}, marks=pytest.mark.slow
        ),
    ],
)
def test_reset_and_step_match_navix(name, make_kwargs):
    if make_kwargs.get("observation_fn") == "rgb":
        make_kwargs = {"observation_fn": nx.observations.rgb}
    env = nx.make(name, max_steps=12, **make_kwargs)
    task = Navix(name, max_steps=12, **make_kwargs)

    def ref_reset(key):
        timestep = env.reset(key)
        return timestep.observation, timestep

    def ref_step(key, timestep, action):
        timestep = env.step(timestep, action)
        return timestep.observation, timestep, timestep.reward, timestep.is_done()

    assert check_same_episodes(task, ref_reset, ref_step, 40) >= 1


def test_shapes_unknown_name_and_missing_package(monkeypatch):
    task = Navix("Navix-Empty-5x5-v0")
    assert task.obs_shape == (75,) and task.action_shape == (7,) and task.max_steps == 100
    check_name_and_install_errors(
        monkeypatch, Navix, "Navix-Empty-5x5", "Navix-Empty-5x5-v0", ["navix"], "navix"
    )


def test_a_configuration_names_the_observation_function_by_import_path():
    from evolax.config import build_task, resolve

    config = resolve(
        "cartpole_easy",
        [
            "task.name=navix:Navix-Empty-Random-5x5-v0",
            "task.observation_fn=navix.observations:symbolic_first_person",
        ],
    )
    task = build_task(config)
    env = nx.make("Navix-Empty-Random-5x5-v0", observation_fn=nx.observations.symbolic_first_person)
    key = jax.random.key(2)
    expected = np.asarray(env.reset(key).observation, np.float32).ravel()
    np.testing.assert_array_equal(np.asarray(task.reset(key).obs), expected)
    with pytest.raises(TypeError, match="observation_fn must be a NAVIX observation function"):
        Navix("Navix-Empty-5x5-v0", observation_fn="symbolic_first_person")
