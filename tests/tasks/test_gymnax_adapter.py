"""`GymnaxTask` against gymnax itself: the same keys and actions give the same episodes, and
evolax trains gymnax's CartPole-v1 (and, marked slow, Pendulum-v1)."""

import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

gymnax = pytest.importorskip("gymnax", reason="the gymnax adapter needs gymnax")

from gymnax.environments import environment, spaces  # noqa: E402
from gymnax.wrappers.purerl import StickyActionWrapper  # noqa: E402

import evolax  # noqa: E402
from evolax.rollout import episode_keys, step_keys  # noqa: E402
from evolax.tasks.gymnax import GymnaxTask  # noqa: E402
from helpers import LEGACY_CODEGEN  # noqa: E402


def gymnax_done(out):
    """gymnax 1.0's ``step`` returns ``(obs, state, reward, terminated, truncated, info)``."""
    _, _, _, terminated, truncated, _ = out
    return bool(terminated) or bool(truncated)


def policy_output(space, action, rng):
    """A policy output that the adapter should map to the gymnax ``action``: for
    ``Discrete(n)`` random scores whose largest is at ``action``; for a ``Box`` the inverse of
    ``low + (u + 1) / 2 * (high - low)``, in float64 numpy."""
    if isinstance(space, spaces.Discrete):
        scores = rng.uniform(-1.0, 0.0, space.n)
        scores[action] = 0.5
        return jnp.asarray(scores, jnp.float32)
    low, high = np.asarray(space.low, np.float64), np.asarray(space.high, np.float64)
    unit = 2.0 * (np.asarray(action, np.float64) - low) / (high - low) - 1.0
    return jnp.asarray(np.ravel(unit), jnp.float32)


def random_env_action(space, rng):
    if isinstance(space, spaces.Discrete):
        return int(rng.integers(space.n))
    low = np.broadcast_to(np.asarray(space.low, np.float64), space.shape)
    high = np.broadcast_to(np.asarray(space.high, np.float64), space.shape)
    return rng.uniform(low, high).astype(np.float32)


RTOL = 2e-5 if LEGACY_CODEGEN else 1e-6  # helpers.LEGACY_CODEGEN: rounding apart
ATOL = 1e-5 if LEGACY_CODEGEN else 1e-6


def assert_trees_close(a, b, rtol=RTOL, atol=ATOL):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(
            np.asarray(x, np.float64), np.asarray(y, np.float64), rtol=rtol, atol=atol
        )


def make_sticky_cartpole():
    env, params = gymnax.make("CartPole-v1")
    return StickyActionWrapper(env, sticky_action_prob=0.3), params


def make_short_pendulum():
    env, params = gymnax.make("Pendulum-v1")
    return env, params.replace(max_steps_in_episode=30)


@pytest.mark.parametrize(
    "make, n_steps",
    [
        (lambda: gymnax.make("CartPole-v1"), 80),  # Discrete(2), terminates, auto-resets
        (make_short_pendulum, 70),  # Box [-2, 2], truncated at 30 steps (custom env_params)
        (lambda: gymnax.make("Breakout-MinAtar"), 40),  # obs bool[10, 10, 4], stochastic
        (make_sticky_cartpole, 60),  # a gymnax wrapper (sticky actions use the step key)
    ],
    ids=["CartPole-v1", "Pendulum-v1", "Breakout-MinAtar", "sticky-wrapper"],
)
def test_reset_and_step_match_gymnax(make, n_steps):
    env, params = make()
    task = GymnaxTask.from_env(env, params)
    space = env.action_space(params)
    rng = np.random.default_rng(0)
    keys = jax.random.split(jax.random.key(42), n_steps + 1)

    ref_obs, ref_state = env.reset(keys[0], params)
    state = jax.jit(task.reset)(keys[0])
    step = jax.jit(task.step)
    np.testing.assert_array_equal(state.obs, np.ravel(ref_obs).astype(np.float32))
    assert state.obs.shape == task.obs_shape and state.obs.dtype == jnp.float32
    n_done = 0
    for t in range(n_steps):
        action = random_env_action(space, rng)
        out = env.step(keys[t + 1], ref_state, action, params)
        state, reward, done = step(state, policy_output(space, action, rng), keys[t + 1])
        ref_obs, ref_state, ref_reward = out[0], out[1], out[2]
        expected_obs = np.ravel(ref_obs).astype(np.float32)
        np.testing.assert_allclose(state.obs, expected_obs, rtol=RTOL, atol=ATOL)
        assert_trees_close(state.env_state, ref_state)
        np.testing.assert_allclose(float(reward), float(ref_reward), rtol=RTOL, atol=ATOL)
        assert bool(done) == gymnax_done(out), t
        n_done += bool(done)
    if env.name in ("CartPole-v1", "Pendulum-v1"):
        assert n_done >= 2  # the comparison went through episode ends and gymnax's auto-reset


