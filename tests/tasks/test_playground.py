"""`Playground` against MuJoCo Playground itself: the same keys and actions give the episodes
Playground's own `reset`/`step` give; the DM Control suite loads offline, and an environment
whose assets are fetched at run time fails, offline, with one line. Slow (importing
Playground and compiling MJX take a minute): `nox -s slow`."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("mujoco_playground", reason="the Playground task needs playground")

from evolax.config import build_trainer, resolve  # noqa: E402
from evolax.policies import MLP  # noqa: E402
from evolax.rollout import evaluate  # noqa: E402
from evolax.rollout.episode import episode_keys, step_keys  # noqa: E402
from evolax.tasks import Playground  # noqa: E402


def test_episodes_equal_playground_own():
    task = Playground("CartpoleBalance", max_steps=30)
    policy = MLP(hidden_sizes=(8,))
    p0 = policy.init(jax.random.key(0), task.obs_shape, task.action_shape)
    members = jax.tree.map(
        lambda x: x[None] + 0.5 * jax.random.normal(jax.random.key(1), (3, *x.shape)), p0
    )
    key = jax.random.key(5)
    fitness, info = evaluate(policy, task, members, key, n_repeats=2)

    env = task.env
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    reset_keys, policy_keys, episode_step_keys = episode_keys(key, 2)
    expected = []
    for i in range(3):
        params = jax.tree.map(lambda x, i=i: x[i], members)
        returns = []
        for r in range(2):
            with jax.numpy_rank_promotion("allow"):
                state = reset(reset_keys[r])
            obs_state, total = policy.reset(policy_keys[r]), 0.0
            for t in range(task.max_steps):
                obs = jnp.asarray(state.obs, jnp.float32)
                action, obs_state = policy.apply(
                    params, obs, obs_state, step_keys(episode_step_keys[r], t)[0]
                )
                with jax.numpy_rank_promotion("allow"):
                    state = step(state, action)
                total += float(state.reward)
                if float(state.done):
                    break
            returns.append(total)
        expected.append(np.mean(returns))
    np.testing.assert_allclose(fitness, expected, rtol=1e-4)
    assert int(info.lengths.max()) == 30


@pytest.mark.parametrize("preset", ["cartpole_easy", "dmc_cartpole_balance"])
def test_configuration_reaches_it_and_trains_a_generation(preset):
    config = resolve(
        preset,
        ["task.name=playground:CartpoleBalance", "task.max_steps=20", "algorithm.pop_size=8"],
    )
    trainer = build_trainer(config)
    _, metrics = jax.jit(trainer.run, static_argnums=1)(trainer.init(jax.random.key(0)), 2)
    assert np.all(np.isfinite(metrics["fitness_mean"]))


def test_assets_fetched_at_run_time_fail_offline_in_one_line():
    with pytest.raises(RuntimeError, match="fetches its assets") as error:
        Playground("Go1JoystickFlatTerrain")
    assert "\n" not in str(error.value)


def test_unknown_names_are_refused_with_the_close_ones():
    with pytest.raises(ValueError, match="did you mean 'CartpoleBalance'"):
        Playground("CartpoleBalanc")
