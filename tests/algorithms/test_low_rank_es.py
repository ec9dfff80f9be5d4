"""LowRankES (EGGROLL): its update against OpenES's on the same samples, its gradient estimate
against the analytic gradient of a quadratic, and its seed-held population through the
rollout and the trainer."""

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from evolax import MLP, CartPoleSwingUp, Trainer
from evolax.algorithms import LowRankES, OpenES, raw
from evolax.policies import Policy
from evolax.policies.base import EmptyState
from evolax.population import map_batched, materialize, pop_axes
from evolax.rollout.sharded import evaluate_on
from evolax.seeded import dense, densify, member
from evolax.tasks import Task

GENOME = [{"w": jnp.ones((6, 5)), "b": jnp.zeros(5)}, {"w": jnp.ones((5, 3)), "b": jnp.zeros(3)}]


def dense_population(population):
    """The members of a seed-held population as a ``[pop, D]`` matrix (pop * D numbers)."""
    return jax.vmap(lambda g: ravel_pytree(g)[0])(densify(population))


@pytest.mark.slow
def test_members_are_the_mean_plus_low_rank_products_and_multiply_as_their_matrices(key):
    algorithm = LowRankES(pop_size=8, rank=2, init_std=0.3)
    state = algorithm.init(key, GENOME)
    population, _ = algorithm.ask(jax.random.key(1), state)
    x = dense_population(population)
    assert x.shape == (8, 6 * 5 + 5 + 5 * 3 + 3)
    mean = np.asarray(ravel_pytree(state.mean)[0])[None]
    # antithetic: member i + 4 mirrors member i
    np.testing.assert_allclose(x[:4] - mean, -(x[4:] - mean), atol=1e-6)
    w = np.asarray(x[0, 5 : 5 + 30]).reshape(6, 5) - 1.0  # leaf order: b, w of layer 0
    assert np.linalg.matrix_rank(w, tol=1e-5) == 2
    # x @ view equals x @ the member's matrix; member() is row i of materialize()
    drawn = materialize(population)
    inputs = jax.random.normal(key, (4, 6))
    view = map_batched(lambda leaf: leaf[3], drawn[0]["w"])
    np.testing.assert_allclose(inputs @ view, inputs @ view.dense(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        dense(member(population, jnp.asarray(3))[0]["w"]), view.dense(), atol=1e-6
    )
    forward = jax.vmap(lambda p: inputs @ p[0]["w"], in_axes=(pop_axes(drawn),))(drawn)
    assert forward.shape == (8, 4, 5)


@pytest.mark.parametrize(
    "rank, antithetic",
    [  # 5 = the full rank of every matrix here
        (5, True),
        pytest.param(1, True, marks=pytest.mark.slow),
        pytest.param(5, False, marks=pytest.mark.slow),
    ],
)
def test_update_equals_open_es_on_the_same_samples(key, rank, antithetic):
    kwargs = dict(pop_size=8, init_std=0.2, antithetic=antithetic, optimizer=optax.sgd(0.5))
    low_rank = LowRankES(rank=rank, **kwargs)
    open_es = OpenES(**kwargs)
    start = low_rank.init(key, GENOME)
    population, _ = low_rank.ask(jax.random.key(1), start)
    fitness = jax.random.normal(jax.random.key(2), (8,))
    new, _ = jax.jit(low_rank.tell)(key, start, population, fitness)
    x = jax.jit(dense_population)(population)
    reference, _ = jax.jit(open_es.tell)(
        key, open_es.init(key, GENOME), open_es_population(x), fitness
    )
    np.testing.assert_allclose(ravel_pytree(new.mean)[0], reference.mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ravel_pytree(new.best_genome)[0], x[jnp.argmax(fitness)], atol=1e-6)


def open_es_population(x):
    _, unravel = ravel_pytree(GENOME)
    return jax.vmap(unravel)(x)


@pytest.mark.slow  # 10 s
def test_gradient_estimate_is_unbiased_on_a_quadratic(key):
    """f(W) = -|W - T|^2 / 2 has gradient T - W: the mean of 4,000 rank-1 estimates (raw
    fitness, sgd step 1) matches it, and the full-rank one, within 4 standard errors."""
    target = jax.random.normal(jax.random.key(7), (8, 6))
    genome = {"w": jnp.zeros((8, 6))}

    def estimate(algorithm, k):
        state = algorithm.init(k, genome)
        ask_key, tell_key = jax.random.split(k)
        population, _ = algorithm.ask(ask_key, state)
        members = densify(population)
        fitness = -0.5 * jnp.sum((members["w"] - target[None]) ** 2, axis=(1, 2))
        new, _ = algorithm.tell(tell_key, state, population, fitness)
        return (new.mean["w"] - state.mean["w"]).ravel()

    common = dict(pop_size=16, init_std=0.5, optimizer=optax.sgd(1.0), fitness_shaping=raw)
    keys = jax.random.split(key, 4000)
    for rank in (1, 0):
        g = jax.jit(jax.vmap(lambda k, r=rank: estimate(LowRankES(rank=r, **common), k)))(keys)
        mean, se = jnp.mean(g, axis=0), jnp.std(g, axis=0) / math.sqrt(len(keys))
        z = (mean - target.ravel()) / se
        assert float(jnp.max(jnp.abs(z))) < 4.5, rank
        assert abs(float(jnp.mean(z))) < 4 / math.sqrt(z.size)


@pytest.mark.slow  # 5 s; test_registry trains every registered algorithm in the default run
def test_trains_cartpole_through_the_trainer_with_one_compilation(key):
    trainer = Trainer(
        algorithm=LowRankES(pop_size=32, rank=1, init_std=0.1, optimizer=optax.adam(0.03)),
        policy=MLP(hidden_sizes=(16,)),
        task=CartPoleSwingUp(max_steps=100),
        n_repeats=2,
        mesh=None,
    )
    traces = []

    def counted(state):
        traces.append(None)
        return trainer.run(state, 10)

    run = jax.jit(counted)
    state, history = run(trainer.init(key))
    state, history = run(state)
    assert len(traces) == 1
    fitness = np.asarray(history["fitness_mean"])
    assert np.all(np.isfinite(fitness))
    assert state.algo_state.generation == 20


@pytest.mark.slow  # 6 s
def test_full_rank_members_held_as_seeds_match_open_es_members(key):
    algorithm = LowRankES(pop_size=6, rank=0, update_block=1)
    state = algorithm.init(key, GENOME)
    population, _ = algorithm.ask(jax.random.key(3), state)
    drawn = materialize(population)
    assert drawn[0]["w"].shape == (6, 6, 5)  # full-rank leaves are plain arrays
    fitness = jnp.arange(6.0)
    blocked, _ = jax.jit(algorithm.tell)(key, state, population, fitness)
    whole, _ = jax.jit(LowRankES(pop_size=6, rank=0).tell)(key, state, population, fitness)
    np.testing.assert_allclose(
        ravel_pytree(blocked.mean)[0], ravel_pytree(whole.mean)[0], rtol=1e-5, atol=1e-7
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(pop_size=8, rank=-1), "rank must be a non-negative integer"),
        (dict(pop_size=8, update_block=3), "update_block must divide the 4 noise draws"),
        (dict(pop_size=7), "pop_size must be even"),
    ],
)
def test_bad_settings_raise_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LowRankES(**kwargs)


