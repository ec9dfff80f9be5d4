"""IPOP (Auger & Hansen, 2005) and BIPOP (Hansen, 2009) restarts: schedules, budgets, jit
reuse, and solving Rastrigin."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms import SNES
from evolax.algorithms.cma import restarts
from evolax.algorithms.cma.cma_es import CMAES
from evolax.algorithms.cma.restarts import bipop, ipop, max_generations, small_regime_run
from evolax.algorithms.cma.sep_cma_es import SepCMAES


class Flat:
    """Constant fitness (each run ends by EqualFunValues after 10 + ceil(30 n / lambda)
    generations); records the population size of each trace, i.e. of each compilation of a
    restart segment."""

    def __init__(self):
        self.traced_pop_sizes = []

    def __call__(self, population):
        self.traced_pop_sizes.append(population.shape[0])
        return jnp.zeros(population.shape[0])


FLAT = Flat()  # shared by the tests below, so they share compilations


def new_traces(run):
    """The pop sizes traced while ``run()`` runs, and its result."""
    before = len(FLAT.traced_pop_sizes)
    result = run()
    return FLAT.traced_pop_sizes[before:], result


@pytest.mark.slow  # 9 s; BIPOP's test restarts with IPOP's doubling in the default run
def test_ipop_doubles_the_population_and_reuses_compilations(key):
    """d = 4 from lambda = 4: runs of 4, 8, 16 individuals stop after 40, 25, 18 generations
    (10 + ceil(120 / lambda)); the 32-run gets the 1000 - 648 = 352 evaluations left."""
    traced, result = new_traces(
        lambda: ipop(CMAES, FLAT, jnp.zeros(4), key, 1000, pop_size=4, init_std=0.5)
    )
    records = result.restarts
    assert [r.pop_size for r in records] == [4, 8, 16, 32]
    assert [r.generations for r in records] == [40, 25, 18, 11]
    assert [r.evaluations for r in records] == [160, 200, 288, 352]
    assert all("equalfunvals" in r.stop_reasons for r in records[:3])
    assert records[3].stop_reasons == ("budget",)
    assert result.evaluations == 1000 and result.best_fitness == 0.0
    assert {r.regime for r in records} == {"ipop"} and {r.init_std for r in records} == {0.5}
    # at most one compilation per pop size (none if an earlier test compiled it)
    assert len(traced) == len(set(traced)) and set(traced) <= {4, 8, 16, 32}
    assert set(FLAT.traced_pop_sizes) >= {4, 8, 16, 32}
    # same pop sizes, another init_std, budget and key: nothing recompiles
    traced, _ = new_traces(
        lambda: ipop(CMAES, FLAT, jnp.zeros(4), jax.random.key(1), 400, pop_size=4, init_std=2.0)
    )
    assert traced == []


@pytest.mark.slow  # the whole BIPOP schedule; its accounting is tested in the default run too
def test_bipop_interlaces_the_regimes(key):
    """Hansen (2009), with the accounting of his code and pycma's ``fmin(bipop=True)``: the
    first run (lambda_def = 4, sigma0) counts toward the small regime, so the second run is the
    large regime's first, with 2 lambda_def; the large regime doubles lambda with sigma0; small
    runs draw lambda in [lambda_def, latest large lambda] and sigma in [sigma0 / 100, sigma0],
    get as many generations as half the large regime's evaluations last, and are chosen
    while the small regime (the first run included) has used fewer evaluations."""
    compiled_before = set(FLAT.traced_pop_sizes)
    traced, result = new_traces(
        lambda: bipop(CMAES, FLAT, jnp.zeros(4), key, 2000, pop_size=4, init_std=0.5)
    )
    records = result.restarts
    assert (records[0].regime, records[0].pop_size, records[0].init_std) == ("first", 4, 0.5)
    assert (records[1].regime, records[1].pop_size) == ("large", 8)  # pycma doubles at once
    large_evals, small_evals = 0, records[0].evaluations
    latest_large = None
    n_large = 0
    for i, r in enumerate(records[1:], start=1):
        # the small regime while it has used fewer evaluations
        assert r.regime == ("small" if small_evals < large_evals else "large"), i
        if r.regime == "large":
            n_large += 1
            assert r.pop_size == 4 * 2**n_large and r.init_std == 0.5
            latest_large = r.pop_size
            large_evals += r.evaluations
        else:
            assert 4 <= r.pop_size <= latest_large
            assert 0.5 / 100 <= r.init_std <= 0.5
            generations = math.ceil(0.5 * large_evals / r.pop_size)  # pycma's maxiter
            assert r.budget == min(generations * r.pop_size, 2000 - sum(
                q.evaluations for q in records[:i]))  # fmt: skip
            small_evals += r.evaluations
    assert n_large >= 2 and len(records) > n_large + 1
    assert result.evaluations == sum(r.evaluations for r in records) <= 2000
    # one compilation per new pop size, although the small runs' init_std differ
    assert sorted(traced) == sorted({r.pop_size for r in records} - compiled_before)


def test_ipop_with_sep_cma_solves_a_sphere(key):
    """Any factory works (here SepCMAES with a tighter TolX), the result holds the best
    solution evaluated, and the target fitness ends the run."""
    optimum = jnp.arange(6.0)
    factory = functools.partial(SepCMAES, tol_x=1e-20)
    result = ipop(
        lambda pop, std: factory(pop, init_std=std),
        lambda x: -jnp.sum((x - optimum[None]) ** 2, 1),
        jnp.zeros(6),
        key,
        20_000,
        init_std=2.0,
        target_fitness=-1e-10,
    )
    assert len(result.restarts) == 1 and "target" in result.restarts[0].stop_reasons
    assert -1e-10 <= result.best_fitness
    np.testing.assert_allclose(result.best_solution, optimum, atol=1e-4)
    gap = float(jnp.sum((result.best_solution - optimum) ** 2))
    assert gap == pytest.approx(-result.best_fitness, rel=1e-3, abs=1e-12)


def test_rejects_bad_arguments(key):
    f, x0 = (lambda x: -jnp.sum(x**2, 1)), jnp.zeros(3)
    for driver in (ipop, bipop):
        for kwargs, match in [
            ({"max_evals": 0}, "max_evals"),
            ({"init_std": 0.0}, "init_std"),
            ({"increase_factor": 1.0}, "increase_factor"),
            ({"max_restarts": -1}, "max_restarts"),
            ({"pop_size": 0}, "pop_size"),
        ]:
            args = {"max_evals": 100, **kwargs}
            with pytest.raises(ValueError, match=match):
                driver(CMAES, f, x0, key, args.pop("max_evals"), **args)
        with pytest.raises(ValueError, match="algorithm"):
            driver(CMAES(pop_size=4), f, x0, key, 100)
        with pytest.raises(ValueError, match="should_stop"):
            driver(lambda pop, std: SNES(pop_size=pop, init_std=std), f, x0, key, 100)


def rastrigin(x):
    return -jnp.sum(x**2 + 20 * jnp.sin(jnp.pi * x) ** 2, -1)  # 1 - cos(2 pi x) = 2 sin^2


@pytest.mark.slow
@pytest.mark.parametrize("driver", [ipop, bipop])
def test_solves_rastrigin_10d(driver):
    """Rastrigin d = 10, x0 uniform in [-4, 4]^10 drawn anew for every run, sigma0 = 2,
    default population: f < 1e-8 within 400,000 evaluations for 3 seeds out of 3 (measured:
    IPOP 45k-116k after 4-6 restarts, reaching lambda = 160-640; BIPOP 83k-132k)."""
    for seed in range(3):
        result = driver(
            CMAES,
            rastrigin,
            lambda k: jax.random.uniform(k, (10,), minval=-4.0, maxval=4.0),
            jax.random.key(seed),
            400_000,
            init_std=2.0,
            target_fitness=-1e-8,
        )
        assert result.best_fitness >= -1e-8, (seed, result.best_fitness, result.restarts)
        assert result.evaluations <= 400_000
        assert float(-rastrigin(jnp.asarray(result.best_solution))) < 1e-8 * (1 + 1e-3)
        if driver is ipop:
            pops = [r.pop_size for r in result.restarts]
            assert pops == [10 * 2**i for i in range(len(pops))]
        assert math.isclose(result.best_fitness, max(r.best_fitness for r in result.restarts))


class Replay(SNES):
    """SNES that stops after ``stop_after`` generations (a float, so it is traced)."""

    stop_after: float = math.inf

    def termination_criteria(self, state):
        return {"replay": state.generation >= self.stop_after}

    def should_stop(self, state):
        return state.generation >= self.stop_after


def pycma_bipop_trace(dim, pop_size, restarts_, tol=1e-6):
    """pycma 4's ``fmin(..., restarts=restarts_, bipop=True)`` on Rastrigin: per run its
    ``(popsize, sigma0, iterations, stop reasons)``, and the uniform draws of the small runs
    (step size first, then population, as ``fmin`` draws them)."""
    cma = pytest.importorskip("cma")
    from cma import evolution_strategy

    runs, draws = [], []
    original_init, original_uniform = evolution_strategy.CMAEvolutionStrategy.__init__, None

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        runs.append(self)

    def uniform(*args, **kwargs):
        value = original_uniform(*args, **kwargs)
        if not args and not kwargs:  # fmin's np.random.uniform() of a small run
            draws.append(float(value))
        return value

    rng = np.random.default_rng(0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(evolution_strategy.CMAEvolutionStrategy, "__init__", init)
        original_uniform = np.random.uniform
        patch.setattr(np.random, "uniform", uniform)
        cma.fmin(
            lambda x: float(np.sum(x**2 + 20 * np.sin(np.pi * x) ** 2)),
            lambda: rng.uniform(-4, 4, dim),
            2.0,
            {
                "verbose": -9,
                "seed": 3,
                "popsize": pop_size,
                "eval_final_mean": False,
                "tolfun": tol,
                "tolx": tol,
            },
            restarts=restarts_,
            bipop=True,
        )
    trace = [(es.popsize, es.sigma0, es.countiter, set(es.stop())) for es in runs]
    return trace, draws[0::2], draws[1::2]


def test_small_runs_and_maxiter_are_pycmas():
    """pycma's small runs: floor(lambda_def (lambda_l / lambda_def)^(u^2)) with lambda_l the
    latest large population, sigma0 10^(-2 u), and as many iterations as half the large
    regime's evaluations, rounded up (pycma's maxiter = 0.5 sum(large) / popsize; the run
    ends once countiter >= maxiter); MaxIter 100 + 150 (n + 3)^2 // sqrt(lambda_def)."""
    dim, pop_size = 2, 4
    trace, sigma_draws, pop_draws = pycma_bipop_trace(dim, pop_size, 3, tol=1e-3)
    cap = max_generations(dim, pop_size)
    assert cap == 1975  # pycma's evaluated "100 + 150 * (N+3)**2 // popsize**0.5"
    draws = iter(zip(pop_draws, sigma_draws, strict=True))
    small_evals, large_evals, large_pop, checked = trace[0][0] * trace[0][2], 0, pop_size, 0
    for pop, sigma0, iters, stops in trace[1:]:
        if small_evals >= large_evals:  # large: the doubling, sigma0
            large_pop *= 2
            assert (pop, sigma0) == (large_pop, 2.0)
            large_evals += pop * iters
            continue
        u1, u2 = next(draws)
        ours = small_regime_run(pop_size, large_pop, large_evals, cap, u1, u2, 2.0)
        assert ours[:2] == (pop, pytest.approx(sigma0, rel=1e-12)), (ours, pop, sigma0)
        assert ours[2] == iters if "maxiter" in stops else ours[2] > iters
        checked += "maxiter" in stops
        small_evals += pop * iters
    assert checked >= 1  # a small run that its budget ended


