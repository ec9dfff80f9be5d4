"""SL-PSO against a float64 numpy transcription of Cheng & Jin (2015) fed the same random
numbers, its learning probabilities, and on a shifted sphere."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.pso.sl_pso import SLPSO, learning_probabilities
from helpers import solve


def np_learning_probabilities(m, dim, M, alpha):
    """Eq. 9: P_L of the particle ranked i = 1 (worst) .. m: (1 - (i - 1) / m)^(alpha
    log(ceil(n / M)))."""
    return np.array(
        [(1 - (i - 1) / m) ** (alpha * math.log(math.ceil(dim / M))) for i in range(1, m + 1)]
    )


def np_generation(x, v, fitness, d, M, alpha, beta):
    """Algorithm 1, one generation: sort the swarm (worst first, stable), then every particle
    but the best learns with probability P_L of its rank, each dimension from a demonstrator
    drawn among the particles ranked above it, and from the mean (epsilon = beta n / M)."""
    m, dim = x.shape
    fitness = np.where(np.isfinite(fitness), fitness, -np.inf)
    order = sorted(range(m), key=lambda i: fitness[i])  # stable: ties by row
    pl = np_learning_probabilities(m, dim, M, alpha)
    eps = beta * dim / M
    mean = x.mean(axis=0)
    new_x, new_v, learned = x.copy(), v.copy(), np.zeros(m, bool)
    for r, i in enumerate(order[:-1]):  # the best (last) does not learn
        if d.learn_u[i] < pl[r]:
            learned[i] = True
            for j in range(dim):
                k = order[r + 1 + int(np.floor(d.demonstrator_u[i, j] * (m - 1 - r)))]
                new_v[i, j] = (
                    d.r1[i, j] * v[i, j]
                    + d.r2[i, j] * (x[k, j] - x[i, j])
                    + eps * d.r3[i, j] * (mean[j] - x[i, j])
                )
                new_x[i, j] = x[i, j] + new_v[i, j]
    return new_x, new_v, learned


def test_learning_probabilities_are_eq_9():
    for m, dim, M in [(12, 10, 100.0), (12, 250, 100.0), (7, 30, 4.0)]:
        np.testing.assert_allclose(
            learning_probabilities(m, dim, M, 0.5),
            np_learning_probabilities(m, dim, M, 0.5),
            rtol=1e-6,
        )
    assert np.all(np.asarray(learning_probabilities(110, 100, 100.0, 0.5)) == 1.0)  # D <= M


@pytest.mark.slow
@pytest.mark.parametrize(
    "kwargs",
    [dict(), dict(base_swarm_size=2.0, beta=0.5), dict(base_swarm_size=1.0, alpha=2.0, beta=0.1)],
)
def test_generations_match_a_numpy_transcription_of_the_paper(kwargs):
    """From the same draws, 12 generations: positions, velocities and who learned agree; with
    D > M (the last two settings) some particles do not learn (P_L < 1)."""
    pop, dim = 9, 6
    algo = SLPSO(pop_size=pop, init_std=2.0, **kwargs)
    M, alpha, beta = algo.base_swarm_size, algo.alpha, algo.beta
    state = algo.init(jax.random.key(0), jnp.zeros(dim))
    x_np = np.asarray(state.population, np.float64)
    v_np = np.zeros_like(x_np)
    ask, tell = jax.jit(algo.ask), jax.jit(algo.tell)
    idle = 0
    for g in range(12):
        x, state = ask(jax.random.key(1), state)
        np.testing.assert_allclose(x, x_np, rtol=1e-5, atol=1e-5)
        fitness = -np.sum((np.asarray(x, np.float64) - np.linspace(-1, 1, dim)) ** 2, 1)
        fitness = fitness.astype(np.float32)
        if g == 2:
            fitness[4] = np.nan  # ranked the worst
        if g == 5:
            fitness[[1, 6]] = fitness[3]  # a three-way tie, ranked by row
        key = jax.random.key(10 + g)
        d = algo.draws(key, x)
        d = d._replace(**{k: np.asarray(v, np.float64) for k, v in d._asdict().items()})
        x_np, v_np, learned = np_generation(x_np, v_np, fitness, d, M, alpha, beta)
        state, metrics = tell(key, state, x, jnp.asarray(fitness))
        np.testing.assert_allclose(state.population, x_np, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(state.velocities, v_np, rtol=1e-5, atol=1e-5)
        assert float(metrics["learning_rate"]) == pytest.approx(learned.mean())
        idle += pop - learned.sum()
    if M < dim:
        assert idle > 12  # besides the best, some particles did not learn


def test_solves_a_10d_sphere():
    """D = 10, m = 20, the paper's M = 100, alpha = 0.5, beta = 0.01 (epsilon = 0.001, every
    P_L = 1), init_std = 3, 200 generations (4,000 evaluations), 3 seeds: f - f* < 1e-8
    (12 seeds ended at 0 to 3e-11)."""
    dim, gens = 10, 200
    algo = SLPSO(pop_size=20, init_std=3.0)
    optimum = jnp.linspace(-2.0, 3.0, dim)

    def sphere(x):
        return -jnp.sum((x - optimum[None]) ** 2, 1)

    gaps = -solve(algo, sphere, dim, gens)
    assert np.all(gaps < 1e-8), gaps


@pytest.mark.slow  # a reference check against EvoX (nox -s slow)
def test_evox_slpso_us_imitates_by_row_not_by_rank():
    """EvoX 1.4's ``SLPSOUS`` ranks the swarm but not its rows: particle ``i`` draws its
    demonstrator among the ranks above rank ``i``, whatever its own rank, so a particle may
    imitate a worse one. Three particles in rows ordered best first, zero velocities and
    epsilon = 0: in the paper the best does not move; EvoX draws row 0's demonstrator among
    ranks 2-3 (the middle particle or the best itself), so the best moves toward the middle
    one in about half of the steps. (The reference table's ``SLPSO`` rows compare the final
    precisions.)"""
    import torch
    from evox.algorithms import SLPSOUS

    moved = 0
    for seed in range(8):
        torch.manual_seed(seed)
        algorithm = SLPSOUS(
            pop_size=3,
            lb=torch.full((2,), -5.0),
            ub=torch.full((2,), 5.0),
            social_influence_factor=0.0,
            demonstrator_choice_factor=1.0,
        )
        algorithm.pop = torch.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
        algorithm.velocity = torch.zeros(3, 2)
        algorithm.evaluate = lambda x: torch.sum(x**2, dim=1)  # row 0 is the best
        algorithm.init_step()
        algorithm.step()
        best = algorithm.pop[0]
        if torch.any(best != 0.0):
            assert torch.all((best > 0.0) & (best < 1.0))  # toward the worse particle
            moved += 1
    assert moved >= 1
