"""WaterWorld and MultiAgentWaterWorld against EvoJAX's implementations, stepped side by side."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.tasks import MultiAgentWaterWorld, WaterWorld

ew = pytest.importorskip("evojax.task.waterworld", reason="EvoJAX is the reference")
ema = pytest.importorskip("evojax.task.ma_waterworld", reason="EvoJAX is the reference")

FOOD = 2  # EvoJAX's bubble type codes
AGENT = 4


def reference_obs(agent, agent_vel, items, items_vel, food, valid, radius=10.0, reach=120.0):
    """EvoJAX's ``get_obs`` (waterworld.py, 0.2.17) written out per sensor in float64 numpy."""
    walls = [(0, 0, 0, 600), (0, 600, 600, 600), (600, 600, 600, 0), (600, 0, 0, 0)]
    x1, y1 = agent
    rows = []
    for i in range(30):
        angle = np.float32(i) * np.float32(2 * 3.14 / 30)
        x2, y2 = x1 + reach * np.cos(angle), y1 + reach * np.sin(angle)
        wall_d, wall_hit = [], []
        for x3, y3, x4, y4 in walls:
            den = (y4 - y3) * (x2 - x1) - (x4 - x3) * (y2 - y1)
            ua = 0 if np.isclose(den, 0) else ((x4 - x3) * (y1 - y3) - (y4 - y3) * (x1 - x3)) / den
            ub = 0 if np.isclose(den, 0) else ((x2 - x1) * (y1 - y3) - (y2 - y1) * (x1 - x3)) / den
            hit = 0 < ua < 1 and 0 < ub < 1
            wall_d.append(np.hypot(ua * (x2 - x1), ua * (y2 - y1)) if hit else reach)
            wall_hit.append(hit)
        item_d, item_hit = [], []
        for (x3, y3), ok in zip(items, valid, strict=True):
            v = np.array([y2 - y1, x1 - x2])
            d = abs((x2 - x1) * (y1 - y3) - (x1 - x3) * (y2 - y1)) / np.linalg.norm(v)
            up = np.array([x3, y3]) + v / np.linalg.norm(v) * d
            if abs(x2 - x1) > abs(y2 - y1):
                ua = (up[0] - x1) / (x2 - x1)
            else:
                ua = (up[1] - y1) / (y2 - y1)
            hit = d <= radius and 0 < ua < 1
            item_d.append(np.hypot(up[0] - x1, up[1] - y1) if hit and ok else reach)
            item_hit.append(hit)
        w, j = int(np.argmin(wall_d)), int(np.argmin(item_d))
        row = [reach, reach, reach, 0.0, 0.0]
        if min(wall_d) < min(item_d):
            if wall_hit[w]:
                row[0] = wall_d[w]
        elif item_hit[j]:
            row[1 if food[j] else 2] = item_d[j]
            row[3:] = items_vel[j]
        rows.append(np.array(row) / [reach, reach, reach, 1, 1])
    return np.concatenate([np.concatenate(rows), agent_vel])


def reference_step(agent, agent_vel, items, items_vel, food, valid, direction):
    """EvoJAX's ``step_fn`` rules in float64 numpy: thrust, damping, walls, eating."""
    push = {0: (0, -1), 1: (0, 1), 2: (-1, 0), 3: (1, 0)}[direction]
    agent_vel = (agent_vel + push) * 0.95
    agent = agent + agent_vel
    if ((agent < 1) | (agent > 599)).any():
        agent_vel = np.zeros(2)
    agent = np.clip(agent, 1, 599)
    items = items + items_vel
    items_vel = np.where((items < 1) | (items > 599), -items_vel, items_vel)
    items = np.clip(items, 1, 599)
    eaten = (np.hypot(*(items - agent).T) < 20) & valid
    reward = np.sum(eaten & food) - np.sum(eaten & ~food)
    return agent, agent_vel, items, items_vel, valid & ~eaten, reward


