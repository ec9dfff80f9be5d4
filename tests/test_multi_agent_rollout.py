"""The rollout of multi-agent tasks: which individual plays which agent, and its fitness."""

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax import Trainer
from evolax.algorithms import PGPE
from evolax.policies import MLP, Direct, Team
from evolax.rollout import evaluate, evaluate_on
from evolax.tasks import MultiAgentTask


@chex.dataclass(frozen=True)
class _State:
    obs: jax.Array
    steps: jax.Array


class Echo(MultiAgentTask):
    """Each agent is rewarded its action's first entry; the observation is the agent's index
    and the step count (so obs normalisation sees per-agent values)."""

    n_agents: int = eqx.field(static=True, default=4)
    max_steps: int = eqx.field(static=True, default=5)
    obs_shape: tuple[int, ...] = eqx.field(static=True, default=(2,))
    action_shape: tuple[int, ...] = eqx.field(static=True, default=(1,))

    def _obs(self, steps):
        agents = jnp.arange(self.n_agents, dtype=jnp.float32)
        return jnp.stack([agents, jnp.full(self.n_agents, steps, jnp.float32)], axis=1)

    def reset(self, key):
        return _State(obs=self._obs(0), steps=jnp.zeros([], jnp.int32))

    def step(self, state, action, key):
        self.check_actions(action)
        steps = state.steps + 1
        return _State(obs=self._obs(steps), steps=steps), action[:, 0], steps >= self.max_steps


def test_each_individual_is_scored_by_its_own_agent():
    task = Echo()
    population = jnp.arange(12, dtype=jnp.float32)[:, None]  # 3 environments of 4 agents
    fitness, info = evaluate(Direct(), task, population, jax.random.PRNGKey(0), n_repeats=2)
    np.testing.assert_allclose(fitness, 5 * np.arange(12))
    assert info.returns.shape == (12, 2) and info.lengths.shape == (12, 2)
    np.testing.assert_array_equal(info.lengths, 5)
    chunked, _ = evaluate_on(Direct(), task, population, jax.random.PRNGKey(0), 2, pop_chunk=4)
    np.testing.assert_allclose(chunked, fitness)


def test_observations_reach_each_agent_and_feed_the_statistics():
    """Agent i's policy sees obs [i, t]; normalisation statistics count every agent's obs."""
    from evolax.normalize import ObsStats

    class ReadAgent(Direct):
        def apply(self, params, obs, state, key):
            return obs[:1] * params, state

    task = Echo(n_agents=3)
    population = jnp.ones((6, 1))
    fitness, info = evaluate(
        ReadAgent(), task, population, jax.random.PRNGKey(0), 2, ObsStats.zeros((2,))
    )
    np.testing.assert_allclose(fitness, 5 * np.tile(np.arange(3), 2))  # agent index x 5 steps
    stats = info.obs_stats
    assert float(stats.count) == 6 * 2 * 5  # individuals x repeats x steps seen
    np.testing.assert_allclose(stats.mean, [1.0, 2.0])  # agents 0..2; steps 0..4


def test_population_must_fill_whole_environments():
    with pytest.raises(ValueError, match=r"multiple of task\.n_agents=4"):
        evaluate(Direct(), Echo(), jnp.ones((6, 1)), jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="pop_chunk"):
        evaluate_on(Direct(), Echo(), jnp.ones((8, 1)), jax.random.PRNGKey(0), pop_chunk=2)
    with pytest.raises(ValueError, match="pop_size=6 must be a multiple"):
        Trainer(
            algorithm=PGPE(pop_size=6, optimizer=optax.sgd(0.1)),
            policy=Direct(),
            task=Echo(),
        )


def test_team_runs_each_agent_with_its_own_params_and_key():
    team = Team(MLP(hidden_sizes=(3,)), n_agents=2)
    params = team.init(jax.random.PRNGKey(0), (2,), (1,))
    obs = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    action, _ = team.apply(params, obs, team.reset(jax.random.PRNGKey(1)), jax.random.PRNGKey(2))
    for i in range(2):
        one = jax.tree.map(lambda x, i=i: x[i], params)
        expected, _ = team.policy.apply(one, obs[i], None, None)
        np.testing.assert_allclose(action[i], expected, rtol=1e-6)


def test_trainer_learns_and_tests_the_best_in_every_agent():
    """PGPE raises every agent's echo; the test plays the centre as all n_agents agents."""
    trainer = Trainer(
        algorithm=PGPE(pop_size=8, optimizer=optax.adam(0.1), init_std=0.5),
        policy=Direct(initializer=jax.nn.initializers.zeros),
        task=Echo(),
        n_repeats=1,
    )
    state = trainer.init(jax.random.PRNGKey(0))
    run = jax.jit(chex.assert_max_traces(lambda s: trainer.run(s, 20), n=1))
    state, _ = run(state)
    state, _ = run(state)
    centre = float(trainer.algorithm.best(state.algo_state)[0])
    assert centre > 2.0
    returns = trainer.test(state, jax.random.PRNGKey(1), n_episodes=3)
    np.testing.assert_allclose(returns, 5 * centre, rtol=1e-5)


def test_rendered_episode_plays_the_solution_in_every_agent():
    from evolax.render import episode_states

    states, rewards, length = episode_states(
        Direct(), Echo(), jnp.array([1.5]), jax.random.PRNGKey(0)
    )
    assert rewards.shape == (5, 4) and int(length) == 5
    np.testing.assert_array_equal(rewards, 1.5)
    assert states.obs.shape == (6, 4, 2)
