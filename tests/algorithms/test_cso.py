"""CSO against a float64 numpy transcription of Cheng & Jin (2015) fed the same random numbers,
its evaluation bookkeeping, and on a shifted sphere."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.pso.cso import CSO


def np_competition(P, F, V, d, phi):
    """Algorithm 1, one generation: the pairs (permutation[k], permutation[k + m/2]) compete;
    the fitter (the first on a tie) passes on, the loser learns (eqs. 6 and 7) from the winner
    and the mean of P(t). Returns P(t+1), V(t+1), the losers in pair order and the number of
    tied pairs."""
    m, dim = P.shape
    half = m // 2
    mean = P.mean(axis=0)
    new_P, new_V, losers, ties = P.copy(), V.copy(), [], 0
    for k in range(half):
        x1, x2 = int(d.permutation[k]), int(d.permutation[k + half])
        w, loser = (x1, x2) if F[x1] >= F[x2] else (x2, x1)
        ties += int(F[x1] == F[x2])
        for j in range(dim):
            new_V[loser, j] = (
                d.r1[k, j] * V[loser, j]
                + d.r2[k, j] * (P[w, j] - P[loser, j])
                + phi * d.r3[k, j] * (mean[j] - P[loser, j])
            )
            new_P[loser, j] = P[loser, j] + new_V[loser, j]
        losers.append(loser)
    return new_P, new_V, np.array(losers), ties


def shifted_sphere(x):
    x = np.asarray(x, np.float64)
    return -np.sum((x - np.linspace(-1, 1, x.shape[1])) ** 2, 1)


@pytest.mark.slow
@pytest.mark.parametrize("phi", [0.0, 0.3])
def test_generations_match_a_numpy_transcription_of_the_paper(phi):
    """The first two asks return the initial swarm's halves; then every ask returns exactly
    the losers the transcription moved, and the swarm, velocities and fitness agree."""
    pop, dim = 6, 5
    m = 2 * pop
    algo = CSO(pop_size=pop, phi=phi, init_std=2.0)
    state = algo.init(jax.random.key(0), jnp.zeros(dim))
    P = np.asarray(state.population, np.float64)
    F, V = np.full(m, -np.inf), np.zeros((m, dim))
    ask, tell = jax.jit(algo.ask), jax.jit(algo.tell)
    for half in range(2):
        x, state = ask(jax.random.key(1), state)
        np.testing.assert_array_equal(x, P[half * pop : (half + 1) * pop])
        fitness = shifted_sphere(x).astype(np.float32)
        F[half * pop : (half + 1) * pop] = fitness
        state, _ = tell(jax.random.key(2 + half), state, x, jnp.asarray(fitness))
        if half == 0:
            assert int(state.pending) == 1
    asked, ties = [], 0
    key = jax.random.key(3)
    for g in range(10):
        d = algo.draws(key, jnp.zeros((pop, dim)))
        d = d._replace(**{k: np.asarray(getattr(d, k), np.float64) for k in ("r1", "r2", "r3")})
        P, V, losers, tied = np_competition(P, F, V, d, phi)
        ties += tied
        F[losers] = -np.inf
        x, state = ask(jax.random.key(50 + g), state)
        np.testing.assert_array_equal(state.candidates, losers)
        np.testing.assert_allclose(x, P[losers], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(state.population, P, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(state.velocities, V, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(state.fitness, F.astype(np.float32))
        fitness = shifted_sphere(x).astype(np.float32)
        if g == 4:
            fitness[1] = np.nan  # a loser with no fitness: it loses its next competition
        if g == 6:
            fitness[:] = np.max(F)  # the losers tie with each other and the best winner
        F[losers] = np.where(np.isfinite(fitness), fitness, -np.inf)
        P[losers] = np.asarray(x, np.float64)  # the told positions
        key = jax.random.key(100 + g)
        state, _ = tell(key, state, x, jnp.asarray(fitness))
        asked.append(losers)
    assert len({tuple(sorted(a)) for a in asked}) > 1
    assert ties > 0


ALGO = CSO(pop_size=20, init_std=3.0)  # a swarm of 40
OPTIMUM = jnp.linspace(-2.0, 3.0, 10)


def sphere(x):
    return -jnp.sum((x - OPTIMUM[None]) ** 2, 1)


@jax.jit
def run(key, generations):
    """The state after ``generations`` (traced: one compile for both tests) on the sphere."""
    init_key, key = jax.random.split(key)

    def generation(g, state):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, g))
        x, state = ALGO.ask(ask_key, state)
        state, _ = ALGO.tell(tell_key, state, x, sphere(x))
        return state

    return jax.lax.fori_loop(0, generations, generation, ALGO.init(init_key, jnp.zeros(10)))


def test_asks_evaluate_the_initial_swarm_then_only_the_moved_losers():
    """A swarm of 40: the first two asks return rows 0-19 and 20-39, later asks the 20 losers
    just moved; the winners keep their positions, zero velocities and told fitness."""
    pop, m = ALGO.pop_size, ALGO.swarm_size
    key = jax.random.key(0)
    start = np.asarray(run(key, 0).population)  # the initial swarm
    assert start.shape == (m, 10)
    for told in range(3):
        state = run(key, told)
        x, _ = ALGO.ask(jax.random.key(1), state)
        if told < 2:
            assert int(state.pending) == 2 - told
            np.testing.assert_array_equal(x, start[pop * told : pop * (told + 1)])
    losers = np.asarray(state.candidates)
    winners = np.setdiff1d(np.arange(m), losers)
    assert len(set(losers.tolist())) == pop
    fitness, velocities = np.asarray(state.fitness), np.asarray(state.velocities)
    np.testing.assert_array_equal(fitness[losers], -np.inf)
    np.testing.assert_array_equal(np.asarray(state.population)[winners], start[winners])
    np.testing.assert_allclose(fitness[winners], sphere(start[winners]), rtol=1e-6)
    np.testing.assert_array_equal(velocities[winners], 0.0)
    assert np.all(np.any(velocities[losers] != 0.0, axis=1))
    np.testing.assert_array_equal(x, np.asarray(state.population)[losers])
    # each loser was no fitter than its winner, so the winners hold at least half the total
    previous = np.asarray(sphere(start))
    assert previous[winners].sum() >= previous[losers].sum()


def test_solves_a_10d_sphere():
    """D = 10, a swarm of 40 (20 losers evaluated per generation), phi = 0, init_std = 3,
    300 generations (6,000 evaluations), 3 seeds: f - f* < 1e-9 (12 seeds ended at 7e-13 to
    2e-11)."""
    keys = jax.random.split(jax.random.key(1), 3)
    gaps = -np.array([float(run(key, 300).best_fitness) for key in keys])
    assert np.all(gaps < 1e-9), gaps


@pytest.mark.slow  # a reference check against EvoX (nox -s slow)
def test_evox_cso_never_updates_its_velocities():
    """EvoX 1.4's ``CSO.step`` never stores the losers' new velocities (``self.velocity`` keeps
    its initial values), so every loser's inertia term is ``R1`` times its initial random
    velocity in every generation, which makes it stall far from the optimum (medians 5.8e3 to
    7.7e4 on f2, f8, f10, f20). After 5 steps on a sphere it has moved half its swarm each
    step, yet its velocities are the initial ones. (If this fails, EvoX has fixed the bug:
    the reference table's ``CSO`` rows, which run its step with the assignment added, can
    compare with its CSO directly.)"""
    import torch
    from evox.algorithms import CSO as EvoXCSO

    torch.manual_seed(0)
    algorithm = EvoXCSO(pop_size=10, lb=torch.full((3,), -5.0), ub=torch.full((3,), 5.0))
    algorithm.evaluate = lambda x: torch.sum(x**2, dim=1)
    start, velocity = algorithm.pop.clone(), algorithm.velocity.clone()
    algorithm.init_step()
    for _ in range(5):
        algorithm.step()
    assert not torch.equal(algorithm.pop, start)
    np.testing.assert_array_equal(algorithm.velocity.numpy(), velocity.numpy())