def test_episode_matches_a_numpy_transcription_of_evojax():
    """Forced thrusts in a crowded pool: every position, reward and sensor reading as the
    float64 transcription of EvoJAX's rules computes them."""
    task = WaterWorld(n_items=150, max_steps=80)
    state = jax.jit(task.reset)(jax.random.PRNGKey(1))
    ref = [np.asarray(x, np.float64) for x in (state.agent_pos, state.agent_vel)]
    ref += [np.asarray(x, np.float64) for x in (state.item_pos, state.item_vel)]
    food, valid = np.asarray(state.item_food), np.asarray(state.item_valid)
    np.testing.assert_allclose(state.obs, reference_obs(*ref, food, valid), atol=1e-4)
    step = jax.jit(task.step)
    directions = np.random.default_rng(0).integers(0, 4, 80)
    key = jax.random.PRNGKey(0)
    total = 0
    for t, direction in enumerate(directions):
        state, reward, done = step(state, jnp.log(jax.nn.one_hot(direction, 4)), key)
        *ref, valid, ref_reward = reference_step(*ref, food, valid, int(direction))
        assert float(reward) == ref_reward
        np.testing.assert_allclose(state.agent_pos, ref[0], atol=1e-3)
        np.testing.assert_array_equal(state.item_valid, valid)
        if t % 3 == 0 or ref_reward:  # the sensor transcription is slow
            np.testing.assert_allclose(state.obs, reference_obs(*ref, food, valid), atol=1e-3)
        total += abs(ref_reward)
    assert total >= 2 and bool(done)


def _one_hot(direction):
    """A probability vector choosing ``direction`` surely (EvoJAX) and its log (evolax)."""
    p = jax.nn.one_hot(direction, 4)
    return p, jnp.log(p)


def _check_single(state, ref, atol=1e-4):
    agent, items = ref.agent_state, ref.item_state
    np.testing.assert_allclose(state.agent_pos, [agent.pos_x[0, 0], agent.pos_y[0, 0]], atol=atol)
    np.testing.assert_allclose(state.agent_vel, [agent.vel_x[0, 0], agent.vel_y[0, 0]], atol=atol)
    np.testing.assert_allclose(state.item_pos[:, 0], items.pos_x[0], atol=atol)
    np.testing.assert_allclose(state.item_pos[:, 1], items.pos_y[0], atol=atol)
    np.testing.assert_allclose(state.item_vel[:, 0], items.vel_x[0], atol=atol)
    np.testing.assert_array_equal(state.item_food, np.asarray(items.bubble_type[0]) == FOOD)
    np.testing.assert_array_equal(state.item_valid, np.asarray(items.valid[0]) == 1)
    np.testing.assert_allclose(state.obs, ref.obs[0], atol=atol)


# EvoJAX's tasks take long to compile (their 30 sensors are a Python loop): one instance each
STEPS, N_ITEMS = 200, 250


@pytest.fixture(scope="module")
def reference():
    return ew.WaterWorld(num_items=N_ITEMS, max_steps=STEPS)


@pytest.fixture(scope="module")
def ma_reference():
    return ema.MultiAgentWaterWorld(num_agents=8, num_items=150, max_steps=STEPS)


@pytest.mark.slow  # EvoJAX's tasks take minutes to compile on 2 cores
def test_reset_draws_evojax_initial_state(reference):
    task = WaterWorld(n_items=N_ITEMS)
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    ref = reference.reset(keys)
    for i, key in enumerate(keys):
        _check_single(task.reset(key), jax.tree.map(lambda x, i=i: x[i : i + 1], ref), 1e-6)


