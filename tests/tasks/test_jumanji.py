"""The Jumanji adapter against Jumanji's own episodes (same keys and actions)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.tasks import Jumanji
from family_helpers import check_name_and_install_errors, check_same_episodes

jumanji = pytest.importorskip("jumanji")


@pytest.mark.parametrize(
    "name, make_kwargs, n_steps",
    [
        ("Snake-v1", {"num_rows": 6, "num_cols": 6}, 40),  # Discrete(4), masked, a grid
        ("TSP-v1", {}, 25),  # Discrete(20) with a mask, ends after 20 cities
        ("Minesweeper-v0", {}, 30),  # MultiDiscrete(10, 10), a joint mask
        ("Cleaner-v0", {}, 30),  # MultiDiscrete(4, 4, 4), one mask row per agent
    ],
)
def test_reset_and_step_match_jumanji(name, make_kwargs, n_steps):
    env = jumanji.make(name, **make_kwargs)
    task = Jumanji(name, **make_kwargs)
    assert task.mask_field == "action_mask"

    def ref_reset(key):
        state, timestep = env.reset(key)
        return timestep.observation, state

    def ref_step(key, state, action):
        state, timestep = env.step(state, action)
        return timestep.observation, state, timestep.reward, timestep.last()

    mask = lambda obs: obs.action_mask  # noqa: E731
    check_same_episodes(task, ref_reset, ref_step, n_steps, ref_mask=mask)


def test_shapes_and_masked_argmax():
    task = Jumanji("Snake-v1")
    assert task.obs_shape == (12 * 12 * 5 + 1 + 4,) and task.action_shape == (4,)
    assert task.max_steps == 4000
    mask = jnp.array([False, True, True, False])
    assert int(task.env_action(jnp.array([9.0, 1.0, 2.0, 8.0]), mask)) == 2


def test_unknown_name_and_missing_package(monkeypatch):
    with pytest.raises(ValueError, match="distribution must be None"):
        Jumanji("Snake-v1", distribution=object())
    check_name_and_install_errors(
        monkeypatch, Jumanji, "Snake-v2", "Snake-v1", ["jumanji"], "jumanji"
    )


def test_config_name_builds_the_adapter():
    from evolax import tasks
    from evolax.schema import find

    target, kwargs = find("jumanji:TSP-v1", tasks.REGISTRY, "task")
    assert target is Jumanji and kwargs == {"env_name": "TSP-v1"}
    np.testing.assert_equal(
        jax.eval_shape(Jumanji(**kwargs).reset, jax.random.key(0)).obs.shape, (81,)
    )
