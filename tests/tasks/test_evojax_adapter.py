"""EvoJAXTask and EvoJAXPolicy against EvoJAX 0.2.17's own batched tasks and policies."""

import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("evojax", reason="the EvoJAX adapters are checked against EvoJAX itself")

import jax
import jax.numpy as jnp
import numpy as np
import optax
from evojax.policy import MLPPolicy, PermutationInvariantPolicy
from evojax.policy.base import PolicyNetwork
from evojax.task.base import VectorizedTask
from evojax.task.cartpole import CartPoleSwingUp as EvoJAXCartPole

from evolax import MLP, PGPE, Trainer, evaluate
from evolax.evojax_interop import legacy_key
from evolax.policies.evojax import EvoJAXObservation, EvoJAXPolicy
from evolax.rollout import episode_keys
from evolax.runner import train
from evolax.tasks.evojax import EvoJAXTask
from helpers import assert_same_or_rounding

FROM_EVOJAX = Path(__file__).resolve().parents[2] / "docs" / "from_evojax.md"


def leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(tree)]


def assert_trees_equal(actual, expected):
    assert jax.tree.structure(actual) == jax.tree.structure(expected)
    for a, e in zip(leaves(actual), leaves(expected), strict=True):
        assert_same_or_rounding(a, e, rtol=1e-5, atol=1e-5)


def test_reset_and_step_equal_evojax_batched_under_vmap_and_scan():
    evojax_task = EvoJAXCartPole()
    task = EvoJAXTask(evojax_task)
    n_envs, n_steps = 6, 250
    keys = jax.random.split(jax.random.key(3), n_envs)
    # actions beyond [-1, 1] are clipped; strong pushes drive carts off the track, so episodes
    # end and EvoJAX resets them itself mid-run
    actions = jnp.asarray(
        np.random.default_rng(0).uniform(-1.5, 1.5, (n_steps, n_envs, 1)), jnp.float32
    )

    state = evojax_task.reset(jax.random.key_data(keys))  # EvoJAX: raw uint32[B, 2] keys
    expected = [state]
    expected_rewards, expected_dones = [], []
    for t in range(n_steps):
        state, reward, done = evojax_task.step(state, actions[t])
        expected.append(state)
        expected_rewards.append(reward)
        expected_dones.append(done)
    expected_dones = np.stack(expected_dones)
    assert expected_dones.any(), "the check should cover EvoJAX's reset after done"

    @jax.jit
    def adapted(keys, actions):
        first = jax.vmap(task.reset)(keys)

        def body(state, action):
            state, reward, done = jax.vmap(task.step)(state, action, keys)
            return state, (state, reward, done)

        _, trajectory = jax.lax.scan(body, first, actions)
        return first, trajectory

    first, (states, rewards, dones) = adapted(keys, actions)
    assert type(first) is type(expected[0])  # EvoJAX's own TaskState, without the batch axis
    assert_trees_equal(first, expected[0])
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *expected[1:])
    assert_trees_equal(states, stacked)
    assert_same_or_rounding(rewards, np.stack(expected_rewards), rtol=1e-5, atol=1e-5)
    assert rewards.dtype == jnp.float32 and dones.dtype == jnp.bool_
    np.testing.assert_array_equal(dones, expected_dones.astype(bool))


def test_task_shapes_and_jit_with_the_task_as_an_argument():
    task = EvoJAXTask(EvoJAXCartPole(max_steps=300))
    assert (task.obs_shape, task.action_shape, task.max_steps) == ((5,), (1,), 300)
    assert jax.tree.leaves(task) == []  # the EvoJAX object is static configuration
    state = jax.jit(lambda t, k: t.reset(k))(task, jax.random.key(0))
    assert state.obs.shape == (5,)