def test_records_name_maxiter_apart_from_the_budget(key):
    """A run that no criterion stops ends at pycma's MaxIter (1975 generations at d = 2,
    lambda = 4, as pycma's ``maxiter``), recorded as "maxiter"; a run that the evaluations
    left end (no further generation fits) is recorded as "budget"."""

    def run(max_evals):
        replay = lambda pop, std: Replay(pop_size=pop, init_std=std)  # noqa: E731
        return ipop(replay, FLAT, jnp.zeros(2), key, max_evals, pop_size=4, max_restarts=0)

    (capped,) = run(8_000).restarts
    assert (capped.generations, capped.stop_reasons) == (1975, ("maxiter",))
    (short,) = run(1_002).restarts
    assert (short.generations, short.stop_reasons) == (250, ("budget",))


@pytest.mark.slow  # 10 s: one compilation per population
def test_bipop_replays_pycmas_schedule(key, monkeypatch):
    """Told each run's length where a termination criterion ended it in pycma, and given
    pycma's draws, BIPOP makes pycma's runs: the regime (the first run counted as small), the
    population (doubling from lambda_def; floor(lambda_def (lambda_l / lambda_def)^(u^2))),
    sigma0 10^(-2 u), the small runs' generations (half the large regime's evaluations,
    rounded up: pycma's maxiter), MaxIter, and the end after the restarts-th large run."""
    dim, pop_size, n_restarts = 2, 4, 3
    trace, sigma_draws, pop_draws = pycma_bipop_trace(dim, pop_size, n_restarts, tol=1e-3)
    assert len(pop_draws) >= 2 and any("maxiter" in t[3] for t in trace)
    original = restarts.small_regime_run
    pycma_draws = iter(zip(pop_draws, sigma_draws, strict=True))

    def with_pycmas_draws(lam_def, lam_l, evals, gens, u1, u2, std):
        return original(lam_def, lam_l, evals, gens, *next(pycma_draws), std)

    monkeypatch.setattr(restarts, "small_regime_run", with_pycmas_draws)
    lengths = iter([math.inf if "maxiter" in stops else iters for _, _, iters, stops in trace])

    def factory(pop, std):
        return Replay(pop_size=pop, init_std=std, stop_after=float(next(lengths)))

    result = bipop(factory, FLAT, jnp.zeros(dim), key, 10**6, pop_size=pop_size, init_std=2.0,
                   max_restarts=n_restarts)  # fmt: skip
    ours = [(r.pop_size, r.generations) for r in result.restarts]
    assert ours == [(pop, iters) for pop, _, iters, _ in trace]
    np.testing.assert_allclose([r.init_std for r in result.restarts], [t[1] for t in trace])
    assert [r.regime for r in result.restarts].count("large") == n_restarts