def test_discrete_action_is_argmax_and_box_is_rescaled():
    acrobot = GymnaxTask("Acrobot-v1")  # Discrete(3)
    assert acrobot.action_shape == (3,)
    for scores, expected in [([0.1, 0.9, -2.0], 1), ([-1.0, -3.0, -0.5], 2), ([5, 5, 1], 0)]:
        action = acrobot.env_action(jnp.asarray(scores, jnp.float32))
        assert action.shape == () and action.dtype == jnp.int32 and int(action) == expected

    class AsymmetricBox(environment.Environment):
        """A one-step environment whose observation is the action it was given."""

        def reset_env(self, key, params):
            return jnp.zeros(2), environment.EnvState(time=0)

        def step_env(self, key, state, action, params):
            return action, state.replace(time=state.time + 1), jnp.sum(action), jnp.array(True), {}

        def action_space(self, params=None):
            return spaces.Box(jnp.array([0.0, -3.0]), jnp.array([1.0, 5.0]), (2,))

    task = GymnaxTask.from_env(AsymmetricBox(), environment.EnvParams(max_steps_in_episode=1))
    assert task.action_shape == (2,) and task.max_steps == 1
    low, high = np.array([0.0, -3.0]), np.array([1.0, 5.0])
    for unit in ([-1.0, 1.0], [0.0, 0.0], [0.5, -0.25], [1.7, -4.0]):  # last: clipped
        expected = low + (np.clip(unit, -1, 1) + 1) / 2 * (high - low)
        state, reward, done = task.step(
            task.reset(jax.random.key(0)), jnp.asarray(unit, jnp.float32), jax.random.key(1)
        )
        np.testing.assert_allclose(state.env_state.time, 0)  # done: gymnax auto-reset
        np.testing.assert_allclose(reward, expected.sum(), rtol=1e-6)
        assert bool(done)


class FiveTupleStep:
    """CartPole-v1 behind gymnax < 1.0's step API: ``(obs, state, reward, done, info)``."""

    def __init__(self):
        self.env, self.default_params = gymnax.make("CartPole-v1")

    def reset(self, key, params):
        return self.env.reset(key, params)

    def step(self, key, state, action, params):
        obs, state, reward, terminated, truncated, info = self.env.step(key, state, action, params)
        return obs, state, reward, terminated | truncated, info

    def action_space(self, params):
        return self.env.action_space(params)


def test_older_five_tuple_step_api():
    old, new = GymnaxTask.from_env(FiveTupleStep()), GymnaxTask("CartPole-v1")
    keys = jax.random.split(jax.random.key(3), 40)
    old_state, new_state = old.reset(keys[0]), new.reset(keys[0])
    old_step, new_step = jax.jit(old.step), jax.jit(new.step)
    dones = []
    for t in range(1, 40):
        action = jnp.array([0.0, 1.0]) if t % 7 else jnp.array([1.0, 0.0])
        old_state, old_reward, old_done = old_step(old_state, action, keys[t])
        new_state, new_reward, new_done = new_step(new_state, action, keys[t])
        np.testing.assert_array_equal(old_state.obs, new_state.obs)
        assert float(old_reward) == float(new_reward) and bool(old_done) == bool(new_done)
        dones.append(bool(new_done))
    assert any(dones)