@pytest.mark.slow
def test_episode_matches_evojax_step_by_step(reference):
    """Forced thrusts over a whole episode: positions, eaten items, rewards and every sensor
    reading agree (in a crowded pool: many rays see items, many items get eaten)."""
    steps, n_items, ref = STEPS, N_ITEMS, reference
    task = WaterWorld(n_items=n_items, max_steps=steps)
    key = jax.random.PRNGKey(n_items)
    directions = jax.random.randint(jax.random.PRNGKey(7), (steps,), 0, 4)

    def both(carry, direction):
        state, ref_state = carry
        p, logits = _one_hot(direction)
        state, reward, done = task.step(state, logits, jax.random.PRNGKey(0))
        ref_state, ref_reward, ref_done = ref._step_fn(ref_state, p[None])
        return (state, ref_state), (state, ref_state, reward, ref_reward[0], done, ref_done[0])

    init = (task.reset(key), ref.reset(key[None]))
    _, (states, ref_states, rewards, ref_rewards, dones, ref_dones) = jax.jit(
        lambda c, d: jax.lax.scan(both, c, d)
    )(init, directions)
    np.testing.assert_array_equal(rewards, ref_rewards)
    assert np.sum(np.abs(rewards)) >= 10  # the agent ate
    np.testing.assert_array_equal(dones, ref_dones == 1)
    assert bool(dones[-1]) and not bool(dones[-2])
    np.testing.assert_allclose(states.obs, ref_states.obs[:, 0], atol=1e-4)
    np.testing.assert_array_equal(states.item_valid, ref_states.item_state.valid[:, 0] == 1)
    np.testing.assert_allclose(states.agent_pos[:, 0], ref_states.agent_state.pos_x[:, 0, 0])
    seen = np.asarray(states.obs[:, :150]).reshape(steps, 30, 5)
    assert (seen[..., 1] < 1).any() and (seen[..., 2] < 1).any()  # food and poison seen
    np.testing.assert_array_equal(states.poison_eaten, ref_states.agent_state.poison_cnt[:, 0, 0])


def test_direction_is_sampled_from_softmax_of_the_action():
    task = WaterWorld()
    state = jax.jit(task.reset)(jax.random.PRNGKey(0))
    logits = jnp.array([0.0, 1.0, -1.0, 0.5])
    keys = jax.random.split(jax.random.PRNGKey(1), 4000)
    new = jax.jit(jax.vmap(task.step, in_axes=(None, None, 0)))(state, logits, keys)[0]
    dv = np.asarray(new.agent_vel) / 0.95  # from rest: the thrust itself
    direction = np.select(
        [dv[:, 1] < -0.5, dv[:, 1] > 0.5, dv[:, 0] < -0.5, dv[:, 0] > 0.5], [0, 1, 2, 3], -1
    )
    assert (direction >= 0).all()
    freq = np.bincount(direction, minlength=4) / len(keys)
    expected = np.asarray(jax.nn.softmax(logits))
    np.testing.assert_allclose(freq, expected, atol=4 * np.sqrt(0.25 / len(keys)))


def _padded_items(ref_state):
    """EvoJAX's multi-agent items followed by the agents as items of type AGENT: EvoJAX's
    observation of this pool is its observation with agents seen as agents (its own looks the
    seen object's type and velocity up among the items only)."""
    items, agents = ref_state.item_state, ref_state.agent_state
    n_agents = agents.pos_x.shape[0]
    return items.replace(
        pos_x=jnp.concatenate([items.pos_x, agents.pos_x]),
        pos_y=jnp.concatenate([items.pos_y, agents.pos_y]),
        vel_x=jnp.concatenate([items.vel_x, agents.vel_x]),
        vel_y=jnp.concatenate([items.vel_y, agents.vel_y]),
        bubble_type=jnp.concatenate([items.bubble_type, jnp.full(n_agents, AGENT)]),
        valid=jnp.concatenate([items.valid, jnp.ones(n_agents, items.valid.dtype)]),
        poison_cnt=jnp.concatenate([items.poison_cnt, jnp.zeros(n_agents, jnp.int32)]),
    )