def test_render_draws_evojax_picture():
    evojax_task = EvoJAXCartPole()
    task = EvoJAXTask(evojax_task)
    state = task.reset(jax.random.key(1))
    image = task.render(state)
    expected = np.asarray(
        evojax_task.render(evojax_task.reset(legacy_key(jax.random.key(1))[None]), 0)
    )
    assert image.dtype == np.uint8 and image.shape == expected.shape == (600, 600, 3)
    np.testing.assert_array_equal(image, expected)


def test_mlp_policy_actions_equal_get_actions():
    network = MLPPolicy(input_dim=5, hidden_dims=[16, 16], output_dim=1)
    policy = EvoJAXPolicy(network)
    batch = 7
    params = jax.random.normal(jax.random.key(0), (batch, network.num_params))
    obs = jax.random.normal(jax.random.key(1), (batch, 5))
    keys = jax.random.split(jax.random.key(2), batch)
    assert policy.init(keys[0], (5,), (1,)).shape == (network.num_params,)

    expected, _ = jax.jit(network.get_actions)(
        EvoJAXObservation(obs=obs), params, network.reset(EvoJAXObservation(obs=obs))
    )
    states = jax.vmap(policy.reset)(keys)
    actions, new_states = jax.jit(jax.vmap(policy.apply))(params, obs, states, keys)
    assert actions.shape == (batch, 1)
    np.testing.assert_array_equal(actions, expected)
    assert_trees_equal(new_states, states)


@pytest.mark.slow  # a reference check against EvoJAX (8 s); the step-by-step match stays
def test_stateful_policy_threads_its_state_like_evojax():
    """EvoJAX's permutation-invariant policy keeps LSTM states and the previous action."""
    network = PermutationInvariantPolicy(act_dim=1, hidden_dim=8)
    policy = EvoJAXPolicy(network, obs_shape=(5,))
    batch = 4
    params = 0.3 * jax.random.normal(jax.random.key(0), (batch, network.num_params))
    obs = jax.random.normal(jax.random.key(1), (6, batch, 5))
    keys = jax.random.split(jax.random.key(2), batch)

    expected_state = network.reset(EvoJAXObservation(obs=obs[0]))
    state = jax.vmap(policy.reset)(keys)
    # the per-episode keys replace EvoJAX's fixed split(PRNGKey(0), batch); the rest is equal
    np.testing.assert_array_equal(state.keys, jax.random.key_data(keys))
    assert_trees_equal(state.replace(keys=expected_state.keys), expected_state)
    act = jax.jit(jax.vmap(policy.apply))
    reference = jax.jit(network.get_actions)
    for t in range(obs.shape[0]):
        expected, expected_state = reference(EvoJAXObservation(obs=obs[t]), params, expected_state)
        actions, state = act(params, obs[t], state, keys)
        # float32 rounding: XLA batches the matmuls of 4 rows and of 1 row differently
        np.testing.assert_allclose(actions, expected, rtol=1e-5, atol=1e-6)
        for a, e in zip(state.lstm_states, expected_state.lstm_states, strict=True):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    assert float(jnp.max(jnp.abs(state.prev_actions))) > 0.0


def evojax_rollout(evojax_task, network, params, reset_keys):
    """EvoJAX's own batched episodes: the sum of rewards up to each episode's first done, and
    the number of steps taken until then."""

    @jax.jit
    def step(task_state, policy_state):
        actions, policy_state = network.get_actions(task_state, params, policy_state)
        task_state, reward, done = evojax_task.step(task_state, actions)
        return task_state, policy_state, reward, done

    task_state = evojax_task.reset(reset_keys)
    policy_state = network.reset(task_state)
    returns = np.zeros(params.shape[0], np.float32)
    lengths = np.zeros(params.shape[0], np.int32)
    alive = np.ones(params.shape[0], bool)
    for _ in range(evojax_task.max_steps):
        task_state, policy_state, reward, done = step(task_state, policy_state)
        returns += np.where(alive, np.asarray(reward), np.float32(0.0))
        lengths += alive
        alive &= ~np.asarray(done, bool)
    return returns, lengths


