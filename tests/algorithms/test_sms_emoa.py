"""SMS-EMOA: exclusive hypervolume contributions are hypervolume differences (exact for 2 and
3 objectives, sampled above); the split front loses its least contributor one at a time,
recomputed after each removal, in objectives normalised by the parents' range; dominating
contestants win tournaments; non-finite children never survive; one compiled generation
converges on ZDT1; arguments are checked. The comparison with pymoo 0.6.2's SMS-EMOA is in
test_sms_emoa_pymoo.py (slow)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.multiobjective.sms_emoa import (
    SMSEMOA,
    dominance_tournament,
    hypervolume_contributions,
    normalise,
)
from evolax.pareto import hypervolume, non_dominated_rank
from evolax.problems.multiobjective import zdt1

DIM = 30
ZDT1_OPTIMUM = 1.21 - 1 / 3  # the box 1.1^2 minus the area under 1 - sqrt(f1)
ZDT = SMSEMOA(pop_size=40, n_objectives=2, lower=0.0, upper=1.0, reference_point=(-1.1, -1.1))


@jax.jit
@chex.assert_max_traces(n=1)
def zdt1_run(state, key, poisoned):
    """150 generations on ZDT1; the children where ``poisoned`` get a NaN objective."""

    def one(state, key):
        ask_key, tell_key = jax.random.split(key)
        x, state = ZDT.ask(ask_key, state)
        fitness = jnp.where(poisoned[:, None], jnp.array([[jnp.nan, 0.0]]), -zdt1(x))
        return ZDT.tell(tell_key, state, x, fitness)

    return jax.lax.scan(one, state, jax.random.split(key, 150))


@jax.jit
def contributions(points, reference, alive):
    return hypervolume_contributions(points, reference, alive)


@jax.jit
def differences(points, reference, alive):
    """``hv(S) - hv(S \\ {i})`` for every row ``i``, with evolax.pareto.hypervolume."""
    present = jnp.where(alive[:, None], points, -jnp.inf)
    without = jnp.where(jnp.eye(len(points), dtype=bool)[:, :, None], -jnp.inf, present[None])
    full = hypervolume(present, reference)
    return jnp.where(alive, full - jax.vmap(hypervolume, (0, None))(without, reference), 0.0)


@pytest.mark.parametrize("m", [2, 3])
def test_contributions_are_hypervolume_differences(m):
    rng = np.random.default_rng(m)
    for _ in range(3):  # small integers: ties, duplicates and dominated points
        points = jnp.asarray(rng.integers(0, 6, (30, m)), jnp.float32)
        alive = jnp.asarray(rng.random(30) < 0.8)
        reference = jnp.full(m, -0.5)
        np.testing.assert_allclose(
            contributions(points, reference, alive),
            differences(points, reference, alive),
            atol=1e-4,
        )


def test_two_objectives_follow_the_sorted_neighbour_formula():
    # sorted by the first objective: (x_i - x_{i+1}) (y_i - y_{i-1}) from the reference (-1, -1);
    # the duplicate pair contributes nothing, the dominated point and non-finite row nothing
    points = jnp.array([[4, 0], [1, 3], [2, 2], [2, 2], [0, 4], [1, 1], [jnp.nan, 9]], jnp.float32)
    expected = [(4 - 2) * (0 + 1), (1 - 0) * (3 - 2), 0, 0, (0 + 1) * (4 - 3), 0, 0]
    np.testing.assert_allclose(contributions(points, -jnp.ones(2), jnp.ones(7, bool)), expected)


def test_contributions_check_their_inputs():
    with pytest.raises(ValueError, match=r"^points must have shape \(n, m >= 2\), got \(3, 1\)$"):
        hypervolume_contributions(jnp.zeros((3, 1)), jnp.zeros(1))
    with pytest.raises(ValueError, match=r"^reference must have shape \(2,\), got \(3,\)$"):
        hypervolume_contributions(jnp.zeros((3, 2)), jnp.zeros(3))


@pytest.mark.slow  # a few seconds of compiling: nox -s slow
def test_more_than_three_objectives_are_sampled():
    sampled = jax.jit(hypervolume_contributions, static_argnames="n_samples")
    # a front of 3 objectives with a 4th that all share: each contribution is the 3-objective
    # one times the 4th's depth, 2
    rng = np.random.default_rng(0)
    front = rng.random((30, 3))
    front = jnp.asarray(front / np.linalg.norm(front, axis=1, keepdims=True), jnp.float32)
    alive = jnp.ones(30, bool)
    exact = 2.0 * contributions(front, jnp.full(3, -0.1), alive)
    points = jnp.concatenate([front, jnp.ones((30, 1))], axis=1)
    reference = jnp.array([-0.1, -0.1, -0.1, -1.0])
    estimate = sampled(points, reference, alive, jax.random.key(1), n_samples=4000)
    np.testing.assert_allclose(estimate, exact, atol=0.1 * float(exact.max()))
    # each of these points' exclusive region is exactly [1, 2] in its own objective times
    # [0, 1] in the others: every sample counts
    points = jnp.zeros((30, 4)).at[:4].set(jnp.eye(4) + 1.0)
    estimate = sampled(points, jnp.zeros(4), jnp.arange(30) < 4, jax.random.key(0), n_samples=4000)
    np.testing.assert_allclose(estimate, jnp.arange(30) < 4, rtol=1e-6)
    with pytest.raises(ValueError, match=r"Monte Carlo estimates: pass key$"):
        hypervolume_contributions(points, jnp.zeros(4))


def test_normalise_maps_the_parents_span_to_minus_one_zero():
    parents = jnp.array([[0.0, 10.0], [4.0, 10.0]])  # the second objective does not vary
    objectives = jnp.array([[4.0, 10.0], [0.0, 10.0], [2.0, 12.0], [-jnp.inf, 1.0]])
    scaled = jax.jit(normalise)
    np.testing.assert_allclose(
        scaled(objectives, parents), [[0, 0], [-1, 0], [-0.5, 2], [-jnp.inf, -jnp.inf]]
    )
    # without a finite parent, the rows themselves set the span
    np.testing.assert_allclose(
        scaled(objectives, jnp.full((2, 2), -jnp.inf))[:3], [[0, -1], [-1, -1], [-0.5, 0]]
    )


def test_the_least_contributor_leaves_one_at_a_time():
    algo = SMSEMOA(pop_size=4, n_objectives=2)
    state = algo.init(jax.random.key(0), jnp.zeros(2))
    # the parents span [0, 4] in both objectives, so the contributions are those of the raw
    # values above the reference 4 - 11 * 4 = -40, divided by 16
    parents = jnp.array([[0, 4], [4, 0], [1, 1], [0.5, 0.5]], jnp.float32)
    state = state.replace(fitness=parents)
    children = jnp.array([[2, 2], [1.2, 2.8], [1, 3], [3, 1.2]], jnp.float32)
    x = jnp.arange(8, dtype=jnp.float32).reshape(4, 2)
    new, metrics = jax.jit(algo.tell)(jax.random.key(1), state, x, children)
    # front 0: (4, 0) 40, (3, 1.2) 1.2, (2, 2) 0.64, (1.2, 2.8) 0.16, (1, 3) 0.2, (0, 4) 40.
    # (1.2, 2.8) leaves first; then (1, 3) rises to 1.0 and (2, 2) to 0.8, so (2, 2) leaves
    # (removing the two smallest at once would drop (1, 3) instead)
    kept = np.asarray(new.fitness)[np.lexsort(np.asarray(new.fitness).T)]
    np.testing.assert_allclose(kept, [[4, 0], [3, 1.2], [1, 3], [0, 4]])
    np.testing.assert_array_equal(new.rank, 0)
    assert float(metrics["front_size"]) == 4


@pytest.mark.slow  # a few seconds of compiling: nox -s slow
def test_removing_between_recomputations_matches_recomputing_every_time():
    algo = SMSEMOA(pop_size=15, n_objectives=3)
    rng = np.random.default_rng(3)
    points = rng.random((30, 3))
    points = -points / np.linalg.norm(points, axis=1, keepdims=True) * rng.uniform(1, 1.03, (30, 1))
    points[10:14] = np.round(points[10:14], 1)  # near-duplicates and ties
    points[14] = points[15]
    objectives = jnp.asarray(points, jnp.float32)
    rank = non_dominated_rank(objectives)
    survive = jax.jit(algo._survivors)(jax.random.key(0), objectives, rank)
    split = int(jnp.sort(rank)[14])
    scaled = normalise(objectives, objectives[:15])
    alive = np.array(rank == split)
    assert int(jnp.sum(rank <= split)) - 15 >= 8  # several removals
    for _ in range(int(jnp.sum(rank <= split)) - 15):
        c = np.asarray(contributions(scaled, jnp.full(3, -11.0), jnp.asarray(alive)))
        alive[np.argmin(np.where(alive, c, np.inf))] = False
    np.testing.assert_array_equal(survive, np.asarray(rank < split) | alive)


def test_a_dominating_contestant_wins():
    fitness = -jnp.arange(6.0)[:, None] * jnp.ones((1, 2))  # i dominates j when i < j
    winners = jax.jit(dominance_tournament, static_argnums=2)(jax.random.key(0), fitness, 600)
    wins = np.bincount(np.asarray(winners), minlength=6)
    # 1200 contestants: each member 200 times. The best wins every tournament but those
    # against itself (1 in 6 of its 200: about 17), the worst only those
    assert wins.sum() == 600
    assert wins[0] >= 200 - 35 and wins[5] <= 35
    np.testing.assert_array_less(wins[1:], wins[:-1])


def test_converges_on_zdt1_and_reports_the_hypervolume():
    state, metrics = zdt1_run(
        ZDT.init(jax.random.key(0), jnp.zeros(DIM)), jax.random.key(1), jnp.zeros(40, bool)
    )
    hv = metrics["hypervolume"]
    assert float(hv[-1]) > 0.85 * ZDT1_OPTIMUM  # 40 points; seeds 0-5: 0.86-0.97 of it
    assert float(hv[-1]) > float(hv[9]) + 0.2
    np.testing.assert_allclose(float(hv[-1]), float(hypervolume(state.fitness, -1.1 * jnp.ones(2))))
    assert int(metrics["front_size"][-1]) == 40
    assert jnp.all((state.population >= 0) & (state.population <= 1))
    assert int(state.generation) == 150


def test_children_with_a_non_finite_objective_never_survive():
    poisoned = jnp.arange(40) % 2 == 0
    state, metrics = zdt1_run(
        ZDT.init(jax.random.key(0), jnp.zeros(DIM)), jax.random.key(1), poisoned
    )
    np.testing.assert_array_equal(metrics["nonfinite"], 20)
    # from the second generation on, 20 finite parents and 20 finite children fill the places
    assert jnp.all(jnp.isfinite(state.fitness))
    assert float(metrics["hypervolume"][-1]) > float(metrics["hypervolume"][9]) + 0.2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(n_objectives=1), r"n_objectives must be an integer >= 2, got 1"),
        (dict(lower=1.0, upper=0.0), r"lower must be below upper, got \(1.0,\) and \(0.0,\)"),
        (dict(reference_offset=0.0), r"reference_offset must be"),
        (dict(n_samples=0), r"n_samples must be a positive integer"),
        (dict(reference_point=(0.0,)), r"reference_point must have n_objectives = 2 values"),
        (dict(block_size=0), r"block_size must be a positive integer"),
    ],
)
def test_bad_arguments_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as e:
        SMSEMOA(**{"pop_size": 8, "n_objectives": 2, **kwargs})
    assert "\n" not in str(e.value)
