"""LES: the shipped meta-trained weights load and minimise a sphere (random weights do not),
the network's arguments are checked, failed members get no weight, and the recombination
weights do not depend on the members' order; and (slow) the held-out BBOB comparison with
OpenES and SNES."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.learned import common as learned
from evolax.algorithms.learned.common import load_weights
from evolax.algorithms.learned.les import LES, LES_SHAPES, recombination_weights
from helpers import held_out_areas

DIM = 6


POP = 16


@jax.jit
def generation(params, key, state, failed, moved):
    """One LES generation (``POP`` samples, ``params``) on the sphere ``|x - 1|^2``: the
    samples where ``failed`` tell NaN, and ``moved`` is added to the samples before the tell.
    Returns ``(x, new state)``. One compile serves every test and every set of weights."""
    algo = LES(pop_size=POP, params=params)
    ask_key, tell_key = jax.random.split(key)
    x, asked = algo.ask(ask_key, state)
    fitness = jnp.where(failed, jnp.nan, -jnp.sum((x - 1.0) ** 2, axis=1))
    new, _ = algo.tell(tell_key, asked, x + moved, fitness)
    return x, new


def start():
    return LES(pop_size=POP).init(jax.random.key(0), jnp.full(DIM, -2.0))


CLEAN, STILL = jnp.zeros(POP, bool), jnp.zeros((POP, DIM))


def final_precision(params, generations=100):
    """The sphere's best value after ``generations`` from ``x0 = -2``, and the final state."""
    state = start()
    for g in range(generations):
        _, state = generation(params, jax.random.key(g), state, CLEAN, STILL)
    return -state.best_fitness, state


def random_weights(seed):
    """Weights drawn as meta-training starts them: kernels N(0, 1 / fan_in), biases 0."""
    rng = np.random.default_rng(seed)
    return {
        name: (rng.normal(size=shape) / np.sqrt(shape[0]) if name.endswith(".kernel")
               else np.zeros(shape)).astype(np.float32)
        for name, shape in LES_SHAPES.items()
    }  # fmt: skip


def test_shipped_weights_load_with_the_network_s_shapes():
    weights = load_weights("les")
    assert {k: v.shape for k, v in weights.items()} == LES_SHAPES
    algo = LES(pop_size=8)
    assert all(np.array_equal(algo.params[k], weights[k]) for k in LES_SHAPES)
    assert sum(v.size for v in weights.values()) == 246


def test_shipped_weights_minimise_a_sphere_and_random_weights_do_not():
    precision, state = final_precision(load_weights("les"))
    assert state.mean.shape == state.std.shape == (DIM,)
    assert state.path_mean.shape == state.path_std.shape == (DIM, 3)
    random_precision, _ = final_precision(random_weights(1))
    assert float(precision) < 1e-4
    assert float(random_precision) > 100 * float(precision)


def test_a_missing_weights_file_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(learned, "WEIGHTS_DIR", tmp_path)
    with pytest.raises(
        FileNotFoundError, match=r"^the meta-trained LES weights .* are missing"
    ) as e:
        LES(pop_size=8)
    assert "\n" not in str(e.value)


def test_params_from_a_file(tmp_path):
    weights = random_weights(2)
    np.savez(tmp_path / "w.npz", **weights)
    algo = LES(pop_size=8, params=str(tmp_path / "w.npz"))
    assert all(np.array_equal(algo.params[k], weights[k]) for k in LES_SHAPES)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(pop_size=1), r"pop_size must be at least 2 to rank samples, got 1"),
        (dict(init_std=0.0), r"init_std must be a finite positive number, got 0.0"),
        (dict(params="nowhere.npz"), r"params: no weights file 'nowhere.npz'"),
        (dict(params=[1.0]), r"params must be a dict of arrays, an .npz path or None, got list"),
        (
            dict(params={"lr.mean.bias": np.zeros(1)}),
            r"params must hold the LES network's 12 arrays; missing \[",
        ),
        (
            dict(params={**load_weights("les"), "lr.std.bias": np.zeros(2)}),
            r"params\['lr.std.bias'\] must have shape \(1,\), got \(2,\)",
        ),
    ],
)
def test_bad_arguments_raise_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as e:
        LES(**{"pop_size": 8, **kwargs})
    assert "\n" not in str(e.value)


