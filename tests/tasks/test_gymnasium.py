"""`Gymnasium` tasks on the host engine, against gymnasium itself: the same seeds and
actions give the same episodes (with the overlap on and off, over one or two workers); the
observation statistics are those of the observations acted on; a run resumes exactly; a
worker that dies, an environment that raises or hangs stops the run with a one-line error;
the eager step compiles once. Classic control only: MuJoCo runs in `nox -s slow`."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from helpers import state_leaves

gymnasium = pytest.importorskip("gymnasium", reason="host tasks need gymnasium")

from evolax import HostTrainer, Trainer  # noqa: E402
from evolax.algorithms import PGPE  # noqa: E402
from evolax.host import HostError, close_pools  # noqa: E402
from evolax.normalize import ObsStats  # noqa: E402
from evolax.placement import trainer_class  # noqa: E402
from evolax.policies import MLP  # noqa: E402
from evolax.rollout import evaluate_host  # noqa: E402
from evolax.rollout.episode import episode_keys, step_keys  # noqa: E402
from evolax.runner import train  # noqa: E402
from evolax.tasks import CartPoleSwingUp, Gymnasium  # noqa: E402

HERE = Path(__file__).parent


@pytest.fixture(autouse=True, scope="module")
def _close_workers():
    yield
    close_pools()


def population(policy, task, n, seed=1):
    p0 = policy.init(jax.random.key(0), task.obs_shape, task.action_shape)
    noise = lambda x: 0.5 * jax.random.normal(jax.random.key(seed), (n, *x.shape))  # noqa: E731
    return jax.tree.map(lambda x: x[None] + noise(x), p0)


def reference(policy, task, members, key, n_repeats, stats=None):
    """Each member's mean return, by gymnasium in this process, with evaluate's seeds and
    keys; and every observation the policies acted on."""
    reset_keys, policy_keys, episode_step_keys = episode_keys(key, n_repeats)
    seeds = [int(jax.random.randint(k, (), 0, jnp.iinfo(jnp.int32).max)) for k in reset_keys]
    apply = jax.jit(lambda p, x, s, k: policy.apply(p, x, s, k))  # one at a time, compiled once
    act = jax.jit(task.env_action)
    means, seen = [], []
    for i in range(jax.tree.leaves(members)[0].shape[0]):
        params = jax.tree.map(lambda x, i=i: x[i], members)
        returns = []
        for r in range(n_repeats):
            env = gymnasium.make(task.env_id, max_episode_steps=task.max_steps)
            obs, _ = env.reset(seed=seeds[r])
            state, total, t, done = policy.reset(policy_keys[r]), 0.0, 0, False
            while not done:
                seen.append(obs)
                x = jnp.asarray(obs, jnp.float32)
                x = x if stats is None else stats.normalize(x)
                policy_key = step_keys(episode_step_keys[r], t)[0]
                action, state = apply(params, x, state, policy_key)
                action = np.asarray(act(action))
                obs, reward, terminated, truncated, _ = env.step(action)
                total, t, done = total + reward, t + 1, terminated or truncated
            returns.append(total)
        means.append(np.mean(returns))
    return np.asarray(means, np.float32), np.asarray(seen, np.float64)


@pytest.mark.parametrize(
    "env_id, n_workers, overlap",
    [("CartPole-v1", 2, True), ("Pendulum-v1", 1, False)],
)
def test_episodes_equal_gymnasium(env_id, n_workers, overlap):
    task = Gymnasium(env_id, n_workers=n_workers, overlap=overlap, max_steps=60)
    policy = MLP(hidden_sizes=(8,), output_activation="tanh")
    members = population(policy, task, 5)
    key = jax.random.key(7)
    fitness, info = evaluate_host(policy, task, members, key, n_repeats=2)
    expected, _ = reference(policy, task, members, key, 2)
    np.testing.assert_allclose(fitness, expected, rtol=1e-5)
    assert info.returns.shape == info.lengths.shape == (5, 2)
    assert int(info.lengths.max()) <= 60


def test_one_member_splits_its_repeats():
    """The best solution's test: one member, its episodes in two halves."""
    task = Gymnasium("CartPole-v1", n_workers=2)
    policy = MLP(hidden_sizes=(8,))
    members = population(policy, task, 1, seed=3)
    key = jax.random.key(2)
    fitness, _ = evaluate_host(policy, task, members, key, n_repeats=5)
    np.testing.assert_allclose(fitness, reference(policy, task, members, key, 5)[0], rtol=1e-5)


