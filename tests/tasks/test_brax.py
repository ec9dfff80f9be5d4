"""`Brax` against Brax itself: the same keys and actions give the same episodes, returns count
rewards up to the first ``done`` as EvoJAX scores Brax episodes, and evolax trains through it.

The reference is Brax's bare environment (``brax.envs.get_environment``, no wrappers), with
the episode-length rule and EvoJAX's masked sum of rewards written out here. Brax compiles
slowly (seconds for the inverted pendulum on the ``spring`` backend, about a minute for the
ant), so the reference checks share one compiled pendulum reference; they are marked slow
(``nox -s slow``) with the ant on the default ``mjx`` backend and a longer pendulum training
run; the default run trains on Brax's ``fast`` environment and checks the arguments.
"""

import base64
import json
import os
import sys
import zlib

# MuJoCo picks its OpenGL platform when first imported; EGL draws without a display
os.environ.setdefault("MUJOCO_GL", "egl")

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

brax = pytest.importorskip("brax", reason="the Brax task needs brax: pip install evolax[brax]")

from brax import envs  # noqa: E402

import evolax  # noqa: E402
from evolax.render import episode_states, render_episode  # noqa: E402
from evolax.rollout import episode_keys  # noqa: E402
from evolax.tasks.brax import BACKENDS, Brax, registered_envs  # noqa: E402

ENV, BACKEND = "inverted_pendulum", "spring"  # the cheapest Brax physics to compile
MAX_STEPS, POP_SIZE = 40, 6


def mlp(params, obs):
    """evolax's ``MLP`` written out: tanh hidden layers and a tanh output."""
    x = obs
    for layer in params:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return x


def run_episodes(reset, step, population, reset_keys, max_steps):
    """Every individual (outer axis) on every reset key (inner axis) for ``max_steps`` steps
    of ``step(state, mlp(params, state.obs)) -> (state, outputs)``, vmapped and scanned.

    Returns the first states and the outputs stacked as ``[pop, repeats, max_steps]``.
    """

    def episode(params, key):
        def body(state, _):
            return step(state, mlp(params, state.obs))

        first = reset(key)
        return first, jax.lax.scan(body, first, None, length=max_steps)[1]

    return jax.vmap(jax.vmap(episode, in_axes=(None, 0)), in_axes=(0, None))(population, reset_keys)


def bare_rollout(env_name, backend, population, key, n_repeats, max_steps):
    """Brax's own environment, no wrappers, on ``evaluate``'s reset keys: the first states,
    then per step ``(obs, reward, done, body positions)``."""
    env = envs.get_environment(env_name, backend=backend)

    def step(state, action):
        state = env.step(state, action)
        return state, (state.obs, state.reward, state.done, state.pipeline_state.x.pos)

    reset_keys = episode_keys(key, n_repeats)[0]
    with jax.numpy_rank_promotion("allow"):  # Brax relies on it; conftest.py forbids it
        return jax.jit(lambda p, k: run_episodes(env.reset, step, p, k, max_steps))(
            population, reset_keys
        )


def masked_returns(reward, done):
    """EvoJAX's ``SimManager`` score, ``score += reward * mask; mask *= 1 - done``, over the
    ``[..., steps]`` axis, where ``done`` is Brax's termination or the last step (truncation
    by Brax's ``EpisodeWrapper``); also the episode lengths and the reward paid after done."""
    reward, done = np.asarray(reward, np.float64), np.asarray(done, np.float64).copy()
    done[..., -1] = 1.0
    returns, lengths, after = np.zeros(reward.shape[:-1]), np.zeros(reward.shape[:-1], int), 0.0
    mask = np.ones(reward.shape[:-1])
    for t in range(reward.shape[-1]):
        returns += reward[..., t] * mask
        lengths += mask.astype(int)
        after += float(np.sum(reward[..., t] * (1.0 - mask)))
        mask = mask * (1.0 - done[..., t])
    return returns, lengths, after


@pytest.fixture(scope="module")
def pendulum():
    """Six MLPs on the inverted pendulum, and Brax's own episodes for them (compiled once):
    ``(task, policy, population, key, (first_states, (obs, reward, done, positions)))``,
    arrays ``[pop, 1, ...]`` (one repeat)."""
    task = Brax(ENV, backend=BACKEND, max_steps=MAX_STEPS)
    policy = evolax.MLP(hidden_sizes=(8,))
    keys = jax.random.split(jax.random.key(3), POP_SIZE)
    population = jax.vmap(lambda k: policy.init(k, task.obs_shape, task.action_shape))(keys)
    key = jax.random.key(7)
    reference = bare_rollout(ENV, BACKEND, population, key, 1, MAX_STEPS)
    return task, policy, population, key, reference


