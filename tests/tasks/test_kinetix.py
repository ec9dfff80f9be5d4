"""The Kinetix adapter: kinetix-env 3.0.2 requires jax <= 0.9.0, so beside evolax's usual jax
the package is absent and only the missing-package and argument errors run; in `nox -s
kinetix` (jax 0.9.0 and kinetix-env with its declared dependencies) the adapter is checked
against episodes of Kinetix's own environment, built here from Kinetix's API alone (each
variant compiles Kinetix's physics for a minute or more, so those checks are slow), and the
mutated copies of a level (its task distribution) against the level file they come from."""

import sys

import numpy as np
import pytest

from evolax.tasks import Kinetix, ParamSet
from evolax.tasks.kinetix import ENV_NAMES

TRAIN = ("s/h0_weak_thrust", "s/h2_one_wheel_car", "s/h4_thrust_aim")
HELD_OUT = ("s/h7_unicycle_left", "s/h9_explode_then_thrust_over")


def test_missing_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "kinetix.environment", None)
    with pytest.raises(ImportError, match=r"^Kinetix needs .*pip install 'evolax\[kinetix\]'"):
        Kinetix("Kinetix-Symbolic-Continuous-v1")


def test_env_names_and_arguments():
    assert "Kinetix-Pixels-MultiDiscrete-v1" in ENV_NAMES and len(ENV_NAMES) == 9
    with pytest.raises(ValueError, match=r"did you mean 'Kinetix-Symbolic-Continuous-v1'"):
        Kinetix("Kinetix-Symbolic-Continuos-v1")
    with pytest.raises(ValueError, match=r"^test must be a bool"):
        Kinetix("Kinetix-Symbolic-Continuous-v1", test="yes")
    with pytest.raises(ValueError, match=r"^test_levels are held out from levels"):
        Kinetix("Kinetix-Symbolic-Continuous-v1", test_levels=HELD_OUT)
    with pytest.raises(ValueError, match=r"^mutations must be an int >= 0, got -1"):
        Kinetix("Kinetix-Symbolic-Continuous-v1", TRAIN, mutations=-1)
    with pytest.raises(ValueError, match=r"^mutations mutate level files"):
        Kinetix("Kinetix-Symbolic-Continuous-v1", mutations=4)
    with pytest.raises(ValueError, match=r"^test_samples must be a positive int"):
        Kinetix("Kinetix-Symbolic-Continuous-v1", TRAIN, mutations=4, test_samples=0)
    levels = ParamSet(np.zeros((2, 1)), replace="level")
    with pytest.raises(ValueError, match=r"^mutations draw each episode's level"):
        Kinetix("Kinetix-Symbolic-Continuous-v1", TRAIN, mutations=4, distribution=levels)


def kinetix_own(env_name: str, levels: tuple, played: tuple, max_steps: int):
    """Kinetix's own ``(reset, step)`` for the variant, from its API: its level-list reset
    over ``played`` (static sizes the largest over ``levels``, physics the first file's), or
    its random level sampler without levels."""
    from kinetix.environment import (
        ActionType,
        EnvParams,
        ObservationType,
        StaticEnvParams,
        make_kinetix_env,
    )
    from kinetix.environment.ued.ued import (
        make_reset_fn_list_of_levels,
        make_reset_fn_sample_kinetix_level,
    )
    from kinetix.util.saving import load_evaluation_levels, load_from_json_file

    if levels:
        static = load_evaluation_levels(list(levels))[1]
        physics = load_from_json_file(levels[0])[2].replace(max_timesteps=max_steps)
        reset_fn = make_reset_fn_list_of_levels(list(played), static)
    else:
        physics, static = EnvParams(max_timesteps=max_steps), StaticEnvParams()
        reset_fn = make_reset_fn_sample_kinetix_level(physics, static)
    _, obs_name, action_name, _ = env_name.split("-")
    observation = {"Symbolic": "SYMBOLIC_FLAT", "Entity": "SYMBOLIC_ENTITY", "Pixels": "PIXELS"}
    action = {"Continuous": "CONTINUOUS", "Discrete": "DISCRETE"}.get(action_name, "MULTI_DISCRETE")
    env = make_kinetix_env(
        ActionType[action],
        ObservationType[observation[obs_name]],
        reset_fn,
        physics,
        static,
        auto_reset=False,
    )

    def reset(key):
        return env.reset(key, physics)

    def step(key, state, action):
        obs, state, reward, done, _ = env.step(key, state, action, physics)
        return obs, state, reward, done

    return reset, step


