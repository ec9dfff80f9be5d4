"""Randomised physics on `Brax` (`physics=`, `distribution=`) against Brax and MuJoCo themselves.

The references: the ``System`` Brax loads (``brax.io.mjcf.load_model``) from a MuJoCo model
whose masses, inertias, frictions, gears and gravity were changed in MuJoCo (and its derived
constants recomputed by ``mujoco.mj_setConst``); Brax's own domain-randomisation wrapper
(``DomainRandomizationVmapWrapper``) running those systems under ``vmap``; and the plain task,
which a distribution of unit scales and the model's gravity must reproduce bit for bit. Brax
compiles an inverted-pendulum episode in about 20 s on 2 busy cores, so the episode checks are
slow; the default run checks the systems, the draws and the arguments without stepping.
"""

import copy
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("brax", reason="the Brax task needs brax: pip install evolax[brax]")

import mujoco
import optax
from brax import envs
from brax.envs.wrappers.training import (
    DomainRandomizationVmapWrapper,
    EpisodeWrapper,
)
from brax.io import mjcf

import evolax
from evolax import config
from evolax.tasks import Brax, BraxPhysics, ParamSet, UniformParams, on_member
from evolax.tasks.brax_physics import apply_physics

ENV, STEPS = "inverted_pendulum", 12
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "brax_random_physics.yaml"
# the constants MuJoCo derives from the joint-space inertia at load time (mj_setConst), which
# BraxPhysics documents as kept: the only leaves allowed to differ from the reference system
KEPT = {".body_invweight0", ".dof_invweight0", ".dof_M0", ".actuator_acc0"}
KEPT |= {".link.invweight", ".dof.invweight"}  # Brax's copies of the invweights


def mujoco_system(sys, mass=1.0, friction=1.0, gear=1.0, gravity=None):
    """Brax's ``System`` loaded from ``sys``'s MuJoCo model changed in MuJoCo: every body's
    mass and inertia times ``mass``, every friction coefficient times ``friction``, every
    gear times ``gear`` and the gravity vector ``gravity``, constants recomputed."""
    model = copy.deepcopy(sys.mj_model)
    model.body_mass[:] *= mass
    model.body_inertia[:] *= mass
    model.geom_friction[:] *= friction
    model.pair_friction[:] *= friction
    model.actuator_gear[:] *= gear
    if gravity is not None:
        model.opt.gravity[:] = gravity
    mujoco.mj_setConst(model, mujoco.MjData(model))
    return mjcf.load_model(model).replace(mj_model=sys.mj_model)


def leaves(tree):
    return {
        jax.tree_util.keystr(p): np.asarray(x) for p, x in jax.tree_util.tree_leaves_with_path(tree)
    }


@pytest.fixture(scope="module")
def pendulum():
    return Brax(ENV, max_steps=STEPS)  # the default mjx backend: built in about a second


def test_physics_rebuild_the_system_mujoco_and_brax_load(pendulum):
    physics = BraxPhysics(
        mass_scale=2.0, friction_scale=0.5, gear_scale=1.5, gravity=jnp.array([0.5, 0.0, -3.7])
    )
    ours = leaves(apply_physics(pendulum.sys, physics))
    reference = leaves(mujoco_system(pendulum.sys, 2.0, 0.5, 1.5, (0.5, 0.0, -3.7)))
    model = leaves(pendulum.sys)
    assert ours.keys() == reference.keys()
    differ = {p for p in ours if not np.array_equal(ours[p], reference[p], equal_nan=True)}
    assert differ <= KEPT, differ - KEPT
    changed = {p for p in ours if not np.array_equal(ours[p], model[p], equal_nan=True)}
    assert {".body_mass", ".link.inertia.mass", ".geom_friction", ".actuator_gear"} <= changed
    assert {".gravity", ".opt.gravity", ".actuator.gear", ".link.inertia.i"} <= changed
    # the defaults are the model, leaf for leaf
    assert all(
        np.array_equal(x, model[p])
        for p, x in leaves(apply_physics(pendulum.sys, BraxPhysics())).items()
    )


