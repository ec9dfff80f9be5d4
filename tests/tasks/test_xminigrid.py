"""The XLand-MiniGrid adapter against XLand-MiniGrid's own episodes, rulesets included."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.tasks import XLandMiniGrid, XLandRulesets
from family_helpers import check_name_and_install_errors, check_same_episodes

xminigrid = pytest.importorskip("xminigrid")


def small_benchmark(n: int = 4):
    """``n`` XLand rulesets (no download): reach a ball of colour ``i``, placed on the grid."""
    from xminigrid.benchmarks import Benchmark
    from xminigrid.core.constants import Tiles
    from xminigrid.core.goals import AgentNearGoal

    tiles = jnp.array([[Tiles.BALL, colour] for colour in range(1, n + 1)], jnp.uint8)
    return Benchmark(
        goals=jnp.stack([AgentNearGoal(tile=tile).encode() for tile in tiles]),
        rules=jnp.zeros((n, 1, 7), jnp.uint8),
        init_tiles=tiles[:, None, :],
        num_rules=jnp.zeros(n, jnp.uint8),
    )


@pytest.mark.parametrize(
    "name, rulesets",
    [
        ("MiniGrid-Empty-5x5", False),
        ("XLand-MiniGrid-R1-9x9", True),  # a ruleset drawn per episode
        pytest.param("MiniGrid-DoorKey-5x5", False, marks=pytest.mark.slow),
    ],
)
def test_reset_and_step_match_xminigrid(name, rulesets):
    env, params = xminigrid.make(name)
    params = params.replace(max_steps=12)
    benchmark = small_benchmark() if rulesets else None
    distribution = XLandRulesets(benchmark) if rulesets else None
    task = XLandMiniGrid(name, max_steps=12, distribution=distribution)

    def ref_reset(key):
        episode_params = params
        if rulesets:  # the adapter draws the ruleset with a key split off the episode's
            key, task_key = jax.random.split(key)
            episode_params = params.replace(ruleset=benchmark.sample_ruleset(task_key))
        timestep = env.reset(episode_params, key)
        return timestep.observation, (timestep, episode_params)

    def ref_step(key, state, action):
        timestep, episode_params = state
        timestep = env.step(episode_params, timestep, action)
        return timestep.observation, (timestep, episode_params), timestep.reward, timestep.last()

    assert check_same_episodes(task, ref_reset, ref_step, 40) >= 1


def test_rulesets_vary_per_episode_and_split():
    distribution = XLandRulesets(small_benchmark(4))
    train, held_out = distribution.split(0.5)
    assert train.benchmark.num_rulesets() == 2 and held_out.benchmark.num_rulesets() == 2
    task = XLandMiniGrid("XLand-MiniGrid-R1-9x9", distribution=distribution)
    goals = jax.vmap(lambda k: task.episode_params(k)[1].ruleset.goal)(
        jax.random.split(jax.random.key(0), 32)
    )
    assert len(np.unique(np.asarray(goals), axis=0)) == 4  # every ruleset drawn


def test_shapes_unknown_name_and_missing_package(monkeypatch):
    task = XLandMiniGrid("MiniGrid-Empty-5x5")
    assert task.obs_shape == (98,) and task.action_shape == (6,) and task.max_steps == 100
    with pytest.raises(TypeError, match="TaskDistribution"):
        XLandMiniGrid("MiniGrid-Empty-5x5", distribution=small_benchmark())
    check_name_and_install_errors(
        monkeypatch,
        XLandMiniGrid,
        "MiniGrid-Empty5x5",
        "MiniGrid-Empty-5x5",
        ["xminigrid"],
        "xminigrid",
    )
