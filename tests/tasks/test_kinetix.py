"""The Kinetix adapter: kinetix-env 3.0 requires jax <= 0.9.0, so beside evolax's jax the
package is absent and only the missing-package and name errors run; where it installs, the
adapter is checked against Kinetix's own episodes."""

import sys

import pytest

from evolax.tasks import Kinetix
from evolax.tasks.kinetix import ENV_NAMES


def test_missing_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "kinetix.environment", None)
    with pytest.raises(ImportError, match=r"^Kinetix needs .*pip install 'evolax\[kinetix\]'"):
        Kinetix("Kinetix-Symbolic-Continuous-v1")


def test_env_names():
    assert "Kinetix-Pixels-MultiDiscrete-v1" in ENV_NAMES and len(ENV_NAMES) == 9
    with pytest.raises(ValueError, match=r"did you mean 'Kinetix-Symbolic-Continuous-v1'"):
        Kinetix("Kinetix-Symbolic-Continuos-v1")


def test_reset_and_step_match_kinetix():
    pytest.importorskip("kinetix", reason="kinetix-env 3.0 requires jax <= 0.9.0")
    from kinetix.environment import (
        ActionType,
        EnvParams,
        ObservationType,
        StaticEnvParams,
        make_kinetix_env,
    )
    from kinetix.environment.ued.ued import make_reset_fn_sample_kinetix_level

    from family_helpers import check_same_episodes

    physics, static = EnvParams(max_timesteps=12), StaticEnvParams()
    env = make_kinetix_env(
        ActionType.CONTINUOUS,
        ObservationType.SYMBOLIC_FLAT,
        make_reset_fn_sample_kinetix_level(physics, static),
        physics,
        static,
        auto_reset=False,
    )
    task = Kinetix("Kinetix-Symbolic-Continuous-v1", max_steps=12)

    def ref_reset(key):
        return env.reset(key, physics)

    def ref_step(key, state, action):
        obs, state, reward, done, _ = env.step(key, state, action, physics)
        return obs, state, reward, done

    check_same_episodes(task, ref_reset, ref_step, 30)
