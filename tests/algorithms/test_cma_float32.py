"""The CMA family in float32 reaches what pycma reaches in float64 on an ill-conditioned
separable function whose optimum is not at 0 (an ellipsoid of condition 1e6 shifted to a
float32 point of [-4, 4]^d): f < 1e-8, which float32 represents there only at the optimum's
own grid point in the steepest coordinates. Before the mean kept its rounding error
(``CMAState.mean_residual``), mean steps below its last bit were lost and every float32 run
stopped by NoEffectAxis near f = 1e-5."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms import CMAES, SepCMAES
from evolax.algorithms.cma.restarts import ipop
from evolax.problems import bbob_problem

TARGET = 1e-8


def shifted_ellipsoid(dim: int):
    weights = 10.0 ** (6 * np.arange(dim) / (dim - 1))
    x_opt = np.random.default_rng(99).uniform(-4, 4, dim).astype(np.float32).astype(np.float64)
    return weights, x_opt


def evolax_evaluations(algorithm, dim: int, seed: int) -> tuple[int, float]:
    """Evaluations to f < 1e-8 of one run (no restart) in float32, and its best f."""
    weights, x_opt = shifted_ellipsoid(dim)
    w, xo = jnp.asarray(weights, jnp.float32), jnp.asarray(x_opt, jnp.float32)
    x0 = jnp.asarray(np.random.default_rng(seed).uniform(-4, 4, dim), jnp.float32)
    result = ipop(
        algorithm,
        lambda x: -jnp.sum(w[None] * (x - xo[None]) ** 2, axis=-1),
        x0,
        jax.random.key(seed),
        60_000 * dim,
        init_std=2.0,
        max_restarts=0,
        target_fitness=-TARGET,
    )
    return result.evaluations, -result.best_fitness


@pytest.mark.parametrize("algorithm", [CMAES, SepCMAES])
def test_float32_reaches_1e_8_on_a_shifted_ill_conditioned_function(algorithm):
    evaluations, f = evolax_evaluations(algorithm, 8, 0)
    assert f < TARGET, (evaluations, f)


@pytest.mark.slow
def test_float32_cma_es_needs_no_more_evaluations_than_pycma_in_float64():
    """d = 12, 5 seeds: every float32 run reaches 1e-8, with a median of evaluations within
    1.25x pycma's (float64, same starts; measured 1.03x, before the fix 0 of 5 reached it)."""
    cma = pytest.importorskip("cma")
    dim, seeds = 12, 5
    weights, x_opt = shifted_ellipsoid(dim)
    ours, theirs = [], []
    for seed in range(seeds):
        evaluations, f = evolax_evaluations(CMAES, dim, seed)
        assert f < TARGET, (seed, evaluations, f)
        ours.append(evaluations)
        es = cma.CMAEvolutionStrategy(
            np.random.default_rng(seed).uniform(-4, 4, dim),
            2.0,
            {"ftarget": TARGET, "verbose": -9, "seed": seed + 1, "maxfevals": 60_000 * dim},
        )
        es.optimize(lambda x: float(np.sum(weights * (np.asarray(x) - x_opt) ** 2)))
        theirs.append(es.result.evaluations)
    assert np.median(ours) <= 1.25 * np.median(theirs), (ours, theirs)


@pytest.mark.parametrize(
    "algorithm", [CMAES(pop_size=8), CMAES(pop_size=8, active=False), SepCMAES(pop_size=8)]
)
def test_float32_genomes_stay_float32_with_x64_enabled(algorithm):
    """Float32 and float64 side by side in one process: a float32 state stays float32 (the
    strategy parameters were numpy float64 scalars, which promoted it)."""
    with jax.enable_x64(True):
        state = algorithm.init(jax.random.key(0), jnp.zeros(5, jnp.float32))
        x, state = algorithm.ask(jax.random.key(1), state)
        new_state, _ = algorithm.tell(jax.random.key(2), state, x, -jnp.sum(x**2, axis=1))
        for old, new in zip(jax.tree.leaves(state), jax.tree.leaves(new_state), strict=True):
            assert new.dtype == old.dtype


def test_float32_cma_es_goes_past_the_condition_float32_resolves():
    """BBOB f14 (different powers, d = 5): its conditioning grows without bound near the
    optimum, and 1e-8 needs an axis ratio of about 3e4 (cond(C) 1e9), beyond the 1 / eps
    (8e6) that ``eigh`` resolves in float32. With ``B, D`` from the SVD of a factor of ``C``
    (``cma_es.refactor``) every seed reaches 1e-8, as pycma's (float64). These three seeds
    also did with the eigenvalue floor alone, barely (2 of 5 runs of ``fidelity.py cma32``
    did not); the axis-length check in ``test_cma_es.py`` is the one that fails without the
    factor. ConditionCov once ended every run at 4e6."""
    problem = bbob_problem(14, 5, 1)
    for seed in range(3):
        x0 = jnp.asarray(np.random.default_rng(seed).uniform(-4, 4, 5), jnp.float32)
        result = ipop(
            CMAES,
            problem.fitness,
            x0,
            jax.random.key(seed),
            50_000,
            init_std=2.0,
            max_restarts=0,
            target_fitness=-TARGET,
        )
        assert result.restarts[0].stop_reasons == ("target",), (seed, result.restarts)
        assert -result.best_fitness < TARGET