def reference_returns(env, params, weights, biases, key, n_repeats, max_steps, output):
    """A plain Python loop over gymnax's own reset/step with evaluate's keys: each episode's
    return counts rewards up to and including the first ``done`` (or ``max_steps`` steps).
    The policy is linear, ``obs @ w + b``, in numpy: the argmax, or tanh rescaled to the Box."""
    reset_keys, _, episode_step_keys = episode_keys(key, n_repeats)
    space = env.action_space(params)
    returns = np.zeros((len(weights), n_repeats))
    lengths = np.zeros((len(weights), n_repeats), int)
    after_done = 0.0
    for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
        for r in range(n_repeats):
            obs, state = env.reset(reset_keys[r], params)
            for t in range(max_steps):
                out = np.asarray(obs, np.float32).ravel() @ w + b
                if output == "argmax":
                    action = int(np.argmax(out))
                else:
                    low, high = float(space.low), float(space.high)
                    action = np.float32(low + (np.tanh(out) + 1) / 2 * (high - low))
                _, task_key = step_keys(episode_step_keys[r], t)
                obs, state, reward, terminated, truncated, _ = env.step(
                    task_key, state, action, params
                )
                returns[i, r] += float(reward)
                lengths[i, r] += 1
                if bool(terminated) or bool(truncated):
                    _, _, after, *_ = env.step(task_key, state, action, params)
                    after_done += float(after)  # what gymnax would pay after the episode
                    break
    return returns, lengths, after_done


def linear_population(rng, n, obs_dim, act_dim, scale):
    weights = rng.normal(0.0, scale, (n, obs_dim, act_dim)).astype(np.float32)
    biases = rng.normal(0.0, 0.1, (n, act_dim)).astype(np.float32)
    return weights, biases, [{"w": jnp.asarray(weights), "b": jnp.asarray(biases)}]


def test_evaluate_counts_rewards_until_the_first_done():
    env, params = gymnax.make("CartPole-v1")
    task = GymnaxTask("CartPole-v1", max_steps=100)
    weights, biases, population = linear_population(np.random.default_rng(1), 4, 4, 2, 1.0)
    policy = evolax.MLP(hidden_sizes=(), output_activation="linear")
    key = jax.random.key(5)
    fitness, info = jax.jit(lambda p, k: evolax.evaluate(policy, task, p, k, n_repeats=3))(
        population, key
    )
    returns, lengths, after_done = reference_returns(
        env, params, weights, biases, key, 3, task.max_steps, "argmax"
    )
    assert lengths.min() < task.max_steps == lengths.max()  # some episodes end early...
    assert after_done > 0  # ...and gymnax keeps paying reward 1 after they do
    np.testing.assert_array_equal(info.lengths, lengths)
    np.testing.assert_allclose(info.returns, returns, rtol=1e-6)
    np.testing.assert_allclose(fitness, returns.mean(axis=1), rtol=1e-6)


def test_evaluate_stops_at_max_steps_on_a_box_task():
    env, params = gymnax.make("Pendulum-v1")
    task = GymnaxTask("Pendulum-v1", max_steps=40)
    weights, biases, population = linear_population(np.random.default_rng(2), 3, 3, 1, 1.0)
    policy = evolax.MLP(hidden_sizes=(), output_activation="tanh")
    key = jax.random.key(6)
    _, info = jax.jit(lambda p, k: evolax.evaluate(policy, task, p, k, n_repeats=2))(
        population, key
    )
    returns, lengths, _ = reference_returns(env, params, weights, biases, key, 2, 40, "tanh")
    assert (lengths == 40).all() and (np.asarray(info.lengths) == 40).all()
    np.testing.assert_allclose(info.returns, returns, rtol=1e-4)


