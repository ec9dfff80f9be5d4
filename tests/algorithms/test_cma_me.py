"""CMA-ME and CMA-MAE: selection by the archive's verdicts (one accepted candidate becomes
the mean), restarts from an elite, the scheduler of mixed emitters on the linear-projection
benchmark, and one-line errors. Against pyribs: tests/qd/test_qd_pyribs.py (slow)."""

import os
import re
import subprocess
import sys

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms import CMAMAE, CMAME
from evolax.problems import linear_projection_bound, sphere_linear_projection
from evolax.qd import GridArchive


def test_a_lone_accepted_candidate_becomes_the_mean_and_a_barren_batch_restarts(key):
    archive = GridArchive((4,), (0,), (4,))
    algo = CMAME(4, archive, emitters=("improvement",), init_std=0.3)
    state = algo.init(key, jnp.zeros(2))
    x = jnp.arange(8.0).reshape(4, 2)
    cell_1 = jnp.full((4, 1), 1.5)
    tell = jax.jit(algo.tell)
    state, _ = tell(key, state, x, jnp.array([1.0, 2.0, 4.0, 3.0]), descriptors=cell_1)
    # only row 2 beats the elite (4): mu = 1 under filter selection, so it is the new mean
    state, metrics = tell(key, state, x + 1, jnp.array([0.0, 0.0, 5.0, 0.0]), descriptors=cell_1)
    np.testing.assert_allclose(state.emitters.mean[0], x[2] + 1, rtol=1e-6)
    assert int(state.emitters.restarts[0]) == 0 and float(metrics["coverage"]) == 0.25
    # none beats the elite (5): no update, and the emitter restarts from the (only) elite
    state, metrics = tell(key, state, x - 1, jnp.zeros(4), descriptors=cell_1)
    assert int(state.emitters.restarts[0]) == 1 and float(metrics["restarts"]) == 1.0
    np.testing.assert_array_equal(state.emitters.mean[0], x[2] + 1)
    assert float(state.emitters.std[0]) == pytest.approx(0.3)


def test_mixed_emitters_cover_the_linear_projection_benchmark_and_compile_once(key):
    dim = 10
    bound = linear_projection_bound(dim)
    archive = GridArchive((20, 20), (-bound, -bound), (bound, bound))
    algo = CMAME(24, archive, emitters=("improvement", "optimizing", "random_direction"))

    @jax.jit
    @chex.assert_max_traces(n=1)
    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        x, state = algo.ask(ask_key, state)
        fitness, descriptors = sphere_linear_projection(x)
        return algo.tell(tell_key, state, x, fitness, descriptors=descriptors)

    state = algo.init(key, jnp.zeros(dim))
    for k in jax.random.split(key, 60):
        state, metrics = generation(state, k)
    assert float(metrics["coverage"]) > 0.1
    assert 90.0 < float(metrics["archive_max"]) <= 100.0
    assert float(metrics["qd_score"]) == pytest.approx(
        float(jnp.sum(jnp.where(state.archive.occupied, state.archive.fitness, 0.0)))
    )


def test_cma_mae_reports_its_result_archive(key):
    algo = CMAMAE(8, (4, 4), (-1, -1), (1, 1), n_emitters=2, learning_rate=0.5, threshold_min=0.0)
    state = algo.init(key, jnp.zeros(2))
    x, state = algo.ask(key, state)
    state, metrics = jax.jit(algo.tell)(key, state, x, jnp.full(8, 4.0), descriptors=x)
    # the annealing archive's thresholds sit below the elites' fitness, the result's equal it
    filled = state.result.occupied
    assert np.all(np.asarray(state.archive.threshold)[filled] < 4.0)
    np.testing.assert_array_equal(np.asarray(state.result.threshold)[filled], 4.0)
    assert float(metrics["qd_score"]) == pytest.approx(4.0 * float(jnp.sum(filled)))
    assert algo.elites(state) is state.result


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(pop_size=9, emitters=("improvement",) * 2), "pop_size must be a multiple of the 2"),
        (dict(pop_size=8, emitters=("best",)), "emitters must each be one of"),
        (dict(pop_size=8, selection="all"), "selection must be 'filter' or 'mu'"),
        (dict(pop_size=8, restart="never"), "restart must be"),
        (dict(pop_size=8, init_std=0.0), "init_std must be"),
    ],
)
def test_bad_settings_raise_one_line(kwargs, message):
    kwargs.setdefault("emitters", ("improvement",) * 2)
    with pytest.raises(ValueError, match=message):
        CMAME(archive=GridArchive((4,), (0,), (1,)), **kwargs)


TWO_DEVICES = """
from evolax.sharding import request_cpu_devices
request_cpu_devices(2)
import equinox as eqx
import jax
from evolax.config import build_trainer, resolve
from evolax.layout import Layout
from evolax.runner import initial_states
config = resolve("cartpole_easy", [
    "algorithm.name=cma_mae", "algorithm.pop_size=16", "algorithm.grid_shape=[4, 4]",
    "algorithm.n_emitters=4", "trainer.n_repeats=2", "task.max_steps=50",
    "policy.hidden_sizes=[8]",
])
trainer = build_trainer(config).with_layout(Layout(2, 8))
state = trainer.init(jax.random.key(0))
jax.block_until_ready(eqx.filter_jit(lambda t, s: t.run(s, 2))(trainer, state))
states = initial_states(trainer, [0, 1])  # and two seeds vmapped together
jax.block_until_ready(eqx.filter_jit(jax.vmap(lambda s: trainer.run(s, 2)))(states))
print("ran")
"""


@pytest.mark.slow  # a 2-device subprocess; tests/test_sharding.py covers several devices
def test_four_emitters_on_two_cpu_devices_run():
    """Each device's thread eigendecomposed its two emitters' covariances (or two seeds') as one
    LAPACK batch, which waits on the intra-op pool that both devices' threads held: the run
    hung."""
    env = dict(os.environ)  # this suite's XLA flags, less any device count of its own
    env["XLA_FLAGS"] = re.sub(
        r"--xla_force_host_platform_device_count=\d+", "", env.get("XLA_FLAGS", "")
    )
    try:
        result = subprocess.run(
            [sys.executable, "-c", TWO_DEVICES],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("CMA-MAE with 4 emitters (or 2 seeds) on 2 CPU devices hung")
    assert result.returncode == 0 and result.stdout.strip() == "ran", result.stderr