def _corrected_obs(ref_state):
    walls = jnp.array([[0, 0, 0, 600], [0, 600, 600, 600], [600, 600, 600, 0], [600, 0, 0, 0]])
    agents = ref_state.agent_state
    return ema.get_obs(agents, agents, _padded_items(ref_state), walls)


@pytest.mark.slow  # EvoJAX's multi-agent task takes minutes to compile on 2 cores
def test_multi_agent_reset_draws_evojax_initial_state(ma_reference):
    task = MultiAgentWaterWorld(n_agents=8, n_items=150)
    key = jax.random.PRNGKey(3)
    state = task.reset(key)
    ref = jax.tree.map(lambda x: x[0], ma_reference.reset(key[None]))
    np.testing.assert_allclose(state.agent_pos[:, 0], ref.agent_state.pos_x, atol=1e-4)
    np.testing.assert_allclose(state.item_pos[:, 1], ref.item_state.pos_y, atol=1e-4)
    np.testing.assert_allclose(state.item_vel[:, 0], ref.item_state.vel_x, atol=1e-6)
    np.testing.assert_array_equal(state.item_food, np.asarray(ref.item_state.bubble_type) == FOOD)
    np.testing.assert_allclose(state.obs, _corrected_obs(ref), atol=1e-4)


@pytest.mark.slow
def test_multi_agent_episode_matches_evojax(ma_reference):
    """Positions, shared eating and per-agent rewards as EvoJAX's; sensors as EvoJAX's with
    agents seen as agents."""
    steps, n_agents, ref = STEPS, 8, ma_reference
    task = MultiAgentWaterWorld(n_agents=n_agents, n_items=150, max_steps=steps)
    key = jax.random.PRNGKey(11)
    directions = jax.random.randint(jax.random.PRNGKey(5), (steps, n_agents), 0, 4)

    def both(carry, direction):
        state, ref_state = carry
        p, logits = _one_hot(direction)
        state, reward, done = task.step(state, logits, jax.random.PRNGKey(0))
        ref_state, ref_reward, _ = ref._step_fn(ref_state, p[None])
        one = jax.tree.map(lambda x: x[0], ref_state)
        return (state, ref_state), (state, reward, ref_reward[0], done, _corrected_obs(one), one)

    init = (task.reset(key), ref.reset(key[None]))
    _, (states, rewards, ref_rewards, dones, ref_obs, ref_states) = jax.jit(
        lambda c, d: jax.lax.scan(both, c, d)
    )(init, directions)
    np.testing.assert_array_equal(rewards, ref_rewards)
    assert np.sum(np.abs(rewards)) >= 10
    assert bool(dones[-1]) and not bool(dones[-2])
    np.testing.assert_allclose(states.agent_pos[..., 1], ref_states.agent_state.pos_y, atol=1e-3)
    np.testing.assert_array_equal(states.item_valid, ref_states.item_state.valid == 1)
    np.testing.assert_allclose(states.obs, ref_obs, atol=1e-3)
    sensors = np.asarray(states.obs[..., :180]).reshape(steps, n_agents, 30, 6)
    assert (sensors[..., 3] < 1).any() and (sensors[..., 0] < 1).any()  # agents and walls seen


def test_one_agent_pool_sees_what_the_single_agent_task_sees():
    """With one agent and the single-agent sizes, the multi-agent sensors (less the agent
    channel) read what the single-agent task's (checked against EvoJAX above) read."""
    single = WaterWorld()
    ma = MultiAgentWaterWorld(n_agents=1, n_items=50, radius=10.0, max_range=120.0)
    state = jax.jit(single.reset)(jax.random.PRNGKey(4))
    ma_obs = jax.jit(ma._observe)(
        state.agent_pos[None],
        state.agent_vel[None] + 0.5,
        state.item_pos,
        state.item_vel,
        state.item_food,
        state.item_valid.at[:5].set(False),
    )[0]
    obs = jax.jit(single.observe)(
        state.agent_pos,
        state.agent_vel + 0.5,
        state.item_pos,
        state.item_vel,
        state.item_food,
        state.item_valid.at[:5].set(False),
    )
    sensors = np.asarray(ma_obs[:-2]).reshape(30, 6)
    np.testing.assert_array_equal(sensors[:, 3], 1.0)
    expected = np.asarray(obs[:-2]).reshape(30, 5)
    np.testing.assert_allclose(np.delete(sensors, 3, axis=1), expected, rtol=1e-6)
    np.testing.assert_allclose(ma_obs[-2:], obs[-2:])
    assert (expected[:, :3] < 1).any()


