"""PSO against a numpy transcription of Kennedy & Eberhart (1995) with Clerc & Kennedy's (2002)
constriction or Shi & Eberhart's (1998) inertia weight, and on a shifted sphere."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.base import normal
from evolax.algorithms.pso.pso import PSO, constriction_coefficient

X0 = {"a": jnp.arange(6.0).reshape(2, 3), "b": jnp.array([-1.0, 0.5])}  # D = 8


def flat(population):
    """A population of X0-shaped genomes as a float64 ``[pop, 8]`` matrix (ravel order)."""
    return np.concatenate(
        [np.asarray(population["a"], np.float64).reshape(-1, 6), np.asarray(population["b"])],
        axis=1,
    )


def numpy_move(x, v, p, pf, r1, r2, rule, topology, c1, c2, w, vmax):
    """One velocity and position update per particle, coordinate by coordinate."""
    n, dim = x.shape
    pf = np.where(np.isnan(pf), -np.inf, pf)
    if rule == "constriction":
        phi = c1 + c2
        chi, w = 2 / abs(2 - phi - np.sqrt(phi * phi - 4 * phi)), 1.0
    else:
        chi = 1.0
    new_x, new_v = np.empty_like(x), np.empty_like(v)
    for i in range(n):
        neighbours = range(n) if topology == "global" else [i, (i - 1) % n, (i + 1) % n]
        g = p[max(neighbours, key=lambda k: pf[k])]  # first maximum in that order
        for j in range(dim):
            vij = chi * (
                w * v[i, j] + c1 * r1[i, j] * (p[i, j] - x[i, j]) + c2 * r2[i, j] * (g[j] - x[i, j])
            )
            if vmax is not None:
                vij = min(max(vij, -vmax), vmax)
            new_v[i, j], new_x[i, j] = vij, x[i, j] + vij
    return new_x, new_v


def test_constriction_coefficient_is_clerc_and_kennedys():
    assert float(constriction_coefficient(2.05, 2.05)) == pytest.approx(0.729843788, rel=1e-6)
    assert PSO(pop_size=4).constriction == pytest.approx(0.7298, abs=1e-4)
    assert PSO(pop_size=4, velocity_rule="inertia").constriction == 1.0


def numpy_personal_bests(p, pf, x, f):
    """``p_i <- x_i`` where ``f(x_i) > f(p_i)`` (strictly); NaN is never better."""
    f = np.where(np.isnan(f), -np.inf, f)
    better = f > pf
    return np.where(better[:, None], x, p), np.where(better, f, pf)


def as_genomes(x):
    return {"a": jnp.asarray(x[:, :6].reshape(-1, 2, 3)), "b": jnp.asarray(x[:, 6:])}


@pytest.mark.parametrize(
    "rule, topology, vmax",
    [
        ("constriction", "global", None),
        ("inertia", "ring", None),
        ("constriction", "ring", 0.3),
        ("inertia", "global", 0.2),
    ],
)
def test_tell_updates_the_bests_and_ask_moves_by_the_velocity_equations(rule, topology, vmax):
    c1, c2 = (2.1, 2.0) if rule == "constriction" else (1.4, 1.6)
    w = None if rule == "constriction" else 0.6
    algo = PSO(8, rule, c1, c2, w, topology, max_velocity=vmax, init_std=0.5)
    state = algo.init(jax.random.key(0), X0)
    rng = np.random.default_rng(0)
    # two generations: the initial swarm is evaluated, moved and evaluated again
    for generation in range(2):
        population, state = algo.ask(jax.random.key(1 + generation), state)
        fitness = rng.normal(size=8).astype(np.float32)
        fitness[3 * generation] = np.nan
        state, _ = algo.tell(jax.random.key(0), state, population, fitness)
    # the next move starts from non-zero velocities (except where a particle was its own
    # neighbourhood best: p = g = x gave it v = 0)
    assert np.count_nonzero(np.asarray(state.velocities)) >= 4 * 8
    key = jax.random.key(4)
    population, moved = algo.ask(key, state)
    r1, r2 = (np.asarray(r, np.float64) for r in algo.draws(key, jnp.zeros((8, 8))))
    expected_x, expected_v = numpy_move(
        np.asarray(state.population, np.float64),
        np.asarray(state.velocities, np.float64),
        np.asarray(state.personal_best, np.float64),
        np.asarray(state.personal_best_fitness),
        r1, r2, rule, topology, c1, c2, w, vmax,
    )  # fmt: skip
    x = flat(population)
    np.testing.assert_allclose(x, expected_x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(moved.velocities, expected_v, rtol=1e-5, atol=1e-6)
    if vmax is not None:
        assert np.max(np.abs(expected_v)) == pytest.approx(vmax)  # the clamp was exercised
    fitness = rng.normal(size=8).astype(np.float32)
    fitness[5] = np.nan
    told, _ = algo.tell(jax.random.key(0), moved, population, jnp.asarray(fitness))
    p, pf = numpy_personal_bests(
        np.asarray(moved.personal_best, np.float64),
        np.asarray(moved.personal_best_fitness),
        x,
        fitness,
    )
    np.testing.assert_array_equal(told.personal_best, p)
    np.testing.assert_array_equal(told.personal_best_fitness, pf)
    np.testing.assert_array_equal(told.population, x)  # the evaluated positions, and
    np.testing.assert_array_equal(told.fitness, np.where(np.isnan(fitness), -np.inf, fitness))


def test_tell_keeps_personal_bests_and_the_best_ever_and_ignores_nan():
    algo = PSO(pop_size=8)
    state = algo.init(jax.random.key(0), X0)
    x1 = np.random.default_rng(1).normal(size=(8, 8)).astype(np.float32)
    x2 = np.random.default_rng(2).normal(size=(8, 8)).astype(np.float32)
    f1 = np.array([1, 2, np.nan, 4, 5, 6, 7, 0], np.float32)
    f2 = np.array([2, 2, 0, np.nan, 9, 1, np.nan, -1], np.float32)
    p = np.asarray(state.personal_best, np.float64)
    pf = np.full(8, -np.inf)
    for key, (x, f) in enumerate([(x1, f1), (x2, f2)]):
        state, metrics = algo.tell(jax.random.key(key), state, as_genomes(x), jnp.asarray(f))
        p, pf = numpy_personal_bests(p, pf, x, f)
    np.testing.assert_array_equal(state.personal_best, p)
    np.testing.assert_array_equal(state.personal_best_fitness, pf)
    assert float(metrics["best_fitness"]) == 9.0
    np.testing.assert_array_equal(flat(jax.tree.map(lambda a: a[None], algo.best(state)))[0], x2[4])
    # every particle's attractor is the best personal best
    np.testing.assert_array_equal(algo.neighbour_best(state), np.broadcast_to(x2[4], (8, 8)))
    assert np.all(np.isfinite(state.population)) and np.all(np.isfinite(state.velocities))


def test_asks_before_the_first_tell_return_the_initial_swarm():
    algo = PSO(pop_size=8, init_std=0.5)
    init_key = jax.random.key(5)
    state = algo.init(init_key, X0)
    population, state = algo.ask(jax.random.key(1), state)
    x0 = flat(jax.tree.map(lambda a: a[None], X0))[0]
    # documented: x0 + init_std * N(0, I) from init's key, zero velocities
    expected = x0[None] + 0.5 * np.asarray(normal(init_key, (8, 8), jnp.zeros(8)), np.float64)
    np.testing.assert_allclose(flat(population), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(state.velocities, 0.0)
    np.testing.assert_array_equal(algo.best(state)["a"], X0["a"])  # x0 before any tell
    again, _ = algo.ask(jax.random.key(2), state)  # another key: the same positions
    np.testing.assert_array_equal(flat(again), flat(population))


def run_seeds(algo, dim, gens, n_seeds=3):
    """Gaps to the optimum of a shifted sphere per generation for ``n_seeds`` runs."""
    optimum = jnp.linspace(-2.0, 3.0, dim)

    def sphere(population):
        return -jnp.sum((population - optimum[None]) ** 2, 1)

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        population, state = algo.ask(ask_key, state)
        state, metrics = algo.tell(tell_key, state, population, sphere(population))
        return state, metrics["best_fitness"]

    def one_seed(key):
        init_key, key = jax.random.split(key)
        state, best = jax.lax.scan(
            generation, algo.init(init_key, jnp.zeros(dim)), jax.random.split(key, gens)
        )
        return best, sphere(algo.best(state)[None])[0]

    # one compiled run, called per seed (vmapping threefry over seeds compiles slowly on CPU)
    run = jax.jit(one_seed)
    runs = [run(key) for key in jax.random.split(jax.random.key(0), n_seeds)]
    best, final = np.stack([b for b, _ in runs]), np.array([f for _, f in runs])
    assert np.all(np.diff(best, axis=1) >= 0)  # the global best never gets worse
    np.testing.assert_array_equal(final, best[:, -1])  # best() earned best_fitness
    return -best


def test_reaches_1e_6_on_a_shifted_sphere():
    """d = 10, 30 particles, constriction (chi = 0.7298, c1 = c2 = 2.05), global best,
    init_std = 3, 400 generations (12,000 evaluations), 3 seeds: f - f* < 1e-6 (reached at
    generations 143-154)."""
    gaps = run_seeds(PSO(pop_size=30, init_std=3.0), 10, 400)
    assert np.all(gaps[:, -1] < 1e-6), gaps[:, -1]


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["inertia", "constriction"])
def test_ring_topology_reaches_1e_6_on_a_shifted_sphere(rule):
    """d = 10, 30 particles on a ring, init_std = 3, 600 generations, 3 seeds: f - f* < 1e-6
    (reached at generations 229-269 with either rule's defaults)."""
    gaps = run_seeds(PSO(pop_size=30, velocity_rule=rule, topology="ring", init_std=3.0), 10, 600)
    assert np.all(gaps[:, -1] < 1e-6), gaps[:, -1]


def test_the_inertia_rule_defaults():
    inertia = PSO(pop_size=8, velocity_rule="inertia")
    assert (inertia.inertia, inertia.cognitive, inertia.social) == (0.7298, 1.49618, 1.49618)


def test_per_particle_draws_share_r_across_coordinates():
    algo = PSO(pop_size=8, per_particle_draws=True)
    r1, r2 = algo.draws(jax.random.key(0), jnp.zeros((8, 5)))
    assert r1.shape == r2.shape == (8, 1) and not np.array_equal(r1, r2)
    state = algo.init(jax.random.key(0), jnp.zeros(5))
    x, state = algo.ask(jax.random.key(1), state)
    state, _ = algo.tell(jax.random.key(0), state, x, -jnp.sum((x - 1.0) ** 2, axis=1))
    _, moved = algo.ask(jax.random.key(2), state)
    # from zero velocity, each particle moves along c1 r1 (p - x) + c2 r2 (g - x) with p = x
    g = state.personal_best[jnp.argmax(state.personal_best_fitness)]
    r1, r2 = algo.draws(jax.random.key(2), x)
    step = algo.constriction * algo.social * r2 * (g[None] - x)
    np.testing.assert_allclose(moved.velocities, step, rtol=1e-5, atol=1e-6)