def train(task, pop_size, n_repeats, hidden_sizes, init_std, n_generations, seed=0):
    """Train with PGPE, then score the best solution on 100 test episodes (one compile)."""
    trainer = evolax.Trainer(
        algorithm=evolax.PGPE(pop_size=pop_size, optimizer=optax.adam(0.05), init_std=init_std),
        policy=evolax.MLP(hidden_sizes=hidden_sizes),
        task=task,
        n_repeats=n_repeats,
    )

    def train_and_test(key):
        state, history = trainer.run(trainer.init(key), n_generations)
        return trainer.test(state, jax.random.fold_in(key, 1), n_episodes=100), history

    returns, history = jax.jit(train_and_test)(jax.random.key(seed))
    return float(returns.mean()), history


@pytest.mark.slow  # training; the exact step matches stay in the default run
def test_trains_cartpole_v1_to_475():
    # Budget: PGPE pop 32, 2 repeats, MLP [16], 100 generations (measured: 16 of 16 seeds
    # reached a mean test return >= 475 within 30-70 generations, about 1 s after compiling).
    score, history = train(GymnaxTask("CartPole-v1"), 32, 2, (16,), 0.3, 100)
    assert score >= 475, score
    assert float(history["fitness_mean"][0]) < 200  # it did have to learn


@pytest.mark.slow
def test_trains_pendulum_v1_well_above_random():
    # Random policies score about -1200. Budget: PGPE pop 64, 4 repeats, MLP [32, 32],
    # 300 generations (measured: 6 of 6 seeds below -400 within 75-175 generations).
    score, _ = train(GymnaxTask("Pendulum-v1"), 64, 4, (32, 32), 0.1, 300)
    assert score > -400, score


def test_unknown_name_lists_valid_ones():
    with pytest.raises(ValueError, match=r"'CartPol-v1'.*did you mean 'CartPole-v1'.*Pendulum"):
        GymnaxTask("CartPol-v1")
    with pytest.raises(ValueError, match=r"registered gymnax environment.*gymnax\.registered_envs"):
        GymnaxTask("NoSuchEnv")


def test_unsupported_action_spaces():
    class TupleActions(environment.Environment):
        def reset_env(self, key, params):
            return jnp.zeros(2), environment.EnvState(time=0)

        def action_space(self, params=None):
            return spaces.Tuple([spaces.Discrete(2), spaces.Discrete(3)])

    class UnboundedBox(TupleActions):
        def action_space(self, params=None):
            return spaces.Box(-jnp.inf, jnp.inf, (2,))

    with pytest.raises(TypeError, match="MultiDiscrete and Box action spaces, got Tuple"):
        GymnaxTask.from_env(TupleActions(), environment.EnvParams(max_steps_in_episode=5))
    with pytest.raises(ValueError, match="finite"):
        GymnaxTask.from_env(UnboundedBox(), environment.EnvParams(max_steps_in_episode=5))


def test_argument_errors():
    with pytest.raises(ValueError, match="max_steps must be a positive integer"):
        GymnaxTask("CartPole-v1", max_steps=0)
    with pytest.raises(ValueError, match=r"max_steps must be at most .*\(500\), got 501"):
        GymnaxTask("CartPole-v1", max_steps=501)
    assert GymnaxTask("CartPole-v1", max_steps=20).max_steps == 20
    with pytest.raises(TypeError, match="from_env takes a gymnax environment object"):
        GymnaxTask.from_env("CartPole-v1")
    with pytest.raises(TypeError, match="gymnax environment name or object"):
        GymnaxTask(object())
    env, params = gymnax.make("CartPole-v1")
    with pytest.raises(TypeError, match="make_kwargs"):
        GymnaxTask(env, params, foo=1)
    task = GymnaxTask(env, params)
    with pytest.raises(ValueError, match=r"action_shape \(2,\)"):
        task.step(task.reset(jax.random.key(0)), jnp.zeros(3), jax.random.key(1))


def test_missing_gymnax_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnax", None)  # `import gymnax` now raises ImportError
    with pytest.raises(ImportError, match=r"pip install evolax\[gymnax\]"):
        GymnaxTask("CartPole-v1")