def test_agents_eat_the_same_item_together():
    task = MultiAgentWaterWorld(n_agents=2, n_items=1, max_steps=10)
    state = jax.jit(task.reset)(jax.random.PRNGKey(0))
    state = state.replace(
        agent_pos=jnp.array([[300.0, 300.0], [310.0, 300.0]]),
        item_pos=jnp.array([[305.0, 300.0]]),
        item_vel=jnp.zeros((1, 2)),
        item_food=jnp.array([True]),
    )
    logits = jnp.log(jnp.array([[1.0, 0, 0, 0], [1.0, 0, 0, 0]]))
    step = jax.jit(task.step)
    state, reward, _ = step(state, logits, jax.random.PRNGKey(0))
    np.testing.assert_array_equal(reward, [1.0, 1.0])
    assert not bool(state.item_valid[0])
    _, reward, _ = step(state, logits, jax.random.PRNGKey(0))
    np.testing.assert_array_equal(reward, [0.0, 0.0])  # eaten items are gone


def test_render_draws_agent_food_and_poison():
    task = WaterWorld()
    state = jax.jit(task.reset)(jax.random.PRNGKey(0))
    image = task.render(state)
    assert image.shape == (600, 600, 3) and image.dtype == np.uint8
    x, y = np.asarray(state.agent_pos).round().astype(int)
    np.testing.assert_array_equal(image[y, x], [255, 220, 0])
    food = np.asarray(state.item_food)
    for i in (int(np.argmax(food)), int(np.argmin(food))):
        x, y = np.asarray(state.item_pos[i]).round().astype(int)
        pos, agent = np.asarray(state.item_pos), np.asarray(state.agent_pos)
        overlaps = np.linalg.norm(pos - pos[i], axis=1) < 25
        if overlaps.sum() == 1 and np.linalg.norm(agent - pos[i]) > 25:
            np.testing.assert_array_equal(image[y, x], [0, 200, 0] if food[i] else [230, 0, 0])
    ma = MultiAgentWaterWorld(n_agents=3)
    assert ma.render(jax.jit(ma.reset)(jax.random.PRNGKey(0))).shape == (600, 600, 3)


