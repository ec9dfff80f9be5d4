"""A fresh state can be donated to a jitted ask / tell: no two of its fields share a buffer
(CMA-ES's ``init`` put one identity matrix in both ``cov`` and ``eigvecs``, and XLA refused
to donate it twice)."""

import jax
import jax.numpy as jnp
import pytest

from evolax.algorithms import CLPSO, CMAES, CRFMNES, JADE, PSO, SepCMAES


@pytest.mark.parametrize("algorithm", [CMAES, SepCMAES, CRFMNES, PSO, JADE, CLPSO])
def test_a_fresh_state_is_donated(algorithm):
    x0 = jnp.zeros(5)
    state = algorithm(pop_size=8).init(jax.random.key(0), x0)
    leaves = [leaf for leaf in jax.tree.leaves(state) if isinstance(leaf, jax.Array)]
    buffers = [leaf.unsafe_buffer_pointer() for leaf in leaves]
    assert len(set(buffers)) == len(buffers)
    assert x0.unsafe_buffer_pointer() not in buffers  # the caller's x0 is not donated
    ask = jax.jit(algorithm(pop_size=8).ask, donate_argnums=1)
    tell = jax.jit(algorithm(pop_size=8).tell, donate_argnums=1)
    x, state = ask(jax.random.key(1), state)
    state, _ = tell(jax.random.key(2), state, x, -jnp.sum(x**2, axis=1))
    assert bool(jnp.all(jnp.isfinite(state.best_genome)))
    assert not x0.is_deleted()