@pytest.mark.slow  # a reference check against EvoJAX (8 s); the step-by-step match stays
def test_evaluate_equals_evojax_rollout():
    """Fitness through both adapters equals episodes run by EvoJAX's own task and policy."""
    evojax_task = EvoJAXCartPole(max_steps=150)
    network = MLPPolicy(input_dim=5, hidden_dims=[8], output_dim=1)
    pop_size, n_repeats = 5, 3
    # all-zero parameters act 0 and last the whole episode; large ones push carts off the track
    scales = jnp.array([0.0, 0.1, 0.5, 1.0, 2.0])[:, None]
    population = scales * jax.random.normal(jax.random.key(0), (pop_size, network.num_params))
    key = jax.random.key(7)

    fitness, info = jax.jit(
        lambda p, k: evaluate(EvoJAXPolicy(network), EvoJAXTask(evojax_task), p, k, n_repeats)
    )(population, key)

    reset_keys = jax.random.key_data(episode_keys(key, n_repeats)[0])  # evolax's episode seeds
    rows = np.repeat(np.asarray(population), n_repeats, axis=0)  # individual-major
    tiled_keys = jnp.tile(reset_keys, (pop_size, 1))
    returns, lengths = evojax_rollout(evojax_task, network, rows, tiled_keys)
    assert lengths.min() < 150 == lengths.max(), "want episodes that end early and ones that last"
    np.testing.assert_array_equal(info.lengths, lengths.reshape(pop_size, n_repeats))
    np.testing.assert_allclose(info.returns, returns.reshape(pop_size, n_repeats), rtol=1e-5)
    np.testing.assert_allclose(fitness, returns.reshape(pop_size, n_repeats).mean(1), rtol=1e-5)


@pytest.mark.slow  # training; the step-by-step match stays in the default run
def test_trainer_learns_evojax_cartpole_through_the_adapter():
    """PGPE with an evolax MLP on EvoJAX's cart-pole (easy, 1000 steps): an untrained policy
    scores under 200, spinning the pole at the centre about 500, balancing it about 900.
    60 generations of pop 32 x 2 repeats: test scores 595-619 over seeds 0-2."""
    trainer = Trainer(
        algorithm=PGPE(pop_size=32, optimizer=optax.adam(0.05), init_std=0.1, std_lr=0.1),
        policy=MLP(hidden_sizes=(32, 32)),
        task=EvoJAXTask(EvoJAXCartPole()),
        n_repeats=2,
    )
    test = jax.jit(lambda state, key: trainer.test(state, key, 16))
    state = trainer.init(jax.random.key(0))
    before = float(test(state, jax.random.key(99)).mean())
    state, history = jax.jit(trainer.run, static_argnums=1)(state, 60)
    after = float(test(state, jax.random.key(99)).mean())
    assert before < 200 and after >= 500, (before, after)
    assert int(state.generation) == 60 and history["fitness_max"].shape == (60,)


@pytest.mark.slow
def test_evojax_configuration_through_both_adapters():
    """EvoJAX's cart-pole configuration (PGPE pop 64, 16 repeats, adam 0.05, MLPPolicy
    [64, 64] from zeros) with EvoJAX's task and policy, 300 generations."""
    trainer = Trainer(
        algorithm=PGPE(pop_size=64, optimizer=optax.adam(0.05), init_std=0.1, std_lr=0.1),
        policy=EvoJAXPolicy(MLPPolicy(input_dim=5, hidden_dims=[64, 64], output_dim=1)),
        task=EvoJAXTask(EvoJAXCartPole()),
        n_repeats=16,
    )
    result = train(trainer, 300, seed=0, log_interval=50, test_interval=100, progress=False)
    assert result.summary["best_test_mean"] >= 850.0, result.summary