def test_map_batched_leaves_shared_parts_alone(key):
    population, _ = LowRankES(pop_size=4).ask(key, LowRankES(pop_size=4).init(key, GENOME))
    first = map_batched(lambda x: x[:1], population)
    assert first.index.shape == (1,)
    assert first.mean.value[0]["w"].shape == (6, 5)


@chex.dataclass(frozen=True)
class _DotState:
    obs: jax.Array


class _Linear(Policy):
    """``obs @ w + b``: a member's matrix applied as its :class:`~evolax.seeded.LowRank`."""

    def init(self, key, obs_shape, action_shape):
        return {"w": jnp.zeros((obs_shape[0], action_shape[0])), "b": jnp.zeros(action_shape)}

    def apply(self, params, obs, state, key):
        return obs @ params["w"] + params["b"], state

    def reset(self, key):
        return EmptyState()


class _Dot(Task):
    """One step: the observation ``x``; the reward ``action . c``."""

    obs_shape: tuple[int, ...] = (3,)
    action_shape: tuple[int, ...] = (4,)
    max_steps: int = 1

    def reset(self, key):
        return _DotState(obs=jnp.array([0.5, -1.0, 2.0]))

    def step(self, state, action, key):
        return state, jnp.dot(action, jnp.array([1.0, -2.0, 0.5, 3.0])), jnp.asarray(True)


@pytest.mark.parametrize("pop_chunk", [None, 2, 4])
def test_pairs_drawn_once_score_the_members_of_the_documented_formula(key, pop_chunk):
    """Each antithetic pair's noise drawn once for both members (whole pairs per group):
    every member's fitness is that of ``W + sign std a b^T / sqrt(r)`` and ``b + sign std
    eps`` formed in numpy from ``normal(fold_in(key, i mod pop/2))``, in the members' order."""
    pop, rank, std = 8, 2, 0.3
    mean = {"w": jax.random.normal(key, (3, 4)), "b": jnp.arange(4.0)}
    algorithm = LowRankES(pop_size=pop, rank=rank, init_std=std)
    gen_key = jax.random.key(7)
    population, _ = algorithm.ask(gen_key, algorithm.init(key, mean))
    fitness, _ = evaluate_on(_Linear(), _Dot(), population, key, pop_chunk=pop_chunk)

    x, c = np.array([0.5, -1.0, 2.0]), np.array([1.0, -2.0, 0.5, 3.0])
    expected = []
    for i in range(pop):  # leaves in order "b" (4 numbers), "w" (factors [3 + 4, rank])
        eps = np.asarray(jax.random.normal(jax.random.fold_in(gen_key, i % (pop // 2)), (18,)))
        sign = 1.0 if i < pop // 2 else -1.0
        ab = eps[4:].reshape(7, rank)
        w = np.asarray(mean["w"]) + sign * std * ab[:3] @ ab[3:].T / math.sqrt(rank)
        b = np.asarray(mean["b"]) + sign * std * eps[:4]
        expected.append((x @ w + b) @ c)
    np.testing.assert_allclose(fitness, expected, rtol=1e-5, atol=1e-5)