def test_a_failed_member_gets_no_weight():
    """Moving a sample whose fitness is NaN changes nothing in the update."""
    params, state, key = load_weights("les"), start(), jax.random.key(1)
    failed = jnp.arange(POP) == 3
    _, new = generation(params, key, state, failed, STILL)
    _, moved = generation(params, key, state, failed, STILL.at[3].add(5.0))
    np.testing.assert_array_equal(new.mean, moved.mean)
    np.testing.assert_array_equal(new.std, moved.std)
    assert not np.array_equal(new.mean, state.mean)


def test_recombination_weights_follow_the_members_not_their_order():
    features = jax.random.normal(jax.random.key(0), (8, 3))
    order = jnp.array([5, 2, 7, 0, 1, 6, 3, 4])
    both = jax.jit(jax.vmap(recombination_weights, in_axes=(None, 0)))
    weights, permuted = both(load_weights("les"), jnp.stack([features, features[order]]))
    np.testing.assert_allclose(permuted, weights[order], rtol=1e-5)
    np.testing.assert_allclose(jnp.sum(weights), 1.0, rtol=1e-6)


# ---- the paper's held-out BBOB comparison (slow) ---------------------------------------------


@pytest.mark.slow
def test_held_out_bbob_functions_against_open_es_and_snes():
    """Lange et al. (2023a), the BBOB generalisation comparison: LES meta-trained on a few BBOB
    functions is competitive on functions it never saw. Measured (learned_es.md), ECDF area:
    LES 0.057 / SNES 0.056 / OpenES 0.034 at 100 d (the meta-training horizon), 0.126 /
    0.128 / 0.075 at 1000 d."""
    areas = held_out_areas("LES", LES(pop_size=16))
    for budget in (100, 1000):
        assert areas["LES"][budget] > 1.3 * areas["OpenES"][budget], budget
        assert areas["LES"][budget] > 0.95 * areas["SNES"][budget], budget


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="measured: SNES 0.128 vs LES 0.126 (ECDF area, 1000 d)")
def test_held_out_bbob_functions_beyond_the_meta_training_horizon_beat_snes():
    """The paper's LES outperforms SNES on held-out functions; the shipped weights (30
    minutes of meta-training on 2 CPU cores, 100-generation runs) fall just short of SNES
    at 10 times their training horizon."""
    areas = held_out_areas("LES", LES(pop_size=16))
    assert areas["LES"][1000] > areas["SNES"][1000]


@pytest.mark.slow  # a reference check against evosax (nox -s slow)
def test_evosax_floors_the_std():
    """evosax 0.3.2's ``LearnedES`` adds ``1e-8`` under the square root of the std's target
    ``sqrt(sum_j w_j (x_j - m)^2 + 1e-8)``, which floors the std near ``1e-4``; evolax follows
    the paper (no floor). All members at the mean: the paper's target spread is 0, evosax's
    ``sqrt(1e-8)``. (At spreads near 1 the difference is invisible: the reference table's
    ``LES`` rows.)"""
    evosax = pytest.importorskip("evosax.algorithms")
    from reference_table import allow, les_to_evosax

    params = load_weights("les")
    theirs = evosax.LearnedES(
        population_size=4, solution=jnp.zeros(3), params=les_to_evosax(params)
    )
    their_params = theirs.default_params.replace(std_init=1e-6)
    ours = LES(pop_size=4, init_std=1e-6, params=params)
    key = jax.random.key(0)
    state = ours.init(key, jnp.zeros(3))
    their_state = theirs.init(key, jnp.zeros(3), their_params)
    population = jnp.zeros((4, 3))
    fitness = jnp.array([1.0, 2.0, 3.0, 4.0])
    new, _ = ours.tell(key, state, population, fitness)
    with allow():
        their_state, _ = theirs.tell(key, population, -fitness, their_state, their_params)
    assert np.all(np.asarray(new.std) < 1e-6)  # shrinks toward 0
    assert np.all(np.asarray(their_state.std) > 1e-6)  # pulled toward 1e-4
