import jax.numpy as jnp
import numpy as np

from evolax import ObsStats
from evolax.normalize import shifted_sums


def test_merging_batches_equals_statistics_of_all():
    rng = np.random.default_rng(0)
    batches = [
        rng.normal(loc=1e3, scale=s, size=(n, 3)) for n, s in [(50, 1.0), (1, 2.0), (400, 0.5)]
    ]
    stats = ObsStats.zeros((3,))
    for batch in batches:
        pivot = np.asarray(stats.pivot(jnp.asarray(batch[0], jnp.float32)))
        centred = batch - pivot
        stats = stats.merge(jnp.float32(len(batch)), centred.sum(0), (centred**2).sum(0), pivot)
    everything = np.concatenate(batches)
    np.testing.assert_allclose(stats.mean, everything.mean(0), rtol=1e-6)
    np.testing.assert_allclose(stats.variance(), everything.var(0), rtol=1e-3)


def test_empty_stats_are_identity_and_clip():
    stats = ObsStats.zeros((2,))
    np.testing.assert_allclose(stats.normalize(jnp.array([0.5, 9.0])), [0.5, 5.0])
    empty = stats.merge(jnp.float32(0), jnp.zeros(2), jnp.zeros(2), jnp.ones(2))
    np.testing.assert_allclose(empty.mean, 0.0)
    assert float(empty.count) == 0


def test_masked_sums_ignore_non_finite_observations_outside_the_mask():
    # an ended episode's physics state may hold inf or NaN; it must not reach the statistics
    obs = jnp.array([[[1.0, 2.0], [jnp.nan, jnp.inf]], [[3.0, -1.0], [5.0, 0.0]]])
    mask = jnp.array([[True, False], [True, True]])
    count, total, squares = shifted_sums(obs, mask, jnp.array([1.0, 0.0]))
    kept = np.array([[0.0, 2.0], [2.0, -1.0], [4.0, 0.0]])  # kept observations less the pivot
    assert float(count) == 3
    np.testing.assert_allclose(total, kept.sum(0))
    np.testing.assert_allclose(squares, (kept**2).sum(0))