def draws(keys, *tasks):
    """The reset keys and physics each task draws for ``keys`` (one compiled program)."""
    return jax.jit(lambda k: [jax.vmap(task.episode_physics)(k) for task in tasks])(keys)


def test_each_episode_draws_its_own_physics():
    task = Brax(
        ENV,
        max_steps=STEPS,
        distribution=UniformParams(
            {"mass_scale": (0.5, 2.0), "gravity": ((0, 0, -11), (0, 0, -8))}
        ),
    )
    keys = jax.random.split(jax.random.key(0), 16)
    [(reset_keys, drawn)] = draws(keys, task)
    mass, gravity = np.asarray(drawn.mass_scale), np.asarray(drawn.gravity)
    assert len(np.unique(mass)) == 16 and 0.5 <= mass.min() and mass.max() <= 2.0
    assert len(np.unique(gravity[:, 2])) == 16 and (np.abs(gravity[:, :2]) == 0).all()
    assert (-11 <= gravity[:, 2]).all() and (gravity[:, 2] <= -8).all()
    undrawn = np.stack([drawn.friction_scale, drawn.gear_scale])
    assert (undrawn == 1).all()  # the fields it does not draw keep the model's
    # Brax's reset gets the key left after splitting off the physics' (as JaxEnvTask's families)
    expected = jax.vmap(lambda k: jax.random.split(k)[0])(keys)
    assert (jax.random.key_data(reset_keys) == jax.random.key_data(expected)).all()
    state = jax.eval_shape(task.reset, keys[0])
    assert isinstance(state.physics, BraxPhysics) and state.physics.gravity.shape == (3,)


def test_a_fixed_set_draws_its_members():
    members = BraxPhysics(
        friction_scale=jnp.array([1.0, 0.5]),
        mass_scale=jnp.array([2.0, 1.0]),
        gear_scale=jnp.array([1.0, 0.75]),
        gravity=jnp.array([[0.0, 0.0, -9.81], [0.0, 0.0, -3.7]]),
    )
    gears = ParamSet(jnp.array([0.25, 3.0]), replace="gear_scale")  # one field's values
    keys = jax.random.split(jax.random.key(0), 16)
    (_, drawn), (_, geared) = draws(
        keys,
        Brax(ENV, max_steps=STEPS, distribution=ParamSet(members)),
        Brax(ENV, max_steps=STEPS, distribution=gears),
    )
    assert set(np.asarray(drawn.mass_scale).tolist()) == {1.0, 2.0}
    np.testing.assert_array_equal(drawn.gear_scale == 0.75, drawn.mass_scale == 1.0)
    np.testing.assert_array_equal(drawn.gravity[:, 2] == np.float32(-3.7), drawn.mass_scale == 1.0)
    # a set of one field's values replaces that field only
    assert set(np.asarray(geared.gear_scale).tolist()) == {0.25, 3.0}
    assert (np.asarray(geared.mass_scale) == 1).all()


def test_physics_argument_errors():
    def brax(**kwargs):
        return Brax(ENV, max_steps=STEPS, **kwargs)

    cases = [
        (UniformParams({"mass": (0.5, 2.0)}), r"ranges\['mass'\] names 'mass', not a BraxPhysics"),
        (UniformParams({"mass_scale": (2.0, 0.5)}), "must have low <= high"),
        (UniformParams({"mass_scale": (0.0, 1.0)}), r"ranges\['mass_scale'\] must be > 0"),
        (UniformParams({"friction_scale": (-1.0, 1.0)}), "must be >= 0"),
        (UniformParams({"gravity": (-10.0, -9.0)}), r"pair of shape \(3,\)"),
        (ParamSet(jnp.ones(3), replace="gears"), "replace names 'gears'"),
        (ParamSet({"mass_scale": jnp.ones(3)}), "members must be BraxPhysics stacked"),
    ]
    for distribution, message in cases:
        with pytest.raises(ValueError, match=message):
            brax(distribution=distribution)
    with pytest.raises(TypeError, match="distribution must be an evolax TaskDistribution"):
        brax(distribution={"mass_scale": (0.5, 2.0)})
    with pytest.raises(TypeError, match="physics must be a BraxPhysics or None, got dict"):
        brax(physics={"mass_scale": 2.0})
    with pytest.raises(ValueError, match=r"physics.gravity must have shape \(3,\)"):
        brax(physics=BraxPhysics(gravity=jnp.ones(2)))
    with pytest.raises(ValueError, match=r"physics\.mass_scale must be > 0"):
        brax(physics=BraxPhysics(mass_scale=-1.0))
    with pytest.raises(ValueError, match="'fast' has no physics model"):
        Brax("fast", distribution=UniformParams({"mass_scale": (0.5, 2.0)}))


