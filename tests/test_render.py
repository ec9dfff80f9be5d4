"""Cart-pole frames, episode GIFs and learning-curve plots."""

from __future__ import annotations

import json

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

from evolax import MLP, CartPoleSwingUp, ObsStats, Policy, Task, evaluate
from evolax.render import (
    _read_metrics,
    episode_states,
    plot_learning_curves,
    render_episode,
    save_gif,
)
from evolax.tasks.cartpole import CartPoleState, observe
from helpers import Countdown

BLUE = np.array([0, 0, 255], np.uint8)
RED = np.array([255, 0, 0], np.uint8)


def cart_pole_state(x=0.0, theta=0.0, steps=7):
    physics = jnp.array([x, 0.0, theta, 0.0], jnp.float32)
    return CartPoleState(obs=observe(physics), physics=physics, steps=jnp.array(steps, jnp.int32))


def pixels(frame, color):
    """``(rows, cols)`` of the pixels of exactly ``color``."""
    return np.nonzero(np.all(frame == color, axis=-1))


def centre(frame, color):
    """Centre ``(row, col)`` of the bounding box of the pixels of ``color``."""
    rows, cols = pixels(frame, color)
    assert rows.size > 0, f"no pixels of colour {color}"
    return (rows.min() + rows.max()) / 2, (cols.min() + cols.max()) / 2


def as_population(params):
    return jax.tree.map(lambda leaf: leaf[None], params)


def push_right(policy, task, key):
    """MLP params whose action saturates at +1: the cart leaves the track early."""
    params = policy.init(key, task.obs_shape, task.action_shape)
    params[-1]["b"] = jnp.full_like(params[-1]["b"], 5.0)
    return params


class NoisyMLP(Policy):
    """An MLP whose action moves with a per-episode offset (reset key) and per-step noise."""

    mlp: MLP = MLP(hidden_sizes=(8,))

    def init(self, key, obs_shape, action_shape):
        return self.mlp.init(key, obs_shape, action_shape)

    def reset(self, key):
        return {"offset": jax.random.normal(key, (1,))}

    def apply(self, params, obs, state, key):
        action, _ = self.mlp.apply(params, obs, None, key)
        noise = jax.random.normal(key, action.shape)
        return action + 0.5 * state["offset"] + 0.5 * noise, state


class NoisyCartPole(Task):
    """Cart-pole whose actions are perturbed with noise from the step key."""

    max_steps: int = eqx.field(static=True, default=150)
    obs_shape: tuple[int, ...] = eqx.field(static=True, default=(5,))
    action_shape: tuple[int, ...] = eqx.field(static=True, default=(1,))

    def reset(self, key):
        return CartPoleSwingUp(hard=True, max_steps=self.max_steps).reset(key)

    def step(self, state, action, key):
        noisy = action + jax.random.normal(key, action.shape)
        return CartPoleSwingUp(max_steps=self.max_steps).step(state, noisy, key)


# --- frames -------------------------------------------------------------------------------


def test_frame_shape_and_dtype():
    frame = CartPoleSwingUp().render(cart_pole_state())
    assert frame.shape == (400, 600, 3)
    assert frame.dtype == np.uint8
    assert np.all(frame[-1, -1] == 255)  # white background


def test_pole_points_up_down_and_left():
    task = CartPoleSwingUp()
    pole = 0.6 * 100
    # theta = pi/2 leans the pole towards -x: see test_drawing_follows_the_physics
    for theta, (d_row, d_col) in [(0.0, (-1, 0)), (np.pi, (1, 0)), (np.pi / 2, (0, -1))]:
        frame = task.render(cart_pole_state(theta=theta))
        cart_row, cart_col = centre(frame, RED)
        rows, cols = pixels(frame, BLUE)
        # the pole's pixels run from the cart's centre to 0.6 m away in the expected direction
        far_row = rows.min() if d_row < 0 else rows.max()
        far_col = cols.max() if d_col > 0 else cols.min()
        pole_row, pole_col = rows.mean() - cart_row, cols.mean() - cart_col
        np.testing.assert_allclose(
            [pole_row, pole_col], [d_row * pole / 2, d_col * pole / 2], atol=4
        )
        if d_row:
            assert abs(far_row - cart_row) == pytest.approx(pole, abs=5)
            assert np.all(d_row * (rows - cart_row) > -5)  # nothing on the other side
        else:
            assert abs(far_col - cart_col) == pytest.approx(pole, abs=5)
            assert np.all(d_col * (cols - cart_col) > -5)


