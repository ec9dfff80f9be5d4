"""NSGA-III: the last front fills the emptiest niches first, nearest member first; the random
ties fall as the paper's one-at-a-time rule makes them; the hyperplane's intercepts give the
nadir point; non-finite children never survive; one compiled generation spreads a population
over DTLZ2's front, nearly one member per reference direction; arguments are checked. The
comparison with pymoo 0.6.2's NSGA-III is in test_nsga3_pymoo.py (slow)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.multiobjective.nsga3 import (
    NSGA3,
    NSGA3State,
    hyperplane_nadir,
    niching_survivors,
)
from evolax.problems.multiobjective import dtlz2
from helpers import assert_nonfinite_children_never_survive, front_runs

DIM, POP, GENERATIONS = 12, 28, 100  # 28 members: the 28 directions of 6 divisions
DTLZ2_OPTIMUM = 1.1**3 - np.pi / 6  # the box 1.1^3 minus the unit sphere's octant


@pytest.fixture(scope="module")
def runs():
    """Two runs on DTLZ2 with one compiled program: a clean one, and one whose even children
    of the last generation have a NaN objective."""
    algo = NSGA3(pop_size=POP, n_objectives=3, lower=0.0, upper=1.0, reference_point=(-1.1,) * 3)

    return front_runs(algo, dtlz2, DIM, GENERATIONS)


def test_spreads_over_dtlz2_one_member_per_direction(runs):
    state, (metrics, _) = runs["clean"]
    hv = metrics["hypervolume"]
    # 28 members: the lattice's own directions on the sphere give 0.787 of the optimum, and
    # NSGA-II 0.67-0.78 (30 seeds); NSGA-III 0.81-0.84
    assert float(hv[-1]) > 0.79 * DTLZ2_OPTIMUM
    assert float(hv[-1]) > float(hv[9]) + 0.2
    assert int(metrics["front_size"][-1]) == POP
    # nearly every reference direction holds one member (26-28 of the 28 over 30 seeds;
    # NSGA-II's crowding distance leaves 15-21 of them filled)
    assert len(np.unique(np.asarray(state.niche))) >= POP - 2
    # the normalisation found the front's corners: ideal 0, nadir 1 (minimised)
    np.testing.assert_allclose(np.asarray(state.ideal), 0.0, atol=1e-3)
    np.testing.assert_allclose(np.asarray(state.nadir), -1.0, atol=0.06)
    assert jnp.all((state.population >= 0) & (state.population <= 1))
    assert int(state.generation) == GENERATIONS


def test_children_with_a_non_finite_objective_never_survive(runs):
    assert_nonfinite_children_never_survive(runs)


def test_the_emptiest_niche_takes_its_nearest_member_first():
    # two objectives, directions (1, 0), (1/2, 1/2), (0, 1); minimised objectives below
    algo = NSGA3(pop_size=3, n_objectives=2, divisions=2)

    inf = jnp.full(2, jnp.inf)
    state = NSGA3State(  # as init leaves it, but for the parents' fitness
        population=jnp.zeros((3, 2)),
        fitness=jnp.zeros((3, 2)),
        rank=jnp.zeros(3, jnp.int32),
        niche=jnp.zeros(3, jnp.int32),
        ideal=-inf,
        worst=inf,
        extremes=-jnp.stack([inf, inf]),
        nadir=-inf,
        best_genome=jnp.zeros(2),
        best_fitness=-inf[0],
        generation=jnp.zeros([], jnp.int32),
    )

    @jax.jit
    def tell(key, parents, children):
        return algo.tell(key, state.replace(fitness=parents), jnp.zeros((3, 2)), children)[0]

    # front 0: the corners A = (0, 1) and B = (1, 0): ideal 0, nadir 1, nothing rescaled;
    # their niches are (0, 1) and (1, 0). Front 1: D near (1, 0), H near (0, 1), and E and G
    # in the empty middle niche, E on its line.
    a, b = [0.0, 1.0], [1.0, 0.0]
    d, e, g, h = [1.2, 0.02], [1.1, 1.1], [0.9, 1.15], [0.02, 1.2]
    parents, children = -jnp.array([a, d, g]), -jnp.array([b, e, h])
    for seed in range(3):
        new = tell(jax.random.key(seed), parents, children)
        kept = {tuple(np.round(-np.asarray(row, np.float64), 2).tolist()) for row in new.fitness}
        # crowding distance would keep an end of front 1 (D or H); NSGA-III fills the middle
        assert kept == {tuple(a), tuple(b), tuple(e)}
        np.testing.assert_allclose(np.asarray(new.nadir), [-1.0, -1.0])
        np.testing.assert_array_equal(np.sort(np.asarray(new.niche)), [0, 1, 2])


def test_ties_fall_as_the_one_at_a_time_rule_makes_them():
    # member 0 (front 0) fills niche 0; the last front has 1, 2 (niche 0, distances 0.1,
    # 0.5) and 3, 4 (niche 1, distances 0.3, 0.2); two places remain. Niche 1 is empty: its
    # nearest member, 4, comes first. Then niches 0 and 1 both hold one: either gives one,
    # niche 0 a random member (1 or 2: not the nearest), niche 1 its last (3).
    rank = jnp.array([0, 1, 1, 1, 1])
    niche = jnp.array([0, 0, 0, 1, 1])
    distance = jnp.array([0.0, 0.1, 0.5, 0.3, 0.2])
    keys = jax.random.split(jax.random.key(0), 800)
    keep = jax.jit(jax.vmap(lambda k: niching_survivors(k, rank, niche, distance, 3, 3)))(keys)
    keep = np.sort(np.asarray(keep), axis=1)
    assert np.all(keep[:, 0] == 0) & np.all(keep[:, 2] == 4)
    share = np.bincount(keep[:, 1], minlength=5)[1:4] / len(keys)
    np.testing.assert_allclose(share, [0.25, 0.25, 0.5], atol=0.06)


def test_the_nadir_point_is_the_hyperplanes_intercepts():
    nadir_of = jax.jit(hyperplane_nadir)
    ideal = jnp.array([1.0, 1.0, 1.0])
    extremes = ideal[None] + jnp.array([[2.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 1.0]])
    far = jnp.full(3, 10.0)
    nadir = nadir_of(extremes, ideal, far, far, far)
    np.testing.assert_allclose(np.asarray(nadir), [3.0, 5.0, 2.0], rtol=1e-6)
    # capped at the worst point seen
    capped = nadir_of(extremes, ideal, jnp.array([10.0, 4.0, 10.0]), far, far)
    np.testing.assert_allclose(np.asarray(capped), [3.0, 4.0, 2.0], rtol=1e-6)
    # two equal extreme points: no hyperplane, the worst of the first front instead
    front = jnp.array([5.0, 6.0, 7.0])
    degenerate = nadir_of(extremes.at[2].set(extremes[1]), ideal, far, front, far)
    np.testing.assert_allclose(np.asarray(degenerate), [5.0, 6.0, 7.0])
    # an objective with no range takes the worst of the population
    flat = nadir_of(extremes, ideal, far, far.at[0].set(1.0), far)
    np.testing.assert_allclose(np.asarray(flat), [3.0, 5.0, 2.0], rtol=1e-6)
    flat = nadir_of(extremes.at[0].set(ideal), ideal, far, front.at[0].set(1.0), far)
    np.testing.assert_allclose(np.asarray(flat), [10.0, 6.0, 7.0])


def test_default_divisions_give_no_more_directions_than_members():
    assert NSGA3(pop_size=92, n_objectives=3).reference_directions.shape == (91, 3)
    assert NSGA3(pop_size=212, n_objectives=5).reference_directions.shape == (210, 5)
    assert NSGA3(pop_size=4, n_objectives=3).reference_directions.shape == (3, 3)
    directions = NSGA3(pop_size=8, n_objectives=3, divisions=4).reference_directions
    assert directions.shape == (15, 3)
    np.testing.assert_allclose(directions.sum(axis=1), 1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(n_objectives=1), r"n_objectives must be an integer >= 2, got 1"),
        (dict(divisions=0), r"divisions must be a positive integer, got 0"),
        (dict(divisions=2.5), r"divisions must be a positive integer, got 2.5"),
        (dict(lower=1.0, upper=0.0), r"lower must be below upper"),
        (dict(crossover_eta=-1.0), r"crossover_eta must be"),
        (dict(reference_point=(0.0,)), r"reference_point must have n_objectives = 2 values"),
        (dict(block_size=0), r"block_size must be a positive integer"),
    ],
)
def test_bad_arguments_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as e:
        NSGA3(**{"pop_size": 8, "n_objectives": 2, **kwargs})
    assert "\n" not in str(e.value)


def test_fitness_must_hold_one_vector_per_member():
    algo = NSGA3(pop_size=8, n_objectives=3)
    state = jax.eval_shape(algo.init, jax.random.key(0), jnp.zeros(4))
    with pytest.raises(ValueError) as e:  # traced only: nothing compiles
        jax.eval_shape(algo.tell, jax.random.key(2), state, jnp.zeros((8, 4)), jnp.zeros(8))
    assert str(e.value).splitlines()[0] == (
        "fitness must have shape (pop_size, n_objectives) = (8, 3), got (8,)"
    )
