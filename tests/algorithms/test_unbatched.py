"""one_at_a_time: vmapped linear algebra as a loop of unbatched calls, and the CPU deadlock it
avoids (CMA-ES and xNES vmapped over seeds on one CPU device per core)."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.unbatched import one_at_a_time


def symmetric(key, shape):
    a = jax.random.normal(key, shape)
    return a + jnp.swapaxes(a, -1, -2)


def test_nested_vmap_matches_numpy_item_by_item():
    a = symmetric(jax.random.key(0), (3, 2, 6, 6))
    values, _ = jax.vmap(jax.vmap(one_at_a_time(jnp.linalg.eigh)))(a)
    expected = np.linalg.eigvalsh(np.asarray(a, np.float64))
    np.testing.assert_allclose(values, expected, rtol=1e-4, atol=1e-4)


def test_unbatched_arguments_are_shared_and_conds_stay_lazy():
    matrices = symmetric(jax.random.key(1), (4, 5, 5)) + 20 * jnp.eye(5)[None]
    rhs = jax.random.normal(jax.random.key(2), (5, 3))
    x = jax.vmap(one_at_a_time(jnp.linalg.solve), in_axes=(0, None))(matrices, rhs)
    np.testing.assert_allclose(
        x, np.linalg.solve(np.asarray(matrices, np.float64), np.asarray(rhs)), rtol=1e-4
    )

    @one_at_a_time
    def maybe_eigh(due, m):
        return jax.lax.cond(due, lambda: jnp.linalg.eigvalsh(m), lambda: jnp.zeros(5))

    lowered = jax.jit(jax.vmap(maybe_eigh)).lower(jnp.zeros(4, bool), matrices).as_text()
    assert "stablehlo.case" in lowered  # a real branch per item, not a select of both


# pop 8 of a 113-parameter MLP, 2 seeds, one CPU device per core: before one_at_a_time the
# first generation never finished (each device's batched LAPACK call waited on the thread
# pool that it and the other device's call held)
SCRIPT = """
import sys, evolax
from evolax.config import build_trainer, resolve
from evolax.runner import initial_states
import jax
evolax.use_cpu_cores()
for algo in sys.argv[1:]:
    config = resolve("cartpole_easy", [f"algorithm.name={algo}", "algorithm.pop_size=8",
                                       "trainer.n_repeats=2", "policy.hidden_sizes=[16]"])
    trainer = build_trainer(config, mesh="auto")
    run = jax.jit(jax.vmap(lambda s: trainer.run(s, 2)[0]))
    print(int(run(initial_states(trainer, [0, 1])).generation[1]))
"""


@pytest.mark.slow  # 19 s of the default run; the rule's own checks above stay in it
def test_full_covariance_vmapped_over_seeds_on_every_core():
    algos = ["cma_es", "xnes"]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *algos], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["2", "2"]