class MultiAgent(VectorizedTask):
    max_steps, obs_shape, act_shape, multi_agent_training = 10, (3,), (1,), True

    def reset(self, key):
        raise NotImplementedError

    def step(self, state, action):
        raise NotImplementedError


class CustomReset(PolicyNetwork):
    num_params = 3

    def reset(self, states):
        return super().reset(states)

    def get_actions(self, t_states, params, p_states):
        return params[:, :1], p_states


def test_bad_arguments_are_clear_errors():
    with pytest.raises(TypeError, match="VectorizedTask"):
        EvoJAXTask(object())
    with pytest.raises(ValueError, match="multi_agent_training"):
        EvoJAXTask(MultiAgent())
    task = EvoJAXTask(EvoJAXCartPole())
    state = task.reset(jax.random.key(0))
    with pytest.raises(ValueError, match=r"action_shape \(1,\)"):
        task.step(state, jnp.zeros(2), jax.random.key(0))
    with pytest.raises(TypeError, match="key must be a typed PRNG key"):
        task.reset(jnp.zeros(2))

    with pytest.raises(TypeError, match="PolicyNetwork"):
        EvoJAXPolicy(MLP())
    with pytest.raises(ValueError, match="obs_shape is required"):
        EvoJAXPolicy(CustomReset())
    with pytest.raises(ValueError, match="init_std"):
        EvoJAXPolicy(CustomReset(), obs_shape=(5,), init_std=-1.0)
    policy = EvoJAXPolicy(CustomReset(), obs_shape=(5,))
    with pytest.raises(ValueError, match="obs_shape"):
        policy.init(jax.random.key(0), (4,), (1,))
    with pytest.raises(ValueError, match=r"params must have shape \(num_params,\) = \(3,\)"):
        policy.apply(jnp.zeros(4), jnp.zeros(5), policy.reset(jax.random.key(0)), None)


def test_missing_evojax_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "evojax", None)
    with pytest.raises(ImportError, match="pip install evojax"):
        EvoJAXTask(EvoJAXCartPole())
    with pytest.raises(ImportError, match="pip install evojax"):
        EvoJAXPolicy(MLPPolicy(input_dim=5, hidden_dims=[4], output_dim=1))


def test_guide_example_runs(capsys):
    text = FROM_EVOJAX.read_text()
    section = text[text.index("## Using EvoJAX tasks and policies") :]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks
    namespace: dict = {}
    exec(compile("\n".join(blocks), str(FROM_EVOJAX), "exec"), namespace)
    assert namespace["best"].shape == (namespace["policy"].num_params,)


FROM_EVOSAX = FROM_EVOJAX.parent / "from_evosax.md"


def evosax_guide_blocks(language: str) -> str:
    (block,) = re.findall(rf"```{language}\n(.*?)```", FROM_EVOSAX.read_text(), flags=re.S)
    return block


def test_evosax_guide_evolax_loop_finds_the_sphere_minimum():
    """docs/from_evosax.md's evolax loop finds the shifted sphere's minimiser x = 1."""
    namespace: dict = {}
    exec(compile(evosax_guide_blocks("python"), str(FROM_EVOSAX), "exec"), namespace)
    np.testing.assert_allclose(namespace["evolax_mean"], np.ones(10), atol=1e-4)
    assert float(namespace["f"](namespace["evolax_mean"])) < 1e-10


@pytest.mark.slow  # runs evosax's own loop for the guide's comparison
def test_evosax_guide_evosax_loop_finds_the_same_minimum():
    """The evosax 0.3 loop the guide translates runs as written and agrees (x = 1)."""
    pytest.importorskip("evosax", reason="the guide's evosax side needs evosax 0.3")
    namespace: dict = {}
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        exec(compile(evosax_guide_blocks("py"), str(FROM_EVOSAX), "exec"), namespace)
    np.testing.assert_allclose(namespace["evosax_mean"], np.ones(10), atol=1e-4)
