"""The JAX environment families' presets build the families' own environments (shapes against
each family's own reset), and the in-place XLand ruleset set holds the rulesets it says; in
`nox -s slow`, each preset trains two generations at a tiny size."""

import importlib

import jax
import numpy as np
import pytest

from evolax.config import build_task, build_trainer, presets, resolve
from evolax.tasks.spaces import flatten_obs

FAMILY_PRESETS = {
    "navix_empty": "navix",
    "minigrid_empty": "xminigrid",
    "jumanji_game2048": "jumanji",
    "craftax_classic": "craftax",
    "mpe_spread": "jaxmarl",
    "xland_mt_map_elites": "xminigrid",
    "kinetix_levels": "kinetix",  # in `nox -s kinetix` (kinetix-env requires jax <= 0.9.0)
}
"""The presets of tests/test_config.py's exceptions: each needs its family's package."""


def family(name: str):
    return pytest.importorskip(FAMILY_PRESETS[name])


def own_obs_size(name: str) -> int:
    """One flattened observation of the preset's environment, as the family itself resets it."""
    with jax.numpy_rank_promotion("allow"):  # as the adapters, the families promote ranks
        return _own_obs_size(name)


def _own_obs_size(name: str) -> int:
    task = resolve(name)["task"]
    env_name = task["name"].split(":", 1)[1]
    key = jax.random.key(0)
    if name == "navix_empty":
        navix = family(name)
        observe = navix.observations.symbolic_first_person  # the preset's import path
        assert task["observation_fn"] == "navix.observations:symbolic_first_person"
        obs = navix.make(env_name, observation_fn=observe).reset(key).observation
    elif FAMILY_PRESETS[name] == "xminigrid":
        env, params = family(name).make(env_name)
        obs = env.reset(params, key).observation
    elif name == "jumanji_game2048":
        obs = family(name).make(env_name).reset(key)[1].observation
    elif name == "craftax_classic":
        module = importlib.import_module("craftax.craftax_env")
        env = module.make_craftax_env_from_name(env_name, auto_reset=False)
        obs = env.reset(key, env.default_params)[0]
    elif name == "kinetix_levels":
        obs = kinetix_own_reset(task, env_name, task["levels"])(key)
    else:  # an agent's observation
        obs = family(name).make(env_name).reset(key)[0]["agent_0"]
    return int(flatten_obs(obs).shape[0])


def kinetix_own_reset(task: dict, env_name: str, played: list[str]):
    """The preset's first observation from Kinetix's API, ``(key, level) -> obs``: its
    level-list reset over the files ``played`` (``level=None``) or the ``level`` given, at
    the static sizes of the preset's files."""
    family("kinetix_levels")
    from kinetix.environment import ActionType, ObservationType, make_kinetix_env
    from kinetix.environment.ued.ued import make_reset_fn_list_of_levels
    from kinetix.util.saving import load_evaluation_levels, load_from_json_file

    assert env_name == "Kinetix-Symbolic-Continuous-v1"
    static = load_evaluation_levels([*task["levels"], *task.get("test_levels", ())])[1]
    physics = load_from_json_file(task["levels"][0])[2]
    reset = make_reset_fn_list_of_levels(played, static)
    env = make_kinetix_env(
        ActionType.CONTINUOUS, ObservationType.SYMBOLIC_FLAT, reset, physics, static
    )

    def own_reset(key, level=None):
        with jax.numpy_rank_promotion("allow"):  # as the adapters, Kinetix promotes ranks
            return env.reset(key, physics, override_reset_state=level)[0]

    return own_reset


def test_the_family_presets_are_listed():
    assert set(FAMILY_PRESETS) <= set(presets())


@pytest.mark.parametrize("name", sorted(FAMILY_PRESETS))
def test_each_preset_builds_its_familys_environment(name):
    family(name)
    config = resolve(name)
    task = build_task(config)
    assert task.obs_shape == (own_obs_size(name),)
    assert task.max_steps == (config["task"]["max_steps"] or 25)  # MPE's own: 25 steps