def test_observation_statistics_are_those_acted_on():
    task = Gymnasium("CartPole-v1", n_workers=2, max_steps=40)
    policy = MLP(hidden_sizes=(8,))
    members = population(policy, task, 4)
    key = jax.random.key(4)
    before = ObsStats.zeros(task.obs_shape).merge(
        jnp.float32(10.0), jnp.full(4, 1.0), jnp.full(4, 20.0), jnp.zeros(4)
    )
    fitness, info = evaluate_host(policy, task, members, key, n_repeats=2, obs_stats=before)
    expected, seen = reference(policy, task, members, key, 2, stats=before)
    np.testing.assert_allclose(fitness, expected, rtol=1e-5)
    count = float(before.count) + len(seen)
    mean = (float(before.count) * np.asarray(before.mean) + seen.sum(0)) / count
    assert float(info.obs_stats.count) == count
    np.testing.assert_allclose(info.obs_stats.mean, mean, rtol=1e-5, atol=1e-6)
    m2 = np.asarray(before.m2) + ((seen - mean) ** 2).sum(0)
    m2 += float(before.count) * (np.asarray(before.mean) - mean) ** 2
    np.testing.assert_allclose(info.obs_stats.m2, m2, rtol=1e-4)


def trainer(n_workers=2):
    task = Gymnasium("CartPole-v1", n_workers=n_workers, max_steps=100)
    algorithm = PGPE(pop_size=8, init_std=0.1, optimizer=optax.adam(0.05))
    return HostTrainer(algorithm, MLP(hidden_sizes=(8,)), task, n_repeats=2, normalize_obs=True)


def test_each_trainer_refuses_the_other_kind_of_task():
    """A host task trains with HostTrainer, a JAX task with Trainer: one line says which."""
    task = Gymnasium("CartPole-v1", n_workers=1, max_steps=10)
    with pytest.raises(ValueError, match=r"stepped on the host: train it with evolax.HostTrainer"):
        Trainer(PGPE(pop_size=4), MLP(), task)
    with pytest.raises(ValueError, match=r"stepped in JAX: train it with evolax.Trainer"):
        HostTrainer(PGPE(pop_size=4), MLP(), CartPoleSwingUp(max_steps=10))
    assert trainer_class(task) is HostTrainer
    assert trainer_class(CartPoleSwingUp()) is Trainer


@pytest.mark.slow  # 8 s; exact resume of JAX tasks stays in the default run (test_interrupt)
def test_resume_is_exact():
    with tempfile.TemporaryDirectory() as straight, tempfile.TemporaryDirectory() as split:
        whole = train(trainer(), 4, seed=3, run_dir=straight, test_interval=2, progress=False)
        train(trainer(), 2, seed=3, run_dir=split, test_interval=2, progress=False)
        resumed = train(
            trainer(), 4, seed=3, run_dir=split, test_interval=2, progress=False, resume=True
        )
    for a, b in zip(state_leaves(whole.state), state_leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(a, b)


def test_generations_compile_once():
    """After the first generation, later ones (their episodes of other lengths included)
    compile nothing."""
    from jax._src import dispatch, monitoring

    t = trainer()
    state, _ = t.run(t.init(jax.random.key(1)), 1)
    compiles = []

    def listen(event, duration, **kwargs):
        if event == dispatch.BACKEND_COMPILE_EVENT:
            compiles.append(duration)

    monitoring.register_event_duration_secs_listener(listen)
    try:
        state, metrics = t.run(state, 3)
    finally:
        monitoring.unregister_event_duration_listener(listen)
    assert compiles == []
    assert metrics["fitness_mean"].shape == (3,)


@pytest.mark.slow  # 5 s
def test_seeds_run_one_after_another_as_their_own_runs():
    together = train(trainer(), 2, seed=[5, 6], test_interval=2, n_test_episodes=3, progress=False)
    alone = train(trainer(), 2, seed=6, test_interval=2, n_test_episodes=3, progress=False)
    np.testing.assert_array_equal(together.state.algo_state.mean[1], alone.state.algo_state.mean)


def test_traced_step_is_refused_in_one_line():
    t = trainer()
    state = t.init(jax.random.key(0))
    with pytest.raises(TypeError, match="steps on the host: it cannot be evaluated inside jit"):
        jax.jit(t.step)(state)


@pytest.fixture
def faulty(monkeypatch):
    """The faulty environments, importable here and in the workers."""
    monkeypatch.syspath_prepend(str(HERE))
    path = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)


