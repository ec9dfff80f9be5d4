"""LGA: the shipped meta-trained weights load and minimise a sphere (random weights do worse),
the arguments are checked, the first generation is the evaluated start population, children
with a non-finite fitness never become parents and parents with one are always replaced; and
(slow) the held-out BBOB comparison with OpenES and SNES."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.learned import common as learned
from evolax.algorithms.learned.common import load_weights
from evolax.algorithms.learned.lga import LGA, LGA_SHAPES
from helpers import held_out_areas

DIM = 6


POP = 8


@jax.jit
def generation(params, key, state, failed):
    """One LGA generation (``POP`` members, ``init_std`` 0.5, ``params``) on the sphere
    ``|x - 1|^2``, the members where ``failed`` told NaN: ``(x, asked state, new state)``.
    One compile serves every test and every set of weights."""
    algo = LGA(pop_size=POP, init_std=0.5, params=params)
    ask_key, tell_key = jax.random.split(key)
    x, asked = algo.ask(ask_key, state)
    fitness = jnp.where(failed, jnp.nan, -jnp.sum((x - 1.0) ** 2, axis=1))
    new, _ = algo.tell(tell_key, asked, x, fitness)
    return x, asked, new


def start(x0=None):
    x0 = jnp.full(DIM, -2.0) if x0 is None else x0
    return LGA(pop_size=POP, init_std=0.5).init(jax.random.key(0), x0)


def final_precision(params, generations=100):
    """The sphere's best value after ``generations`` from ``x0 = -2``, and the final state."""
    state, clean = start(), jnp.zeros(POP, bool)
    for g in range(generations):
        _, _, state = generation(params, jax.random.key(g), state, clean)
    return -state.best_fitness, state


def random_weights(seed):
    """Weights drawn as meta-training starts them: kernels N(0, 1 / fan_in), biases 0."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in LGA_SHAPES.items():
        fan_in = shape[0] * shape[1] if name.endswith(".out.kernel") else shape[0]
        kernel = rng.normal(size=shape) / np.sqrt(fan_in)
        weights[name] = (kernel if name.endswith(".kernel") else np.zeros(shape)).astype(np.float32)
    return weights


def test_shipped_weights_load_with_the_network_s_shapes():
    weights = load_weights("lga")
    assert {k: v.shape for k, v in weights.items()} == LGA_SHAPES
    algo = LGA(pop_size=8)
    assert all(np.array_equal(algo.params[k], weights[k]) for k in LGA_SHAPES)
    assert sum(v.size for v in weights.values()) == 1906


def test_shipped_weights_minimise_a_sphere_and_random_weights_do_not():
    # the shipped weights: 6e-3 after 100 generations, 4e-5 after 150; random ones stall at 33
    precision, state = final_precision(load_weights("lga"), generations=150)
    assert state.population.shape == (POP, DIM)
    assert state.std.shape == state.age.shape == state.child_std.shape == (POP,)
    random_precision, _ = final_precision(random_weights(1), generations=150)
    assert float(precision) < 1e-3
    assert float(random_precision) > 100 * float(precision)


def test_a_missing_weights_file_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(learned, "WEIGHTS_DIR", tmp_path)
    with pytest.raises(
        FileNotFoundError, match=r"^the meta-trained LGA weights .* are missing"
    ) as e:
        LGA(pop_size=8)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(pop_size=1), r"pop_size must be at least 2 to rank members, got 1"),
        (dict(init_std=-1.0), r"init_std must be a finite positive number, got -1.0"),
        (dict(params="nowhere.npz"), r"params: no weights file 'nowhere.npz'"),
        (
            dict(params={"sampling.logit.bias": np.zeros(1)}),
            r"params must hold the LGA network's 32 arrays; missing \[",
        ),
        (
            dict(params={**load_weights("lga"), "selection.key_s.kernel": np.zeros((16, 3))}),
            r"params\['selection.key_s.kernel'\] must have shape \(3, 16\), got \(16, 3\)",
        ),
    ],
)
def test_bad_arguments_raise_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as e:
        LGA(**{"pop_size": 8, **kwargs})
    assert "\n" not in str(e.value)


def test_the_first_generation_becomes_the_parents():
    x0 = jnp.arange(DIM, dtype=jnp.float32)
    clean = jnp.zeros(POP, bool)
    x, _, told = generation(load_weights("lga"), jax.random.key(1), start(x0), clean)
    spread = np.std(np.asarray(x) - np.asarray(x0), axis=0)
    assert np.all((spread > 0.2) & (spread < 1.0))  # x0 + 0.5 N(0, I)
    np.testing.assert_array_equal(told.population, x)
    np.testing.assert_allclose(told.fitness, -jnp.sum((x - 1.0) ** 2, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(told.std, jnp.full(POP, 0.5))


def test_non_finite_children_never_become_parents_and_failed_parents_are_replaced():
    params = load_weights("lga")
    parent_failed = jnp.arange(POP) == 2
    _, _, state = generation(params, jax.random.key(1), start(), parent_failed)
    assert float(state.fitness[2]) == -np.inf
    failed = jnp.arange(POP) % 2 == 0  # half the children fail
    for seed in range(10):
        x, _, new = generation(params, jax.random.key(10 + seed), state, failed)
        assert np.all(np.isfinite(new.fitness))  # parent 2 replaced, no failed child taken
        rows = {tuple(np.asarray(row)) for row in new.population}
        assert not rows & {tuple(np.asarray(row)) for row in x[failed]}


# ---- the paper's held-out BBOB comparison (slow) ---------------------------------------------


@pytest.mark.slow
def test_held_out_bbob_functions_against_open_es_and_snes():
    """Lange et al. (2023b), the BBOB generalisation comparison: LGA meta-trained on a few
    BBOB functions is competitive on functions it never saw. Measured (learned_es.md), ECDF
    area: LGA 0.062 / SNES 0.056 / OpenES 0.034 at 100 d (the meta-training horizon), 0.105
    / 0.128 / 0.075 at 1000 d."""
    areas = held_out_areas("LGA", LGA(pop_size=16))
    for budget in (100, 1000):
        assert areas["LGA"][budget] > 1.3 * areas["OpenES"][budget], budget
    assert areas["LGA"][100] > 0.95 * areas["SNES"][100]


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="measured: SNES 0.128 vs LGA 0.105 (ECDF area, 1000 d)")
def test_held_out_bbob_functions_beyond_the_meta_training_horizon_beat_snes():
    """The paper's LGA is competitive with ES baselines on held-out functions; the shipped
    weights (31 minutes of meta-training on 2 CPU cores, 100-generation runs) fall short of
    SNES at 10 times their training horizon."""
    areas = held_out_areas("LGA", LGA(pop_size=16))
    assert areas["LGA"][1000] > 0.95 * areas["SNES"][1000]