@pytest.fixture(scope="module")
def episodes(pendulum):
    """Each individual's episode through the task (``evolax.render.episode_states``, whose
    episode is ``evaluate``'s first for the key): ``[(states, rewards, length), ...]``."""
    task, policy, population, key, _ = pendulum
    members = [jax.tree.map(lambda x, i=i: x[i], population) for i in range(POP_SIZE)]
    return [jax.device_get(episode_states(policy, task, p, key)) for p in members]


@pytest.mark.slow  # Brax's own episodes (the module's 24 s fixture): a reference check
def test_reset_and_step_match_brax(pendulum, episodes):
    task, _, _, _, (ref_first, (ref_obs, ref_reward, ref_done, _)) = pendulum
    assert (task.obs_shape, task.action_shape, task.max_steps) == ((4,), (1,), MAX_STEPS)
    assert task.backend == BACKEND and task.env_name == ENV
    steps = np.arange(1, MAX_STEPS + 1)
    endings = set()
    for i, (states, rewards, length) in enumerate(episodes):
        obs, info = states.obs, states.env_state.info
        assert obs.dtype == rewards.dtype == np.float32
        np.testing.assert_array_equal(obs[0], ref_first.obs[i, 0])  # reset
        np.testing.assert_allclose(obs[1:], ref_obs[i, 0], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(rewards, ref_reward[i, 0], rtol=1e-6)
        # done: Brax's termination, or the max_steps-th step (then truncation, unless terminated)
        terminated = np.asarray(ref_done[i, 0]) != 0
        done = np.asarray(states.env_state.done[1:]) != 0
        np.testing.assert_array_equal(done, terminated | (steps >= MAX_STEPS))
        np.testing.assert_array_equal(info["truncation"][1:], ~terminated & (steps >= MAX_STEPS))
        np.testing.assert_array_equal(info["steps"], np.arange(MAX_STEPS + 1))
        assert int(length) == int(np.argmax(done)) + 1  # the rollout's done is Brax's
        endings.add("truncated" if info["truncation"][int(length)] else "terminated")
    assert endings == {"terminated", "truncated"}  # both ways an episode ends were checked


@pytest.mark.slow  # Brax's own episodes (the module's 24 s fixture): a reference check
def test_evaluate_sums_rewards_until_the_first_done(pendulum):
    task, policy, population, key, (_, (_, ref_reward, ref_done, _)) = pendulum
    fitness, info = jax.jit(lambda p, k: evolax.evaluate(policy, task, p, k))(population, key)
    returns, lengths, after_done = masked_returns(ref_reward, ref_done)
    assert lengths.min() < MAX_STEPS == lengths.max()  # terminated and truncated episodes
    assert after_done > 0  # Brax keeps paying reward 1 after the pendulum falls
    np.testing.assert_array_equal(info.lengths, lengths)
    np.testing.assert_allclose(info.returns, returns, rtol=1e-6)
    np.testing.assert_allclose(fitness, returns.mean(axis=1), rtol=1e-6)


def train(task, n_generations, seed=0):
    """PGPE (pop 16, 2 repeats, a linear policy, normalised observations); metrics history."""
    trainer = evolax.Trainer(
        algorithm=evolax.PGPE(pop_size=16, optimizer=optax.adam(0.1), init_std=0.5),
        policy=evolax.MLP(hidden_sizes=()),
        task=task,
        n_repeats=2,
        normalize_obs=True,
    )
    _, history = jax.jit(lambda k: trainer.run(trainer.init(k), n_generations))(
        jax.random.key(seed)
    )
    return {name: np.asarray(value) for name, value in history.items()}


def test_pgpe_trains_on_brax_fast():
    # Smoke run on Brax's `fast` test environment (compiles in seconds): reward is the
    # position of a point pushed forward while the action is positive, so the best return
    # over 50 steps is 0.02^2 * sum_{t<=50} t (t + 1) / 2 = 8.84. Measured: seeds 0-7 start
    # near 4 and reach 6.0-8.7 in 10 generations.
    history = train(Brax("fast", max_steps=50), 10)
    mean = history["fitness_mean"]
    assert mean[0] < 5.0 and mean[-3:].max() > 7.0, mean
    assert (history["env_steps"] == 16 * 2 * 50).all()


@pytest.mark.slow
def test_pgpe_learns_to_balance_the_pendulum():
    # Measured: seeds 0-7 start at a mean fitness of 10-25 and reach 78-100 (of 100) within
    # 30 generations (about 30 s to compile, 1 s to run).
    history = train(Brax(ENV, backend=BACKEND, max_steps=100), 30)
    mean = history["fitness_mean"]
    assert mean[0] < 30.0 and mean[-5:].max() > 70.0, mean


@pytest.mark.slow  # Brax's own episodes (the module's 24 s fixture): a reference check
def test_html_viewer_shows_the_episode(tmp_path, pendulum, episodes):
    task, policy, population, key, (ref_first, (*_, ref_positions)) = pendulum
    i = next(i for i, (_, _, length) in enumerate(episodes) if length < MAX_STEPS)
    path = tmp_path / "episode.html"
    params = jax.tree.map(lambda x: x[i], population)
    n_frames, _ = render_episode(policy, task, params, key, path)
    states, _, length = episodes[i]
    assert n_frames == int(length) + 1 < MAX_STEPS  # the states until the first done
    page = path.read_text()
    assert "brax-viewer" in page
    encoded = page.split('var system = "')[1].split('"')[0]
    system = json.loads(zlib.decompress(base64.b64decode(encoded)))
    poses = np.asarray([x["pos"] for x in system["states"]["x"]])
    # the body positions of Brax's own episode
    expected = np.concatenate([ref_first.pipeline_state.x.pos[i], ref_positions[i, 0]])
    np.testing.assert_allclose(poses, expected[:n_frames], rtol=1e-5, atol=1e-6)
    assert len(task.render_html(states)) > len(page)  # all max_steps + 1 stacked states


@pytest.mark.slow  # Brax's own episodes (the module's 24 s fixture): a reference check
def test_render_draws_what_brax_draws(episodes):
    from brax.io import image

    task = Brax(ENV, backend=BACKEND, max_steps=MAX_STEPS)
    state = jax.tree.map(lambda x: x[1], episodes[0][0])
    try:
        frame = task.render(state, height=48, width=64)
    except NotImplementedError as error:
        pytest.skip(f"no OpenGL context for MuJoCo here: {error}")
    expected = image.render_array(task.sys, state.env_state.pipeline_state, height=48, width=64)
    assert frame.shape == (48, 64, 3) and frame.dtype == np.uint8
    np.testing.assert_array_equal(frame, expected)
    assert frame.std() > 0  # not a blank picture


def test_argument_errors():
    with pytest.raises(ValueError, match=r"'inverted_pendulm'.*did you mean 'inverted_pendulum'"):
        Brax("inverted_pendulm")
    with pytest.raises(ValueError, match="available: 'ant'"):
        Brax("no_such_env")
    with pytest.raises(TypeError, match="env_name must be"):
        Brax(3)
    with pytest.raises(ValueError, match=r"backend must be one of .*got 'warp'"):
        Brax(ENV, backend="warp")
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="max_steps must be a positive integer"):
            Brax(ENV, backend=BACKEND, max_steps=bad)
    with pytest.raises(TypeError, match=r"could not create 'inverted_pendulum'.*\['wheels'\]"):
        Brax(ENV, backend=BACKEND, wheels=4)
    with pytest.raises(ValueError, match="could not create 'swimmer' with backend='spring'"):
        Brax("swimmer", backend="spring")
    task = Brax(ENV, backend=BACKEND, max_steps=3)
    state = jax.eval_shape(task.reset, jax.random.key(0))
    with pytest.raises(ValueError, match=r"action must have shape action_shape \(1,\)"):
        jax.eval_shape(task.step, state, jnp.zeros(2), jax.random.key(0))
    assert set(BACKENDS) == {"mjx", "generalized", "positional", "spring"}
    assert {"ant", "halfcheetah", "humanoid", ENV} <= set(registered_envs())


