"""MOEA/D: one compiled generation runs ZDT1 from a random population to near its front;
children with a non-finite objective never survive; the neighbourhoods are the nearest
weight vectors; the Tchebycheff update keeps a member that is better for its own weight and
gives each subproblem the best child that reaches it; ``min_weight`` makes objectives of zero
weight count; arguments are checked. The comparison
with pymoo 0.6.2's MOEA/D is in test_moead_pymoo.py (slow)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.multiobjective.moead import MOEAD, MOEADState, tchebycheff
from evolax.problems.multiobjective import zdt1
from helpers import assert_nonfinite_children_never_survive, front_runs

DIM, POP, NEIGHBORS, GENERATIONS = 10, 20, 5, 150  # 20 members: the lattice of 19 divisions
ZDT1_OPTIMUM = 1.1**2 - 1.0 / 3.0  # the box 1.1^2 minus the area under f2 = 1 - sqrt(f1)


@pytest.fixture(scope="module")
def runs():
    """Two runs on ZDT1 with one compiled program: a clean one, and one whose even children
    of the last generation have a NaN objective."""
    algo = MOEAD(
        pop_size=POP,
        n_objectives=2,
        lower=0.0,
        upper=1.0,
        n_neighbors=NEIGHBORS,
        reference_point=(-1.1, -1.1),
    )

    return front_runs(algo, zdt1, DIM, GENERATIONS)


def test_approaches_the_zdt1_front(runs):
    state, (metrics, _) = runs["clean"]
    hv = np.asarray(metrics["hypervolume"])
    # 20 members, 3000 evaluations: 0.885-0.964 of the optimum over 20 seeds (pymoo's MOEAD,
    # sequential: 0.89-0.96 over 10); the random first population (g about 5.5) covers
    # none of the box
    assert hv[0] < 0.1 * ZDT1_OPTIMUM
    assert hv[-1] > 0.85 * ZDT1_OPTIMUM
    assert float(metrics["replaced"][0]) == POP  # the first population fills every slot
    assert int(metrics["front_size"][-1]) >= POP - 2
    # the ideal point is the best value seen in each objective: near ZDT1's, (0, 0)
    ideal = np.asarray(state.ideal)
    assert np.all(ideal >= np.asarray(state.fitness.max(axis=0))) and np.all(ideal <= 0)
    assert ideal[0] > -0.05 and ideal[1] > -0.3  # over 50 seeds: >= -0.03, >= -0.24
    assert jnp.all((state.population >= 0) & (state.population <= 1))
    assert int(state.generation) == GENERATIONS


def test_children_with_a_non_finite_objective_never_survive(runs):
    assert_nonfinite_children_never_survive(runs)


def test_neighbourhoods_are_the_nearest_weights():
    # 2 objectives, 11 members: w_i = (1 - i/10, i/10), |w_i - w_j| = sqrt(2) |i - j| / 10,
    # so B(i) is the window of 5 consecutive indices around i, shifted inside [0, 10]
    algo = MOEAD(pop_size=11, n_objectives=2, n_neighbors=5)
    i = np.arange(11)
    np.testing.assert_allclose(algo.weights, np.stack([1 - i / 10, i / 10], axis=1))
    neighbors = algo.neighbors
    assert neighbors.shape == (11, 5) and neighbors.dtype == np.int32
    np.testing.assert_array_equal(neighbors[:, 0], i)  # itself first
    for row in i:
        start = min(max(row - 2, 0), 11 - 5)
        assert set(neighbors[row].tolist()) == set(range(start, start + 5))
    # 3 objectives: 91 weights of 12 divisions by default, 20 neighbours in all
    algo = MOEAD(pop_size=91, n_objectives=3)
    weights, neighbors = algo.weights, algo.neighbors
    assert weights.shape == (91, 3) and neighbors.shape == (91, 20)
    distance = np.linalg.norm(weights[:, None] - weights[None], axis=-1)
    np.testing.assert_array_equal(neighbors[:, 0], np.arange(91))
    assert all(len(set(row)) == 20 for row in neighbors.tolist())
    # 20 distinct rows none farther than the 20th smallest distance: a set of 20 nearest
    # (up to rounding: equal distances are ties, which go to the lower index)
    inside = np.take_along_axis(distance, neighbors.astype(np.int64), axis=1)
    assert np.all(inside.max(axis=1) <= np.sort(distance, axis=1)[:, 19] + 1e-12)


def test_tchebycheff_update_keeps_a_member_better_for_its_own_weight():
    # weights (1, 0), (1/2, 1/2), (0, 1); 2 neighbours: B(0) = {0, 1}, B(1) = {1, 0} (the
    # tie with 2 goes to the lower index), B(2) = {2, 1}. Objectives minimised below
    # (fitness is their negation).
    algo = MOEAD(pop_size=3, n_objectives=2, n_neighbors=2)
    np.testing.assert_array_equal(algo.neighbors, [[0, 1], [1, 0], [2, 1]])
    members = np.array([[0.2, 0.9], [0.5, 0.5], [0.9, 0.2]])
    children = np.array([[0.3, 0.3], [0.1, 2.0], [0.25, 0.21]])
    # the children raise the ideal point (minimised) from (0.2, 0.2) to (0.1, 0.2). Then:
    # subproblem 0: member 0.1; child 0: 0.2, child 1: 0 -> child 1
    # subproblem 1: member 0.2; child 0: 0.1, child 1: 0.9, child 2: 0.075 -> child 2
    # subproblem 2: member 0; child 2: 0.01 -> the member stays, though child 2 is far
    # better in objective 1 and the best child of subproblem 1
    state = MOEADState(
        population=jnp.array([[10.0], [11.0], [12.0]]),
        fitness=-jnp.asarray(members, jnp.float32),
        rank=jnp.zeros(3, jnp.int32),
        ideal=-jnp.array([0.2, 0.2]),
        best_genome=jnp.zeros(1),
        best_fitness=jnp.asarray(-jnp.inf),
        generation=jnp.ones([], jnp.int32),
    )
    x = jnp.array([[20.0], [21.0], [22.0]])
    new, metrics = jax.jit(algo.tell)(
        jax.random.key(0), state, x, -jnp.asarray(children, jnp.float32)
    )
    np.testing.assert_array_equal(np.asarray(new.population[:, 0]), [21.0, 22.0, 12.0])
    np.testing.assert_allclose(-np.asarray(new.fitness), [children[1], children[2], members[2]])
    np.testing.assert_allclose(-np.asarray(new.ideal), [0.1, 0.2])
    assert float(metrics["replaced"]) == 2
    # a child as good as the member, not better, does not replace it
    same, _ = jax.jit(algo.tell)(jax.random.key(0), state, x, state.fitness)
    np.testing.assert_array_equal(np.asarray(same.population[:, 0]), [10.0, 11.0, 12.0])


def test_tchebycheff_value():
    fitness = -jnp.array([[0.5, 0.25], [0.0, 1.0], [jnp.inf, 0.0]])
    weights = jnp.array([[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]])
    value = tchebycheff(fitness, weights, jnp.zeros(2))
    np.testing.assert_allclose(np.asarray(value), [0.25, 0.0, np.inf])


def test_a_weight_floor_makes_ignored_objectives_count():
    # weight (1, 0), objectives minimised below: the member (0, 0.9) and the child (0, 0.5)
    # tie at 0 with zero weights, so the member stays; raised to 1e-3, the second weight
    # makes the child better. Weight (0, 1): member and child (1, 0) tie either way.
    state = MOEADState(
        population=jnp.array([[0.0], [1.0]]),
        fitness=-jnp.array([[0.0, 0.9], [1.0, 0.0]]),
        rank=jnp.zeros(2, jnp.int32),
        ideal=jnp.zeros(2),
        best_genome=jnp.zeros(1),
        best_fitness=jnp.asarray(-jnp.inf),
        generation=jnp.ones([], jnp.int32),
    )
    x, children = jnp.array([[10.0], [11.0]]), -jnp.array([[0.0, 0.5], [1.0, 0.0]])

    @eqx.filter_jit
    def kept(algo):
        return algo.tell(jax.random.key(0), state, x, children)[0].population[:, 0]

    for floor, expected in ((0.0, [0.0, 1.0]), (1e-3, [10.0, 1.0])):
        algo = MOEAD(pop_size=2, n_objectives=2, n_neighbors=2, min_weight=jnp.asarray(floor))
        np.testing.assert_array_equal(np.asarray(kept(algo)), expected)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(n_neighbors=1), r"n_neighbors must be an integer in \[2, pop_size = 11\], got 1"),
        (dict(n_neighbors=12), r"n_neighbors must be an integer in \[2, pop_size = 11\], got 12"),
        (dict(n_neighbors=2.5), r"n_neighbors must be an integer in \[2, pop_size = 11\]"),
        (dict(prob_neighbor_mating=1.5), r"prob_neighbor_mating must be in \[0.0, 1.0\]"),
        (dict(min_weight=1.0), r"min_weight must be in \[0.0, 1.0\), got 1.0"),
        (dict(divisions=0), r"divisions must be a positive integer, got 0"),
        (
            dict(divisions=5),
            r"pop_size must be C\(divisions \+ n_objectives - 1, n_objectives - 1\) = 6 for "
            r"divisions = 5, got 11",
        ),
        (
            dict(n_objectives=3),
            r"pop_size must be a simplex-lattice size .* for n_objectives = 3 \(e.g. 10 or "
            r"15\), got 11",
        ),
        (dict(n_objectives=1), r"n_objectives must be an integer >= 2, got 1"),
        (dict(lower=1.0, upper=0.0), r"lower must be below upper"),
    ],
)
def test_bad_arguments_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as e:
        MOEAD(**{"pop_size": 11, "n_objectives": 2, "n_neighbors": 5, **kwargs})
    assert "\n" not in str(e.value)
