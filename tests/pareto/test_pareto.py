"""Non-dominated sorting, crowding distance, hypervolume and IGD+ against their definitions
(brute force on small sets, closed forms on large ones); pymoo's values in
test_pareto_pymoo.py (slow)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.pareto import crowding_distance, hypervolume, igd_plus, non_dominated_rank


def peeled_fronts(f: np.ndarray) -> np.ndarray:
    """Fronts by the definition: repeatedly take the points no remaining point dominates."""
    f = np.where(np.all(np.isfinite(f), axis=1, keepdims=True), f, -np.inf)
    rank, left, front = np.full(len(f), -1), np.ones(len(f), bool), 0
    while left.any():
        idx = np.flatnonzero(left)
        sub = f[idx]
        dominated = (
            (sub[None, :, :] >= sub[:, None, :]).all(-1)
            & (sub[None, :, :] > sub[:, None, :]).any(-1)
        ).any(1)
        rank[idx[~dominated]] = front
        left[idx[~dominated]] = False
        front += 1
    return rank


@pytest.mark.parametrize("m", [2, 3, 5])
def test_ranks_are_the_peeled_fronts_across_blocks_ties_and_nan(m):
    rng = np.random.default_rng(m)
    f = rng.integers(0, 6, size=(300, m)).astype(np.float32)  # many ties and duplicates
    f[::37, 1] = np.nan
    f[5] = -np.inf
    expected = peeled_fronts(f)
    for block in (7, 64, 512):
        np.testing.assert_array_equal(non_dominated_rank(jnp.asarray(f), block), expected)
    assert expected[::37].min() == expected.max()  # NaN rows: the last front


@pytest.mark.parametrize("n", [5_000, pytest.param(100_000, marks=pytest.mark.slow)])
def test_a_chain_and_an_antichain(n):
    i = jnp.arange(n, dtype=jnp.float32)
    sort = jax.jit(non_dominated_rank)
    chain = sort(jnp.stack([i, i], axis=1))  # each point dominates all below it
    np.testing.assert_array_equal(chain, n - 1 - np.arange(n))
    antichain = sort(jnp.stack([i, -i], axis=1))  # none dominates another
    assert int(jnp.max(antichain)) == 0


def test_crowding_distance_of_even_and_uneven_fronts():
    # front 0: four points on the line f1 + f2 = 3; front 1: three points below it
    f = jnp.array([[0, 3], [1, 2], [2, 1], [3, 0], [0, 1], [0.5, 0.5], [1, 0]], jnp.float32)
    rank = non_dominated_rank(f)
    np.testing.assert_array_equal(rank, [0, 0, 0, 0, 1, 1, 1])
    distance = np.asarray(crowding_distance(f, rank))
    # interior: (gap / range) summed over both objectives = 2 * 2 / 3
    np.testing.assert_allclose(distance[[1, 2]], 4 / 3, rtol=1e-6)
    np.testing.assert_allclose(distance[5], 2.0, rtol=1e-6)
    assert np.all(np.isinf(distance[[0, 3, 4, 6]]))
    nan_row = crowding_distance(f.at[1, 0].set(jnp.nan), rank)
    assert float(nan_row[1]) == 0.0


def box_union(points: np.ndarray, reference: np.ndarray) -> float:
    """The volume of the union of boxes [reference, p] by inclusion-exclusion."""
    p = np.maximum(points, reference)
    total = 0.0
    for k in range(1, len(p) + 1):
        for subset in itertools.combinations(range(len(p)), k):
            corner = p[list(subset)].min(axis=0)
            total += (-1) ** (k + 1) * np.prod(corner - reference)
    return total


@pytest.mark.parametrize("m", [2, 3])
def test_exact_hypervolume_is_the_union_of_boxes(m):
    rng = np.random.default_rng(m)
    reference = np.full(m, -1.0)
    for _ in range(5):
        points = rng.uniform(-1.5, 1.0, size=(9, m))
        got = hypervolume(jnp.asarray(points, jnp.float32), jnp.asarray(reference, jnp.float32))
        np.testing.assert_allclose(float(got), box_union(points, reference), rtol=1e-5, atol=1e-6)


def test_hypervolume_of_a_line_front_and_of_nothing():
    # n points on f1 + f2 = 1 in [0, 1]^2 above (0, 0): the staircase below the line
    n = 1000
    t = jnp.linspace(0.0, 1.0, n)
    area = hypervolume(jnp.stack([t, 1 - t], axis=1), jnp.zeros(2))
    np.testing.assert_allclose(float(area), 0.5 - 0.5 / (n - 1), rtol=1e-5)
    assert float(hypervolume(jnp.full((3, 2), jnp.nan), jnp.zeros(2))) == 0.0
    assert float(hypervolume(-jnp.ones((3, 3)), jnp.zeros(3))) == 0.0


def test_monte_carlo_hypervolume_above_three_objectives():
    rng = np.random.default_rng(0)
    points = rng.uniform(0.0, 1.0, size=(6, 4))
    exact = box_union(points, np.zeros(4))
    estimate = hypervolume(jnp.asarray(points), jnp.zeros(4), jax.random.key(1), n_samples=200_000)
    box = np.prod(points.max(axis=0))
    p = exact / box
    assert abs(float(estimate) - exact) < 4 * box * np.sqrt(p * (1 - p) / 200_000)
    with pytest.raises(ValueError, match=r"^hypervolume of 4 > 3 objectives is a Monte Carlo"):
        hypervolume(jnp.asarray(points), jnp.zeros(4))


def test_igd_plus_counts_only_shortfalls():
    front = jnp.array([[0.0, 1.0], [1.0, 0.0]])
    assert float(igd_plus(front, front)) == 0.0
    assert float(igd_plus(jnp.array([[1.0, 1.0]]), front)) == 0.0  # dominates the front
    # one point 0.3 short in the first objective of (1, 0), and (0.3, 0.7) away from (0, 1)
    got = igd_plus(jnp.array([[0.7, 0.0]]), front)
    np.testing.assert_allclose(float(got), (0.3 + 1.0) / 2, rtol=1e-6)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: non_dominated_rank(jnp.zeros(5)),
            r"^objectives must have shape \(n, m\), got \(5,\)$",
        ),
        (
            lambda: non_dominated_rank(jnp.zeros((5, 2)), 0),
            r"^block_size must be a positive integer",
        ),
        (
            lambda: crowding_distance(jnp.zeros((5, 2)), jnp.zeros(4)),
            r"^rank must have shape \(5,\)",
        ),
        (
            lambda: hypervolume(jnp.zeros((5, 2)), jnp.zeros(3)),
            r"^reference must have shape \(2,\)",
        ),
        (lambda: igd_plus(jnp.zeros((5, 2)), jnp.zeros((4, 3))), r"^points and front must have"),
    ],
)
def test_bad_shapes_are_one_line_errors(call, message):
    with pytest.raises(ValueError, match=message) as e:
        call()
    assert "\n" not in str(e.value)