VARIANTS = {  # env name, training levels, held-out levels, test
    "symbolic-continuous-random-levels": ("Kinetix-Symbolic-Continuous-v1", (), (), False),
    "symbolic-discrete-level-set": ("Kinetix-Symbolic-Discrete-v1", TRAIN, (), False),
    "entity-multidiscrete-level-set": ("Kinetix-Entity-MultiDiscrete-v1", TRAIN, (), False),
    "pixels-continuous-one-level": ("Kinetix-Pixels-Continuous-v1", TRAIN[1:2], (), False),
    "symbolic-multidiscrete-held-out": (
        "Kinetix-Symbolic-MultiDiscrete-v1",
        TRAIN,
        HELD_OUT,
        True,
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_reset_and_step_match_kinetix(variant):
    pytest.importorskip("kinetix", reason="kinetix-env 3.0.2 requires jax <= 0.9.0")
    from family_helpers import check_same_episodes

    env_name, levels, held_out, test = VARIANTS[variant]
    task = Kinetix(env_name, levels, max_steps=6, test_levels=held_out, test=test)
    reset, step = kinetix_own(env_name, (*levels, *held_out), held_out or levels, 6)
    assert check_same_episodes(task, reset, step, 16) >= 2  # resets after episodes' ends


@pytest.mark.slow
def test_mutated_levels_are_kinetix_levels_moved_within_the_arena():
    """Each episode's level is the level file with its movable shapes moved (jointed shapes
    together, the arena's fixed floor and walls not), a new draw per episode key; the test
    task plays a fixed set of other draws, and Kinetix's own reset of a drawn level gives
    the episode's first observation."""
    pytest.importorskip("kinetix", reason="kinetix-env 3.0.2 requires jax <= 0.9.0")
    import jax
    from kinetix.util.saving import load_from_json_file

    from evolax.tasks.spaces import flatten_obs

    level = "s/h2_one_wheel_car"  # polygon 4 (a bar) jointed to circle 0 (the wheel)
    base = load_from_json_file(level)[0]
    kw = {"max_steps": 6, "mutations": 8, "test_samples": 5}
    task = Kinetix("Kinetix-Symbolic-Continuous-v1", (level,), **kw)
    test_task = Kinetix("Kinetix-Symbolic-Continuous-v1", (level,), test=True, **kw)
    states = jax.jit(jax.vmap(task.reset))(jax.random.split(jax.random.key(0), 8))
    levels = states.env_params.level
    held_out = test_task.distribution.members
    assert test_task.distribution.size == 5
    for drawn in (levels, held_out):
        polygons, circles = np.asarray(drawn.polygon.position), np.asarray(drawn.circle.position)
        np.testing.assert_array_equal(
            polygons[:, :4], np.broadcast_to(base.polygon.position[:4], polygons[:, :4].shape)
        )
        bar_to_wheel = circles[:, 0] - polygons[:, 4]
        np.testing.assert_allclose(
            bar_to_wheel,
            np.broadcast_to(base.circle.position[0] - base.polygon.position[4], (len(circles), 2)),
            atol=1e-5,
        )
        assert np.all((circles > 0) & (circles < 5))  # inside the 5 x 5 arena
    moved = np.concatenate([polygons[:, 4], circles[:, 1]], axis=1)  # the car, the ball
    assert len({tuple(np.round(m, 4)) for m in moved}) == len(moved)  # each draw its own
    training = np.asarray(levels.circle.position[:, 1])
    assert (
        not np.isin(np.round(training, 4), np.round(np.asarray(held_out.circle.position[:, 1]), 4))
        .all(1)
        .any()
    )
    test_states = jax.jit(jax.vmap(test_task.reset))(jax.random.split(jax.random.key(1), 16))
    ball = np.asarray(test_states.env_params.level.circle.position[:, 1])
    assert (
        np.abs(ball[:, None] - np.asarray(held_out.circle.position[None, :, 1])).sum(-1).min(1)
        < 1e-6
    ).all()
    own = jax.jit(lambda lv: task.env.reset(jax.random.key(0), task.env_params.physics, lv)[0])
    first = jax.tree.map(lambda x: x[3], levels)
    np.testing.assert_array_equal(states.obs[3], flatten_obs(own(first)))