def test_a_configuration_file_builds_the_randomised_task():
    # the example file, its undrawn fields set by an override
    resolved = config.override(config.resolve(EXAMPLE), "task.physics={friction_scale: 0.75}")
    task = config.build_task(resolved)
    assert isinstance(task, Brax) and task.env_name == ENV
    assert isinstance(task.distribution, UniformParams)
    ranges = resolved["task"]["distribution"]["ranges"]
    assert set(task.distribution.ranges) == set(ranges)
    for name, (low, high) in ranges.items():
        np.testing.assert_array_equal(task.distribution.ranges[name], np.float32((low, high)))
    assert task.physics.friction_scale == 0.75 and task.physics.mass_scale == 1.0


def episodes(reset, step, keys, actions):
    """``(obs, reward)`` of every episode (one per key) under the same ``actions[t]``."""

    def episode(key):
        def body(state, action):
            state, reward = step(state, action)
            return state, (state.obs, reward)

        first = reset(key)
        obs, rewards = jax.lax.scan(body, first, actions)[1]
        return jnp.concatenate([first.obs[None], obs]), rewards

    return jax.jit(jax.vmap(episode))(keys)


def task_episodes(task, keys, actions):
    return episodes(task.reset, lambda s, a: task.step(s, a, jax.random.key(0))[:2], keys, actions)


ACTIONS = 0.8 * jnp.sin(jnp.arange(STEPS, dtype=jnp.float32))[:, None]


@pytest.mark.slow  # two Brax episodes compiled per backend (about 20 s each)
@pytest.mark.parametrize("backend", ["mjx", "generalized"])
def test_unit_physics_give_the_plain_tasks_episodes_bit_for_bit(backend):
    plain = Brax(ENV, backend=backend, max_steps=STEPS)
    g = tuple(np.asarray(plain.sys.gravity).tolist())
    unit = UniformParams({f: (1.0, 1.0) for f in ("mass_scale", "friction_scale", "gear_scale")})
    drawn = Brax(
        ENV,
        backend=backend,
        max_steps=STEPS,
        distribution=UniformParams({**unit.ranges, "gravity": (g, g)}),
    )
    keys = jax.random.split(jax.random.key(4), 3)
    reset_keys = jax.vmap(lambda k: jax.random.split(k)[0])(keys)  # Brax's reset's key
    obs, rewards = task_episodes(drawn, keys, ACTIONS)
    ref_obs, ref_rewards = task_episodes(plain, reset_keys, ACTIONS)
    np.testing.assert_array_equal(obs, ref_obs)
    np.testing.assert_array_equal(rewards, ref_rewards)