def test_drawing_follows_the_physics():
    """Pushing the cart right from upright makes the pole lag behind: it is drawn leaning left."""
    task = CartPoleSwingUp()
    state = cart_pole_state(theta=0.0)
    for _ in range(20):
        state, _, _ = task.step(state, jnp.ones(1), jax.random.key(0))
    assert float(state.physics[1]) > 0  # the cart accelerates right
    frame = task.render(state)
    _, cart_col = centre(frame, RED)
    _, cols = pixels(frame, BLUE)
    assert cols.mean() < cart_col - 3


def test_cart_moves_right_as_x_increases():
    task = CartPoleSwingUp()
    columns = [centre(task.render(cart_pole_state(x=x)), RED)[1] for x in (-1.0, 0.0, 1.5)]
    np.testing.assert_allclose(columns, [200.0, 300.0, 450.0], atol=1.0)
    rows = [centre(task.render(cart_pole_state(x=x)), RED)[0] for x in (-1.0, 1.5)]
    assert rows[0] == pytest.approx(rows[1])


def test_frame_shows_the_step():
    task = CartPoleSwingUp()
    first, later = (task.render(cart_pole_state(steps=s)) for s in (3, 48))
    corner = (slice(0, 40), slice(0, 120))
    assert not np.array_equal(first[corner], later[corner])
    assert np.array_equal(first[100:], later[100:])  # only the text differs


def test_base_task_has_no_renderer(key):
    task = Countdown()
    with pytest.raises(NotImplementedError, match="Countdown has no renderer"):
        task.render(task.reset(key))


