"""LowRankES's per-leaf noise scale (``layer_scale``): its members against the unscaled
members of the same seeds, its update against OpenES's estimate written in numpy from the
members, and the estimate's mean against the analytic gradient of a quadratic."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from evolax.algorithms import LowRankES, raw
from evolax.seeded import densify

GENOME = {
    "b": jnp.linspace(-0.5, 0.5, 3),
    "n": jnp.array([1.0, -2.0]),
    "w": jnp.arange(12.0).reshape(4, 3) / 10.0,
}
SCALES = {"b": 2.0, "n": 1.0, "w": 0.5}
CURVATURE = {"b": 0.5, "n": 2.0, "w": 1.0}
TARGET = {"b": np.array([1.0, 0.5, -1.0]), "n": np.array([0.5, -1.5]), "w": np.full((4, 3), 2.0)}
STD = 0.1


def flat(tree) -> np.ndarray:
    return np.concatenate([np.asarray(tree[k], np.float64).ravel() for k in sorted(tree)])


def coordinates(tree) -> np.ndarray:
    """A per-leaf value repeated over the leaf's coordinates, in ``flat``'s order."""
    return np.concatenate([np.full(np.size(GENOME[k]), tree[k], np.float64) for k in sorted(tree)])


def gradient() -> np.ndarray:
    """The quadratic's gradient at the mean, analytically: ``h_l (T_l - x_l)``."""
    return coordinates(CURVATURE) * (flat(TARGET) - flat(GENOME))


def algorithm(rank, pop_size, layer_scale):
    return LowRankES(
        pop_size=pop_size,
        rank=rank,
        init_std=STD,
        optimizer=optax.sgd(1.0),
        fitness_shaping=raw,
        layer_scale=layer_scale,
    )


def members_of(es, key):
    """The members ``ask`` gives, formed: ``[pop, D]`` in ``flat``'s order."""
    state = es.init(jax.random.key(0), GENOME)
    population, _ = es.ask(key, state)
    return jax.vmap(lambda g: ravel_pytree(g)[0])(densify(population)), state, population


def one_step(rank, pop_size, layer_scale):
    """One ask and tell on ``f(x) = -sum_l h_l |x_l - T_l|^2 / 2`` (raw fitness, sgd of step
    1: the mean moves by the estimate): the members, their fitness, the step and the state."""
    es = algorithm(rank, pop_size, layer_scale)
    h = jnp.asarray(coordinates(CURVATURE), jnp.float32)
    target = jnp.asarray(flat(TARGET), jnp.float32)

    @jax.jit
    def run(key):
        members, state, population = members_of(es, key)
        fitness = -0.5 * jnp.sum(h[None] * (members - target[None]) ** 2, axis=1)
        new, _ = es.tell(key, state, population, fitness)
        return members, fitness, new

    members, fitness, new = run(jax.random.key(1))
    step = flat(new.mean) - flat(GENOME)
    return np.asarray(members, np.float64), np.asarray(fitness, np.float64), step, new


@pytest.mark.parametrize("rank", [2, pytest.param(0, marks=pytest.mark.slow)])
def test_members_and_update_are_open_es_with_a_scale_per_leaf(rank):
    """Member ``i`` is ``mean + std s_l E_i`` (``E_i`` the unscaled members' noise, the same
    seeds), and the step is ``sum_i f_i eps_i / (pop std s_l)`` with ``eps_i = (x_i -
    mean) / (std s_l)``, computed in numpy from the members."""
    members, fitness, step, _ = one_step(rank, 8, SCALES)
    unscaled = jax.jit(members_of, static_argnums=0)(algorithm(rank, 8, None), jax.random.key(1))
    plain = np.asarray(unscaled[0])
    mean, spread = flat(GENOME), STD * coordinates(SCALES)
    np.testing.assert_allclose(
        members - mean, coordinates(SCALES) * (plain - mean), rtol=1e-5, atol=1e-6
    )
    eps = (members - mean) / spread
    reference = fitness @ eps / (len(fitness) * spread)
    np.testing.assert_allclose(step, reference, rtol=1e-4, atol=1e-5 * np.abs(reference).max())


@pytest.mark.parametrize("rank", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_the_estimate_of_a_quadratic_has_the_gradient_as_its_mean(rank):
    """Over 40,000 antithetic pairs the estimate is the analytic gradient in every leaf
    within 5 standard errors (each pair's term computed in numpy from the members); the
    estimate without the division by ``s_l`` (``s_l`` times the gradient) is many standard
    errors away, so the check can tell them apart."""
    half = 40_000
    members, fitness, step, _ = one_step(rank, 2 * half, SCALES)
    spread = STD * coordinates(SCALES)
    eps = (members[:half] - flat(GENOME)) / spread
    terms = (fitness[:half] - fitness[half:])[:, None] * eps / (2 * spread)
    np.testing.assert_allclose(step, terms.mean(axis=0), rtol=1e-3, atol=1e-4)
    error = terms.std(axis=0) / np.sqrt(half)
    assert np.max(np.abs(step - gradient()) / error) < 5
    wrong = coordinates(SCALES) * gradient()
    scaled = coordinates(SCALES) != 1.0  # b and w
    assert np.min(np.abs(wrong - gradient())[scaled] / error[scaled]) > 8


@pytest.mark.slow  # two compilations; the None path is the code as it was
def test_unit_scales_give_the_unscaled_update_bit_for_bit():
    ones = {k: 1.0 for k in GENOME}
    _, _, _, scaled = one_step(2, 8, ones)
    _, _, _, plain = one_step(2, 8, None)
    assert not hasattr(plain, "layer_scale")  # the state as before: its checkpoints resume
    assert jax.tree.all(jax.tree.map(lambda x, y: bool(jnp.all(x == y)), scaled.mean, plain.mean))


def test_rms_scales_are_the_rms_of_the_initial_mean_floored():
    genome = {**GENOME, "zero": jnp.zeros(4)}
    state = LowRankES(pop_size=4, layer_scale="rms", layer_scale_floor=0.05).init(
        jax.random.key(0), genome
    )
    for name, leaf in genome.items():
        rms = max(np.sqrt(np.mean(np.asarray(leaf, np.float64) ** 2)), 0.05)
        np.testing.assert_allclose(state.layer_scale[name], rms, rtol=1e-6)


@pytest.mark.parametrize(
    "layer_scale, message",
    [
        ("max", r"layer_scale must be None, one of \['rms'\] or a pytree"),
        ({"b": 1.0, "w": -2.0}, r"its leaf \['w'\] is -2.0"),
        ({"b": 1.0, "w": np.ones(2)}, r"its leaf \['w'\] is"),
        ({}, "got an empty dict"),
    ],
)
def test_bad_layer_scales_raise_one_line_errors(layer_scale, message):
    with pytest.raises(ValueError, match=message):
        LowRankES(pop_size=4, layer_scale=layer_scale)


def test_a_layer_scale_unlike_the_genome_fails_at_init():
    with pytest.raises(ValueError, match=r"not the genome's \(2 leaves, the genome 3\)"):
        LowRankES(pop_size=4, layer_scale={"b": 1.0, "w": 2.0}).init(jax.random.key(0), GENOME)
    with pytest.raises(ValueError, match="layer_scale_floor must be a finite positive number"):
        LowRankES(pop_size=4, layer_scale="rms", layer_scale_floor=0.0)