@pytest.mark.slow  # Brax's and the task's episodes compiled per backend (about 20 s each)
@pytest.mark.parametrize("backend", ["mjx", "generalized"])
def test_each_members_episode_is_brax_on_its_own_system(backend):
    task = Brax(
        ENV,
        backend=backend,
        max_steps=STEPS,
        distribution=ParamSet(
            BraxPhysics(
                mass_scale=jnp.array([2.0, 1.0, 1.0]),
                friction_scale=jnp.array([1.0, 0.5, 1.0]),
                gear_scale=jnp.array([1.0, 0.5, 1.0]),
                gravity=jnp.array([[0.0, 0.0, -9.81], [0.0, 0.0, -3.7], [0.0, 0.0, -9.81]]),
            )
        ),
    )
    systems = [
        mujoco_system(task.sys, mass=2.0),
        mujoco_system(task.sys, friction=0.5, gear=0.5, gravity=(0.0, 0.0, -3.7)),
        mujoco_system(task.sys),
    ]
    keys = jax.random.split(jax.random.key(5), 3)
    # the task: episode i on member i (each its own task, batched by vmap, as multi-task
    # MAP-Elites runs them)
    obs, rewards = jax.jit(
        jax.vmap(
            lambda i, k: jax.tree.map(
                lambda x: x[0], task_episodes(on_member(task, i), k[None], ACTIONS)
            )
        )
    )(jnp.arange(3), keys)
    # Brax: its domain-randomisation wrapper steps the three systems under vmap
    env = EpisodeWrapper(envs.get_environment(ENV, backend=backend), STEPS, action_repeat=1)
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *systems)
    env = DomainRandomizationVmapWrapper(
        env, lambda _: (stacked, jax.tree.map(lambda _: 0, stacked))
    )
    reset_keys = jax.vmap(lambda k: jax.random.split(k)[0])(keys)

    def brax_episodes(keys):
        def body(state, action):
            state = env.step(state, jnp.broadcast_to(action, (3, 1)))
            return state, (state.obs, state.reward)

        with jax.numpy_rank_promotion("allow"):  # Brax relies on it; conftest.py forbids it
            first = env.reset(keys)
            ref_obs, ref_rewards = jax.lax.scan(body, first, ACTIONS)[1]
        return jnp.concatenate([first.obs[None], ref_obs]).swapaxes(0, 1), ref_rewards.T

    ref_obs, ref_rewards = jax.jit(brax_episodes)(reset_keys)
    np.testing.assert_allclose(obs, ref_obs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rewards, ref_rewards, rtol=1e-5, atol=1e-5)
    # the physics matter: the heavier pendulum and the weaker motor under low gravity move
    # differently from the model's (member 2)
    assert np.abs(obs[0] - obs[2]).max() > 1e-2 and np.abs(obs[1] - obs[2]).max() > 1e-2


@pytest.mark.slow  # about 90 s on 2 busy cores, compiling the trainer
def test_pgpe_trains_on_random_physics_and_is_tested_on_held_out_physics():
    # docs/environments.md's example: train on one range of masses and gravities, test on a
    # heavier one
    train = UniformParams({"mass_scale": (0.5, 2.0), "gravity": ((0, 0, -11.0), (0, 0, -8.0))})
    held_out = UniformParams({"mass_scale": (2.0, 3.0), "gravity": ((0, 0, -13.0), (0, 0, -11.0))})
    task = Brax("inverted_pendulum", max_steps=100, distribution=train)
    test_task = Brax("inverted_pendulum", max_steps=100, distribution=held_out)
    trainer = evolax.Trainer(
        evolax.PGPE(pop_size=16, optimizer=optax.adam(0.1), init_std=0.5),
        evolax.MLP(hidden_sizes=()),
        task,
        n_repeats=4,
        normalize_obs=True,
        test_task=test_task,
    )

    def run(key):
        state, history = trainer.run(trainer.init(key), 50)
        return history["fitness_mean"], trainer.test(state, key, 16)

    # measured (seed 0): the mean return rises from 6 to 85-94 (of 100) in 50 generations, and
    # the best solution balances the heavier pendulum for all 100 steps
    mean, test_returns = jax.jit(run)(jax.random.key(0))
    assert mean[0] < 30.0 and mean[-5:].max() > 70.0, mean
    assert test_returns.shape == (16,) and (0 <= test_returns).all() and (test_returns <= 100).all()
