"""The JaxMARL adapter (a multi-agent task) against JaxMARL's own episodes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.tasks import JaxMARL, MultiAgentTask
from family_helpers import (
    allow_ranks,
    check_name_and_install_errors,
    output_for,
    random_env_action,
)

jaxmarl = pytest.importorskip("jaxmarl")


@pytest.mark.parametrize(
    "name",
    [
        "MPE_simple_spread_v3",  # cooperative, 3 agents, one shared reward
        "MPE_simple_speaker_listener_v4",  # two agents with different spaces
        pytest.param("MPE_simple_tag_v3", marks=pytest.mark.slow),  # 4 agents, competitive
    ],
)
def test_reset_and_step_match_jaxmarl(name):
    env = jaxmarl.make(name)
    task = JaxMARL(name)
    assert isinstance(task, MultiAgentTask) and task.n_agents == env.num_agents
    keys = jax.random.split(jax.random.key(3), task.max_steps + 3)
    rng = np.random.default_rng(0)
    ref_reset, ref_step = jax.jit(allow_ranks(env.reset)), jax.jit(allow_ranks(env.step))
    reset, step = jax.jit(task.reset), jax.jit(task.step)

    def padded(obs):
        rows = [np.ravel(obs[agent]) for agent in env.agents]
        return np.stack([np.pad(r, (0, task.obs_shape[0] - r.size)) for r in rows])

    ref_obs, ref_state = ref_reset(keys[0])
    state = reset(keys[0])
    np.testing.assert_allclose(state.obs, padded(ref_obs), rtol=1e-6)
    for t in range(1, task.max_steps + 3):
        actions = {
            a: random_env_action(m, None, rng)
            for a, m in zip(env.agents, task.agent_actions, strict=True)
        }
        outputs = np.zeros((task.n_agents, *task.action_shape), np.float32)
        for i, (agent, agent_map) in enumerate(zip(env.agents, task.agent_actions, strict=True)):
            outputs[i, : agent_map.action_shape[0]] = output_for(agent_map, actions[agent])
        ref_obs, ref_state, rewards, dones, _ = ref_step(keys[t], ref_state, actions)
        state, reward, done = step(state, jnp.asarray(outputs), keys[t])
        np.testing.assert_allclose(reward, [rewards[a] for a in env.agents], rtol=1e-6)
        assert bool(done) == bool(dones["__all__"]), t
        if bool(done):  # JaxMARL has reset itself: its observation is the next episode's
            break
        np.testing.assert_allclose(state.obs, padded(ref_obs), rtol=1e-5, atol=1e-6)
    assert bool(done), "the comparison reached the episode's end"


def test_shapes_unknown_name_and_missing_package(monkeypatch):
    task = JaxMARL("MPE_simple_spread_v3")
    assert (task.n_agents, task.obs_shape, task.action_shape) == (3, (18,), (5,))
    with pytest.raises(ValueError, match="action must have shape"):
        task.env_action(jnp.zeros(5))
    name = "MPE_simple_spread_v3"
    check_name_and_install_errors(
        monkeypatch,
        JaxMARL,
        "MPE_simple_spraed_v3",
        name,
        ["jaxmarl", "jaxmarl.registration"],
        "jaxmarl",
    )
