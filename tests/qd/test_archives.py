"""The archives against plain numpy loops of their rules: sequential insertion, nearest
centroids, the unstructured archive's novelty rule, uniform sampling of elites."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.qd import (
    IMPROVED,
    NEW,
    NOT_ADDED,
    CVTArchive,
    GridArchive,
    UnstructuredArchive,
    cvt_centroids,
    novelty,
)


def test_nan_and_infinite_fitness_never_enter():
    archive = GridArchive((3,), (0,), (1,))
    state, added = archive.add(
        archive.init(jnp.zeros(2)),
        jnp.ones((3, 2)),
        jnp.array([jnp.nan, jnp.inf, -jnp.inf]),
        jnp.array([[0.1], [0.5], [0.9]]),
    )
    assert not np.any(state.occupied)
    np.testing.assert_array_equal(added.status, NOT_ADDED)


def test_sample_draws_occupied_cells_uniformly(key):
    archive = GridArchive((10,), (0,), (1,))
    filled = np.array([1, 4, 5, 9])
    state, _ = archive.add(
        archive.init(jnp.zeros(1)),
        jnp.zeros((4, 1)),
        jnp.ones(4),
        jnp.asarray((filled + 0.5) / 10)[:, None],
    )
    draws = np.asarray(archive.sample(key, state, 40_000))
    counts = np.array([np.sum(draws == c) for c in range(10)])
    assert counts.sum() == counts[filled].sum()  # only occupied cells
    np.testing.assert_allclose(counts[filled] / 40_000, 0.25, atol=0.01)


def test_cvt_cells_are_nearest_centroids_and_kmeans_spreads_them(key):
    centroids = cvt_centroids(key, 64, (0.0, -1.0), (2.0, 1.0), n_samples=4096)
    c = np.asarray(centroids)
    assert c.shape == (64, 2) and np.all(c >= [0, -1]) and np.all(c <= [2, 1])
    points = np.asarray(jax.random.uniform(jax.random.key(3), (2000, 2))) * [2, 2] - [0, 1]
    expected = np.argmin(((points[:, None] - c[None]) ** 2).sum(-1), axis=1)
    archive = CVTArchive(c, (0.0, -1.0), (2.0, 1.0))
    np.testing.assert_array_equal(archive.index(jnp.asarray(points)), expected)
    outside = jnp.asarray(points * 3)  # searched in full
    far = np.argmin(((points[:, None] * 3 - c[None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(archive.index(outside), far)

    def quantization(centres):
        return np.mean(np.min(((points[:, None] - centres[None]) ** 2).sum(-1), axis=1))

    # Lloyd's iterations shrink the error of the 64 uniform points they start from, toward a
    # hexagonal tessellation's mean squared distance 2 G area / n, G = 5 / (36 sqrt 3) (the
    # hexagon's normalised second moment): 0.0100 for area 4, n = 64 (borders add a little)
    start = np.asarray(jax.random.uniform(key, (64, 2))) * [2, 2] - [0, 1]
    assert quantization(c) < 0.6 * quantization(start)
    assert quantization(c) == pytest.approx(2 * 5 / (36 * np.sqrt(3)) * 4 / 64, rel=0.15)


def numpy_unstructured(capacity, min_distance, batches):
    """The unstructured archive's rule, one candidate at a time."""
    fitness, descriptors = [], []
    statuses = []
    for f_batch, d_batch in batches:
        status = []
        for f, d in zip(f_batch, d_batch, strict=True):
            f = -np.inf if not np.isfinite(f) else f
            distance = [np.linalg.norm(d - e) for e in descriptors]
            near = int(np.argmin(distance)) if distance else None
            if (near is None or distance[near] > min_distance) and np.isfinite(f):
                if len(fitness) < capacity:
                    fitness.append(f)
                    descriptors.append(d)
                    status.append(NEW)
                else:
                    status.append(NOT_ADDED)
            elif near is not None and distance[near] <= min_distance and f > fitness[near]:
                fitness[near], descriptors[near] = f, d
                status.append(IMPROVED)
            else:
                status.append(NOT_ADDED)
        statuses.append(status)
    return np.array(fitness), np.array(descriptors), statuses


def test_unstructured_archive_follows_its_rule_one_candidate_at_a_time():
    rng = np.random.default_rng(0)
    batches = []
    for _ in range(4):
        f = rng.normal(size=16).astype(np.float32)
        f[rng.random(16) < 0.1] = np.nan
        batches.append((f, rng.random((16, 2)).astype(np.float32)))
    archive = UnstructuredArchive(capacity=24, n_desc=2, min_distance=0.15)
    state = archive.init(jnp.zeros(3))
    add = jax.jit(archive.add)
    statuses = []
    for f, d in batches:
        state, added = add(state, jnp.zeros((16, 3)), jnp.asarray(f), jnp.asarray(d))
        statuses.append(list(np.asarray(added.status)))
    fitness, descriptors, expected = numpy_unstructured(24, 0.15, batches)
    assert statuses == expected
    n = len(fitness)
    np.testing.assert_array_equal(np.asarray(state.fitness)[:n], fitness)  # slots fill in order
    np.testing.assert_array_equal(np.asarray(state.descriptors)[:n], descriptors)
    assert not np.any(np.asarray(state.occupied)[n:])
    # novelty: the mean distance to the k nearest elites
    query = np.array([[0.5, 0.5], [0.0, 1.0]], np.float32)
    d = np.sort(np.linalg.norm(query[:, None] - descriptors[None], axis=-1), axis=1)[:, :3]
    np.testing.assert_allclose(novelty(state, jnp.asarray(query), 3), d.mean(1), rtol=1e-5)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: GridArchive((4, 0), (0, 0), (1, 1)), "grid_shape entries"),
        (lambda: GridArchive((4, 4), (0,), (1, 1)), "descriptor_low must have one value"),
        (lambda: GridArchive((4,), (1,), (0,)), "descriptor_low must be below"),
        (lambda: GridArchive((4,), (0,), (1,), learning_rate=0.5), "threshold_min must be"),
        (lambda: GridArchive((4,), (0,), (1,), learning_rate=2.0), "learning_rate must be in"),
        (lambda: CVTArchive(np.zeros(3), (0,), (1,)), "centroids must have shape"),
        (lambda: UnstructuredArchive(8, 2, 0.0), "min_distance must be"),
    ],
)
def test_bad_settings_raise_one_line(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_descriptor_shape_raises_at_trace_time():
    archive = GridArchive((4, 4), (0, 0), (1, 1))
    with pytest.raises(ValueError, match=r"descriptors must have shape \(pop, 2\) = \(3, 2\)"):
        archive.add(archive.init(jnp.zeros(1)), jnp.zeros((3, 1)), jnp.zeros(3), jnp.zeros((3, 3)))