@pytest.mark.parametrize(
    ("cls", "kwargs", "match"),
    [
        (WaterWorld, {"n_items": 0}, "n_items"),
        (WaterWorld, {"max_steps": -1}, "max_steps"),
        (WaterWorld, {"radius": 0.0}, "radius"),
        (WaterWorld, {"max_range": 400.0}, "max_range"),
        (WaterWorld, {"radius": np.float32(300.0)}, re.escape("radius must be in (0, 300)")),
        (WaterWorld, {"thrust": 0.0}, "thrust must be a finite positive number"),
        (WaterWorld, {"damping": 1.5}, re.escape("damping must be in (0, 1]")),
        (WaterWorld, {"item_speed": -1.0}, "item_speed must be a finite number >= 0"),
        (MultiAgentWaterWorld, {"n_agents": 0}, "n_agents"),
        (MultiAgentWaterWorld, {"damping": 0.0}, "damping"),
        (
            MultiAgentWaterWorld,
            {"agent_circle": 300.0},
            re.escape("agent_circle must be in [0, 300)"),
        ),
        (MultiAgentWaterWorld, {"item_disc": -1.0}, "item_disc"),
    ],
)
def test_bad_arguments(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


def test_wrong_action_shape():
    key = jax.random.PRNGKey(0)
    task = WaterWorld()
    state = jax.eval_shape(task.reset, key)
    with pytest.raises(ValueError, match="action_shape"):
        jax.eval_shape(task.step, state, jnp.zeros(3), key)
    ma = MultiAgentWaterWorld(n_agents=4)
    with pytest.raises(ValueError, match="n_agents"):
        jax.eval_shape(ma.step, jax.eval_shape(ma.reset, key), jnp.zeros((3, 4)), key)


@pytest.mark.slow  # 13 s; the default run vmaps cart-pole's pole length (test_cartpole.py)
def test_vmap_over_thrust_runs_each_thrust_as_alone():
    """The thrust is an ordinary field: one vmapped program runs each value as a program for
    that value alone does, and an agent thrusting right from rest in the middle of the pool
    moves as the rule ``v_n = damping * (v_(n-1) + thrust)`` gives:
    ``v_n = thrust * damping * (1 - damping^n) / (1 - damping)``, ``x_n = x_0 + sum v_k``."""
    steps, damping = 12, 0.95
    start = WaterWorld(n_items=10).reset(jax.random.PRNGKey(0))
    start = start.replace(agent_pos=jnp.array([300.0, 300.0]), agent_vel=jnp.zeros(2))
    right = jnp.log(jax.nn.one_hot(3, 4))

    def run(thrust):
        task = WaterWorld(n_items=10, thrust=thrust)

        def body(state, key):
            state, reward, _ = task.step(state, right, key)
            return state, (state.agent_pos, state.obs, reward)

        return jax.lax.scan(body, start, jax.random.split(jax.random.PRNGKey(1), steps))[1]

    thrusts = np.array([1.0, 2.5])
    batched = jax.jit(jax.vmap(run))(jnp.asarray(thrusts))
    for i, thrust in enumerate(thrusts):
        alone = jax.jit(lambda thrust=float(thrust): run(thrust))()
        for got, want in zip(batched, alone, strict=True):
            np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-4)
    n = np.arange(1, steps + 1)
    velocity = thrusts[:, None] * damping * (1 - damping**n) / (1 - damping)
    x = 300.0 + np.cumsum(velocity, axis=1)
    np.testing.assert_allclose(batched[0][..., 0], x, rtol=1e-5)
    np.testing.assert_allclose(batched[0][..., 1], 300.0)
    # the default thrust is EvoJAX's 1
    default = WaterWorld(n_items=10).step(start, right, jax.random.PRNGKey(1))[0]
    np.testing.assert_allclose(default.agent_pos, [300.0 + damping, 300.0], rtol=1e-7)


def test_vmap_over_multi_agent_start_fields():
    """The multi-agent pool's start distribution fields can be vmapped over: agents start
    ``agent_circle`` from the centre, items within ``item_disc`` of it and no faster than
    ``item_speed``."""

    def reset(circle, disc, speed):
        task = MultiAgentWaterWorld(
            n_agents=4, n_items=20, agent_circle=circle, item_disc=disc, item_speed=speed
        )
        return task.reset(jax.random.PRNGKey(0))

    values = [jnp.array([270.0, 100.0]), jnp.array([200.0, 50.0]), jnp.array([2.5, 0.0])]
    states = jax.jit(jax.vmap(reset))(*values)
    for i, (circle, disc, speed) in enumerate(zip(*values, strict=True)):
        state = jax.tree.map(lambda x, i=i: x[i], states)
        np.testing.assert_allclose(
            np.linalg.norm(state.agent_pos - 300.0, axis=1), circle, rtol=1e-5
        )
        assert np.all(np.linalg.norm(state.item_pos - 300.0, axis=1) <= disc + 1e-3)
        assert np.all(np.abs(state.item_vel) <= speed)
    assert np.abs(states.item_vel[0]).max() > 0.5 and not np.any(states.item_vel[1])