def test_the_xland_preset_gives_multi_task_map_elites_one_cell_per_ruleset():
    family("xland_mt_map_elites")
    trainer = build_trainer(resolve("xland_mt_map_elites"))
    rulesets = trainer.task.distribution
    assert trainer.algorithm.n_tasks == rulesets.size == 24
    centroids = trainer.algorithm.archive.centroids.array
    np.testing.assert_array_equal(centroids, np.asarray(rulesets.vectors()))


def test_the_kinetix_preset_tests_on_held_out_mutations_of_its_level():
    """The training task plays a new mutated copy of the level file per episode, the test
    task one of a fixed set of other copies; Kinetix's own reset of that copy gives its
    first observation, and the unmutated file another."""
    family("kinetix_levels")
    config = resolve("kinetix_levels")
    trainer, task = build_trainer(config), config["task"]
    env_name = task["name"].split(":", 1)[1]
    held_out = trainer.evaluation_task.distribution
    assert held_out.size == task["test_samples"] and task["mutations"] > 0
    balls = np.asarray(held_out.members.circle.position)  # [64, circles, 2]
    own = jax.jit(kinetix_own_reset(task, env_name, task["levels"]))
    for seed in range(3):
        key = jax.random.key(seed)
        test_state, state = trainer.evaluation_task.reset(key), trainer.task.reset(key)
        test_level, level = test_state.env_params.level, state.env_params.level
        assert (np.abs(balls - np.asarray(test_level.circle.position)).sum((1, 2)) < 1e-6).any()
        assert (np.abs(balls - np.asarray(level.circle.position)).sum((1, 2)) > 1e-4).all()
        np.testing.assert_array_equal(test_state.obs, flatten_obs(own(key, test_level)))
        np.testing.assert_array_equal(state.obs, flatten_obs(own(key, level)))
        assert not np.array_equal(state.obs, flatten_obs(own(key)))  # the file, unmutated


def test_near_object_rulesets_are_xlands_own_goals_on_every_object_once():
    pytest.importorskip("xminigrid")
    from xminigrid.core.constants import Colors, Tiles
    from xminigrid.core.goals import AgentNearGoal

    from evolax.tasks.xminigrid import near_object_rulesets

    rulesets = near_object_rulesets(n_shapes=2, n_colours=3, n_distractors=2, seed=1)
    assert rulesets.size == 6 and rulesets.replace == "ruleset"
    targets = set()
    for i in range(rulesets.size):
        member = rulesets.member(i)
        tiles = np.asarray(member.init_tiles)
        goal = AgentNearGoal.decode(member.goal)
        np.testing.assert_array_equal(np.asarray(goal.tile), tiles[0])  # stand next to it
        np.testing.assert_array_equal(
            np.asarray(member.goal), np.asarray(AgentNearGoal(tile=tiles[0]).encode())
        )
        assert len({tuple(t) for t in tiles}) == 3  # two distractors, both other objects
        targets.add(tuple(tiles[0]))
    shapes, colours = (Tiles.BALL, Tiles.SQUARE), (Colors.RED, Colors.GREEN, Colors.BLUE)
    assert targets == {(s, c) for s in shapes for c in colours}
    again = near_object_rulesets(n_shapes=2, n_colours=3, n_distractors=2, seed=1)
    np.testing.assert_array_equal(rulesets.vectors(), again.vectors())  # seeded
    with pytest.raises(ValueError, match="n_distractors must be in"):
        near_object_rulesets(n_shapes=1, n_colours=2, n_distractors=2)


TINY = {
    "algorithm.pop_size": 6,
    "trainer.n_repeats": 1,
    "task.max_steps": 5,
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FAMILY_PRESETS))
def test_each_preset_trains_two_generations_at_a_tiny_size(name):
    family(name)
    settings = {**TINY, "trainer.pop_chunk": None}
    if name == "mpe_spread":
        settings.pop("task.max_steps")
    trainer = build_trainer(resolve(name, [f"{k}={v}" for k, v in settings.items()]))
    state, metrics = trainer.run(trainer.init(jax.random.key(0)), 2)
    assert np.all(np.isfinite(np.asarray(metrics["fitness_mean"])))
    assert int(state.generation) == 2