@pytest.mark.parametrize(
    "env_id, message",
    [
        ("faulty_envs:Crash-v0", r"worker \d \(pid \d+\) of faulty_envs:Crash-v0 died \(exit"),
        ("faulty_envs:Raise-v0", r"in step \(group \d, environment \d, after 2 steps\): ValueE"),
        ("faulty_envs:Hang-v0", r"sent nothing for 1 s \(the task's timeout\)"),
    ],
)
def test_failures_stop_the_run_with_one_line(faulty, env_id, message):
    # the hanging worker is stopped by a 1 s timeout; the others get 20 s to say what went
    # wrong, which a loaded machine needs (a worker starting Python can take over 1 s there)
    hang = "Hang" in env_id
    task = Gymnasium(env_id, n_workers=2, timeout=1.0 if hang else 20.0)
    policy = MLP(hidden_sizes=(4,))
    members = population(policy, task, 4)
    start = time.monotonic()
    with pytest.raises(HostError, match=message) as error:
        evaluate_host(policy, task, members, jax.random.key(0), n_repeats=2)
    assert "\n" not in str(error.value)
    assert time.monotonic() - start < 30  # never hangs
    assert task.pool().closed is False  # the next evaluation starts new workers


@pytest.mark.slow
def test_mujoco_episodes_equal_gymnasium():
    """Five steps: the batched policy's float32 rounding differs from one-at-a-time calls by
    ~1e-7, which the cheetah's contacts amplify (6% apart after 20 steps)."""
    task = Gymnasium("HalfCheetah-v5", n_workers=2, max_steps=5)
    policy = MLP(hidden_sizes=(16,), output_activation="tanh")
    members = population(policy, task, 3)
    key = jax.random.key(11)
    fitness, _ = evaluate_host(policy, task, members, key, n_repeats=2)
    np.testing.assert_allclose(fitness, reference(policy, task, members, key, 2)[0], rtol=2e-5)


@pytest.mark.slow
def test_ray_actors_on_two_nodes_give_one_process_s_results():
    """A local Ray cluster of two one-CPU nodes: the two actors run one on each, and the
    evaluation equals the worker processes' (and so gymnasium's)."""
    ray = pytest.importorskip("ray", reason="the Ray backend needs ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    try:
        policy = MLP(hidden_sizes=(8,), output_activation="tanh")
        results = []
        for backend in ("processes", "ray"):
            task = Gymnasium(
                "Pendulum-v1", n_workers=2, backend=backend, ray_address=cluster.address
            )
            members = population(policy, task, 6)
            fitness, _ = evaluate_host(policy, task, members, jax.random.key(3), n_repeats=2)
            results.append(np.asarray(fitness))
        # each node's one CPU is held by one actor
        assert len(ray.nodes()) == 2 and ray.available_resources().get("CPU", 0) == 0
        np.testing.assert_array_equal(*results)
    finally:
        close_pools()
        ray.shutdown()
        cluster.shutdown()


def test_the_command_trains_and_evaluates_a_host_task(tmp_path, capsys):
    from evolax import cli

    run_dir = str(tmp_path / "run")
    overrides = ["task.name=gymnasium:CartPole-v1", "policy.hidden_sizes=[8]"]
    overrides += ["algorithm.pop_size=8", "run.generations=2", "run.test_episodes=2"]
    assert cli.main(["train", "cartpole_easy", *overrides, "--run-dir", run_dir]) == 0
    assert cli.main(["eval", run_dir, "--episodes", "3"]) == 0
    assert "over 3 episodes" in capsys.readouterr().out