def test_missing_brax_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "brax", None)  # `import brax` now raises ImportError
    with pytest.raises(ImportError, match=r"pip install evolax\[brax\]"):
        Brax("ant")


@pytest.mark.slow
def test_ant_on_mjx_matches_brax():
    # The ant on the default backend (about a minute to compile each program on CPU), with
    # EvoJAX's Brax benchmark policy, against Brax's own episodes. Its contact dynamics are
    # chaotic in float32: two batch layouts of the same Brax step differ by ~1e-5 after one
    # step and ~1e-2 after fifteen, so the episodes are short and the tolerance loose.
    max_steps = 8
    task = Brax("ant", max_steps=max_steps)
    assert (task.backend, task.obs_shape, task.action_shape) == ("mjx", (27,), (8,))
    policy = evolax.MLP(hidden_sizes=(32, 32, 32, 32))
    keys = jax.random.split(jax.random.key(0), 2)
    population = jax.vmap(lambda k: policy.init(k, task.obs_shape, task.action_shape))(keys)
    key = jax.random.key(1)
    fitness, info = jax.jit(lambda p, k: evolax.evaluate(policy, task, p, k, n_repeats=2))(
        population, key
    )
    _, (_, reward, done, _) = bare_rollout("ant", "mjx", population, key, 2, max_steps)
    returns, lengths, _ = masked_returns(reward, done)
    np.testing.assert_array_equal(info.lengths, lengths)
    np.testing.assert_allclose(info.returns, returns, rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(fitness, returns.mean(axis=1), rtol=1e-3, atol=1e-2)