# --- episodes -----------------------------------------------------------------------------


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_episode_states_match_evaluate(hard, seed):
    key = jax.random.key(seed)
    task = CartPoleSwingUp(hard=hard, max_steps=200)
    policy = MLP(hidden_sizes=(16,))
    params = policy.init(jax.random.key(100 + seed), task.obs_shape, task.action_shape)
    states, rewards, length = episode_states(policy, task, params, key)
    assert states.physics.shape == (201, 4)
    assert rewards.shape == (200,)
    np.testing.assert_array_equal(states.steps, np.arange(201))
    fitness, info = evaluate(policy, task, as_population(params), key, n_repeats=1)
    assert int(length) == int(info.lengths[0, 0])
    np.testing.assert_allclose(np.sum(rewards[: int(length)]), fitness[0], rtol=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_episode_states_use_evaluates_keys(seed):
    """Every key matters here (reset, policy reset, policy step, task step)."""
    key = jax.random.key(seed)
    task, policy = NoisyCartPole(), NoisyMLP()
    params = policy.init(jax.random.key(7), task.obs_shape, task.action_shape)
    _, rewards, length = episode_states(policy, task, params, key)
    fitness, info = evaluate(policy, task, as_population(params), key)
    assert int(length) == int(info.lengths[0, 0])
    np.testing.assert_allclose(np.sum(rewards[: int(length)]), fitness[0], rtol=1e-5)


def test_episode_states_end_at_first_done_with_obs_stats(key):
    task = CartPoleSwingUp(max_steps=200)
    policy = MLP(hidden_sizes=(8,))
    params = push_right(policy, task, jax.random.key(5))
    stats = ObsStats(
        count=jnp.array(50.0),
        mean=jnp.array([0.5, -0.2, 0.1, 0.0, 0.3]),
        m2=50.0 * jnp.array([4.0, 0.25, 1.0, 2.0, 9.0]),
    )
    states, rewards, length = episode_states(policy, task, params, key, obs_stats=stats)
    length = int(length)
    assert 1 < length < 200  # the cart leaves the track
    assert abs(float(states.physics[length, 0])) > 2.4
    assert np.all(np.abs(states.physics[:length, 0]) <= 2.4)
    fitness, info = evaluate(policy, task, as_population(params), key, obs_stats=stats)
    assert length == int(info.lengths[0, 0])
    np.testing.assert_allclose(np.sum(rewards[:length]), fitness[0], rtol=1e-5)
    # the statistics matter: without them the episode differs
    _, plain_rewards, _ = episode_states(policy, task, params, key)
    assert not np.allclose(plain_rewards, rewards)


@pytest.mark.parametrize("every", [1, 4])
def test_render_episode_frames_and_return(tmp_path, key, every):
    task = CartPoleSwingUp(max_steps=200)
    policy = MLP(hidden_sizes=(8,))
    params = push_right(policy, task, jax.random.key(3))
    path = tmp_path / "gifs" / "episode.gif"
    n_frames, episode_return = render_episode(policy, task, params, key, path, every=every)
    fitness, info = evaluate(policy, task, as_population(params), key)
    length = int(info.lengths[0, 0])
    assert length < 200
    assert n_frames == length // every + 1 + (length % every != 0)  # the last state too
    assert episode_return == pytest.approx(float(fitness[0]), rel=1e-5)
    with Image.open(path) as gif:
        assert gif.n_frames == n_frames  # every frame differs (the step counter)
        assert gif.size == (600, 400)
    still = tmp_path / "last.png"
    assert render_episode(policy, task, params, key, still) == (1, episode_return)
    last, _, _ = episode_states(policy, task, params, key)
    with Image.open(still) as png:
        np.testing.assert_array_equal(
            np.asarray(png), task.render(jax.tree.map(lambda x: x[length], last))
        )


# --- GIFs ---------------------------------------------------------------------------------


def test_save_gif_reads_back(tmp_path):
    frames = []
    for i in range(5):
        frame = np.zeros((32, 48, 3), np.uint8)
        frame[:, : 8 * (i + 1)] = (255, 128, 0)
        frames.append(frame)
    path = save_gif(frames, tmp_path / "a" / "b" / "anim.gif", fps=25)
    with Image.open(path) as gif:
        assert gif.format == "GIF"
        assert gif.n_frames == 5
        assert gif.size == (48, 32)
        assert gif.info["loop"] == 0
        assert gif.info["duration"] == 40
        gif.seek(2)
        last = np.asarray(gif.convert("RGB"))
    np.testing.assert_array_equal(last[0, 23], [255, 128, 0])
    np.testing.assert_array_equal(last[0, 24], [0, 0, 0])


def test_save_gif_rejects_bad_frames(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        save_gif([], tmp_path / "x.gif")
    with pytest.raises(ValueError, match="uint8"):
        save_gif([np.zeros((4, 4, 3), np.float32)], tmp_path / "x.gif")
    with pytest.raises(ValueError, match="frames\\[1\\]"):
        save_gif([np.zeros((4, 4, 3), np.uint8), np.zeros((4, 5, 3), np.uint8)], tmp_path / "x.gif")


# --- learning curves ----------------------------------------------------------------------


def write_metrics(path, train=True):
    rows = [{"kind": "config", "note": "ignored"}]
    if train:
        for g in range(1, 31):
            mean = 10.0 * g
            rows.append(
                {
                    "kind": "train",
                    "generation": g,
                    "fitness_max": mean + 20.0,
                    "fitness_mean": mean,
                    "fitness_min": mean - 30.0,
                    "wall_time": 0.5 * ((g + 9) // 10),
                }
            )
    for g in (10, 20, 30):
        rows.append(
            {
                "kind": "test",
                "generation": g,
                "test_mean": 10.0 * g,
                "test_std": 5.0,
                "test_min": 10.0 * g - 12.0,
                "test_max": 10.0 * g + 9.0,
                "wall_time": 0.5 * (g // 10),  # the chunk's end, as the runner writes it
            }
        )
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n\n")


def test_plot_learning_curves_writes_png(tmp_path):
    metrics = tmp_path / "run" / "metrics.jsonl"
    metrics.parent.mkdir()
    write_metrics(metrics)
    out = tmp_path / "plots" / "curves.png"
    assert plot_learning_curves(metrics, out) == out
    with Image.open(out) as png:
        assert png.format == "PNG"
        assert png.size == (1440, 540)  # 12 x 4.5 inches at 120 dpi
        image = np.asarray(png.convert("RGB"))
    assert np.mean(np.all(image == 255, axis=-1)) > 0.5  # mostly white background
    colours = np.unique(image.reshape(-1, 3), axis=0)
    assert len(colours) > 20  # lines, band, markers and text were drawn


def test_metrics_rows_kept_once_per_generation(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    write_metrics(metrics)
    rerun = {"kind": "train", "generation": 25, "fitness_max": 1.0, "fitness_mean": 0.0}
    with metrics.open("a") as file:  # a resumed run logs generation 25 again
        file.write(json.dumps({**rerun, "fitness_min": -1.0, "wall_time": 9.0}) + "\n")
    train, test = _read_metrics(metrics)
    assert [row["generation"] for row in train] == list(range(1, 31))
    assert train[24]["wall_time"] == 9.0
    assert [row["generation"] for row in test] == [10, 20, 30]


def test_plot_learning_curves_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="metrics"):
        plot_learning_curves(tmp_path / "missing" / "metrics.jsonl", tmp_path / "out.png")
    metrics = tmp_path / "metrics.jsonl"
    write_metrics(metrics, train=False)
    with pytest.raises(ValueError, match="no rows with kind 'train'"):
        plot_learning_curves(metrics, tmp_path / "out.png")
    assert not (tmp_path / "out.png").exists()
