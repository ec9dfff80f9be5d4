"""`Trainer`: one compile, pure under jit and vmap, learns."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax import MLP, PGPE, CartPoleSwingUp, Trainer


def small_trainer(**kwargs):
    defaults = dict(
        algorithm=PGPE(pop_size=8, optimizer=optax.adam(0.05)),
        policy=MLP(hidden_sizes=(16,)),
        task=CartPoleSwingUp(max_steps=40),
        n_repeats=2,
    )
    return Trainer(**{**defaults, **kwargs})


def assert_trees_close(a, b, rtol=1e-5, atol=1e-6):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


def test_run_compiles_once(key):
    trainer = small_trainer()
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(state):
        return trainer.run(state, 3)

    state, _ = run(trainer.init(key))
    state, history = run(state)  # a second call must reuse the compiled program
    assert int(state.generation) == 6
    assert history["fitness_mean"].shape == (3,)


def test_run_equals_repeated_steps(key):
    trainer = small_trainer()
    state = trainer.init(key)
    scanned, history = jax.jit(trainer.run, static_argnums=1)(state, 3)
    step = jax.jit(trainer.step)
    for g in range(3):
        state, metrics = step(state)
        np.testing.assert_allclose(metrics["fitness_mean"], history["fitness_mean"][g], rtol=1e-5)
    assert_trees_close(scanned, state)


def test_vmap_over_seeds_equals_separate_runs():
    trainer = small_trainer()
    keys = jax.random.split(jax.random.key(7), 3)
    run = jax.jit(lambda k: trainer.run(trainer.init(k), 4))
    batched, batched_history = jax.jit(jax.vmap(lambda k: trainer.run(trainer.init(k), 4)))(keys)
    for i, k in enumerate(keys):
        single, history = run(k)
        assert_trees_close(jax.tree.map(lambda x, i=i: x[i], batched), single, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(
            batched_history["fitness_max"][i], history["fitness_max"], rtol=1e-4
        )


def test_vmap_over_hyperparameters(key):
    def final_std(std_lr):
        trainer = small_trainer(algorithm=PGPE(pop_size=8, std_lr=std_lr))
        state, _ = trainer.run(trainer.init(key), 2)
        return jnp.mean(state.algo_state.std)

    stds = jax.jit(jax.vmap(final_std))(jnp.array([0.0, 0.5]))
    assert float(stds[0]) == pytest.approx(0.1)  # std_lr = 0 leaves the std alone
    assert float(stds[1]) != pytest.approx(0.1)


def test_normalize_obs_counts_every_alive_step(key):
    trainer = small_trainer(normalize_obs=True)
    state, _ = jax.jit(trainer.run, static_argnums=1)(trainer.init(key), 2)
    assert float(state.obs_stats.count) == float(state.env_steps) > 0
    chex.assert_tree_all_finite(state.obs_stats)
    scores = trainer.test(state, key, n_episodes=3)
    assert scores.shape == (3,)


def test_learns_cartpole(key):
    trainer = small_trainer(
        algorithm=PGPE(pop_size=16, optimizer=optax.adam(0.05)), task=CartPoleSwingUp(max_steps=200)
    )
    state = trainer.init(key)
    before = float(trainer.test(state, key, 20).mean())
    state, _ = jax.jit(trainer.run, static_argnums=1)(state, 30)
    after = float(trainer.test(state, key, 20).mean())
    assert after > before + 30, (before, after)


def test_bad_n_repeats():
    with pytest.raises(ValueError, match="n_repeats"):
        small_trainer(n_repeats=0)
    with pytest.raises(ValueError, match="n_generations"):
        small_trainer().run(small_trainer().init(jax.random.key(0)), 0)


def test_init_scale_scales_the_policy_initialisation(key):
    start = small_trainer().init(key).algo_state.best_genome
    zero = small_trainer(init_scale=0.0).init(key).algo_state.best_genome
    half = small_trainer(init_scale=0.5).init(key).algo_state.best_genome
    assert any(float(jnp.max(jnp.abs(x))) > 0 for x in jax.tree.leaves(start))
    leaves = (jax.tree.leaves(start), jax.tree.leaves(zero), jax.tree.leaves(half))
    for x, z, h in zip(*leaves, strict=True):
        np.testing.assert_array_equal(z, np.zeros_like(x))
        np.testing.assert_allclose(h, 0.5 * np.asarray(x), rtol=1e-6)
    for bad in (-1.0, float("nan"), float("inf"), "0"):
        with pytest.raises(ValueError, match="init_scale"):
            small_trainer(init_scale=bad)


def test_components_must_be_instances():
    with pytest.raises(TypeError, match=r"policy must be an instance, got the class MLP: pass"):
        small_trainer(policy=MLP)
    with pytest.raises(TypeError, match="test_task must be an instance, got the class Cart"):
        small_trainer(test_task=CartPoleSwingUp)
    with pytest.raises(TypeError, match=r"algorithm must be an evolax Algorithm .* got str"):
        small_trainer(algorithm="pgpe")
