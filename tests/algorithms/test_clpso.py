"""CLPSO against a float64 numpy transcription of Liang et al. (2006) fed the same random
numbers, its learning probabilities, and on a shifted sphere."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.pso.clpso import CLPSO, learning_probabilities
from helpers import solve


def np_learning_probabilities(ps):
    """Eq. 3: Pc_i = 0.05 + 0.45 (exp(10 (i - 1) / (ps - 1)) - 1) / (exp(10) - 1)."""
    return np.array(
        [0.05 + 0.45 * (np.exp(10 * i / (ps - 1)) - 1) / (np.exp(10) - 1) for i in range(ps)]
    )


def np_assign_exemplars(i, pf, d, pc):
    """Fig. 3 for particle i: each dimension learns from the better of two other particles'
    personal bests with probability Pc_i (a tie goes to the second), else from its own; if
    none does, the forced dimension learns from its tournament's winner."""
    dim = d.learn_u.shape[1]

    def tournament(k):
        f1, f2 = int(d.first[i, k]), int(d.second[i, k])
        assert f1 != i and f2 != i  # "excludes the particle whose velocity is updated"
        return f1 if pf[f1] > pf[f2] else f2

    f = np.full(dim, i)
    for k in range(dim):
        if d.learn_u[i, k] < pc[i]:
            f[k] = tournament(k)
    if np.all(f == i):
        f[int(d.forced[i])] = tournament(int(d.forced[i]))
    return f


class NumpyCLPSO:
    """Fig. 4, one generation at a time (all particles move, then all are evaluated)."""

    def __init__(self, x, algo):
        self.a = algo
        self.x, self.v = np.array(x, np.float64), np.zeros_like(x, np.float64)
        self.p, self.pf = self.x.copy(), None
        self.flag, self.f = np.zeros(len(x), int), None
        self.pc = np_learning_probabilities(len(x))
        self.k = 0

    def evaluated(self, fitness, d):
        """The fitness of ``self.x`` arrives; then the next move with the draws ``d``."""
        ps, dim = self.x.shape
        fitness = np.where(np.isfinite(fitness), fitness, -np.inf)
        if self.pf is None:  # initialisation: pbest = x, exemplars for every particle
            self.pf = fitness.copy()
            self.f = np.stack([np_assign_exemplars(i, self.pf, d, self.pc) for i in range(ps)])
        else:
            for i in range(ps):
                if fitness[i] > self.pf[i]:
                    self.p[i], self.pf[i], self.flag[i] = self.x[i], fitness[i], 0
                else:
                    self.flag[i] += 1
            for i in range(ps):
                if self.flag[i] >= self.a.refreshing_gap:
                    self.f[i] = np_assign_exemplars(i, self.pf, d, self.pc)
                    self.flag[i] = 0
        self.k += 1
        w = 0.9 - (0.9 - 0.4) * min(self.k, self.a.generations) / self.a.generations
        for i in range(ps):
            for j in range(dim):
                vij = w * self.v[i, j] + self.a.acceleration * d.velocity_u[i, j] * (
                    self.p[self.f[i, j], j] - self.x[i, j]
                )
                if self.a.max_velocity is not None:
                    vij = min(max(vij, -self.a.max_velocity), self.a.max_velocity)
                self.v[i, j] = vij
                self.x[i, j] += vij


def test_learning_probabilities_are_eq_3():
    pc = np.asarray(learning_probabilities(10, 0.05, 0.5, jnp.zeros(1)))
    np.testing.assert_allclose(pc, np_learning_probabilities(10), rtol=1e-6, atol=1e-7)
    assert pc[0] == pytest.approx(0.05) and pc[-1] == pytest.approx(0.5)


@pytest.mark.slow
@pytest.mark.parametrize(
    "kwargs", [dict(refreshing_gap=3, generations=8), dict(generations=30, max_velocity=0.4)]
)
def test_generations_match_a_numpy_transcription_of_the_paper(kwargs):
    pop, dim, gens = 10, 6, 20
    algo = CLPSO(pop_size=pop, init_std=2.0, **kwargs)
    optimum = np.linspace(-1.0, 1.0, dim)
    state = algo.init(jax.random.key(0), jnp.zeros(dim))
    reference = NumpyCLPSO(state.population, algo)
    ask, tell = jax.jit(algo.ask), jax.jit(algo.tell)
    refreshed = 0
    for g in range(gens):
        x, state = ask(jax.random.key(1), state)
        np.testing.assert_allclose(x, reference.x, rtol=1e-4, atol=1e-5)
        fitness = -np.sum((np.asarray(x, np.float64) - optimum) ** 2, 1)
        if g in (3, 7):
            fitness[g % pop] = np.nan  # never a personal best; counts as no improvement
        key = jax.random.key(100 + g)
        d = jax.tree.map(np.asarray, algo.draws(key, x))
        previous = np.asarray(state.exemplars)
        state, metrics = tell(key, state, x, jnp.asarray(fitness, jnp.float32))
        reference.evaluated(np.asarray(fitness, np.float32), d)
        refreshed += np.any(np.asarray(state.exemplars) != previous, axis=1).sum()
        np.testing.assert_array_equal(state.exemplars, reference.f)
        np.testing.assert_array_equal(state.stall, reference.flag)
        np.testing.assert_array_equal(state.personal_best_fitness, reference.pf.astype(np.float32))
        np.testing.assert_allclose(state.personal_best, reference.p, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(state.velocities, reference.v, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(state.population, reference.x, rtol=1e-4, atol=1e-5)
        w = 0.9 - 0.5 * min(g + 1, algo.generations) / algo.generations
        assert float(metrics["inertia"]) == pytest.approx(w, rel=1e-6)
    assert refreshed > pop  # exemplars were assigned again after the first generation
    if algo.max_velocity is not None:
        assert np.max(np.abs(reference.v)) == pytest.approx(algo.max_velocity)


def test_solves_a_10d_sphere():
    """D = 10, 10 particles (the paper's 10-D swarm), init_std = 3, w falling over 1000
    generations (10,000 evaluations), 3 seeds: f - f* < 1e-6 (12 seeds ended at 6e-10 to
    5e-8)."""
    dim, gens = 10, 1000
    algo = CLPSO(pop_size=10, generations=gens, init_std=3.0)
    optimum = jnp.linspace(-2.0, 3.0, dim)

    def sphere(x):
        return -jnp.sum((x - optimum[None]) ** 2, 1)

    gaps = -solve(algo, sphere, dim, gens)
    assert np.all(gaps < 1e-6), gaps
