"""iAMaLGaM-Full against evosax 0.3.2's ``iAMaLGaM_Full``.

What evosax shares with the paper (Bosman, Grahl & Thierens, 2013, and Bosman's reference
code): the AVS rule (``c_mult``, ``NIS``, ``eta_INC = 1 / eta_DEC``, ``theta_SDR = 1``), the
mean of the ``|S|`` best, the maximum-likelihood covariance around the new mean, its
incremental learning with the full guideline's ``eta_Sigma`` and ``eta_shift`` (computed from
its own ``|S|``), and the mean shift's moving average.

Where evosax departs from them (each shown by :func:`test_evosax_departs_from_the_paper`):

1. It samples ``N(m, C + std^2 I)`` (``std`` from ``std_schedule``, constant 1): ``c_mult``
   never scales the covariance, only the AMS step, and the added identity keeps every
   coordinate's variance above 1, so it cannot converge (:func:`test_bbob_sphere_against_evosax`).
2. Its SDR is ``max |U^{-1} d|`` with ``U`` the *upper* Cholesky factor of ``C`` (the default
   of ``jax.scipy.linalg.cholesky``), where the paper whitens with the lower factor of the
   sampling covariance ``c_mult C``; and it averages only the improvements among the ``|S|``
   selected, the paper all of them.
3. AMS moves ``int(alpha (pop - 1))`` samples with ``alpha = tau pop / (2 (pop - |S|))``, half
   the population at its ``tau = 0.5``, where the paper's ``alpha_AMS = tau n / (2 (n - 1))``
   moves ``floor(tau n / 2)``.
4. Defaults: ``tau = 0.5`` (its ``elite_ratio``) where the paper has 0.35, ``NIS_MAX = 50``
   where the paper has ``25 + l``.
5. No elitism (the paper keeps the best solution so far), and no focus on the best selected
   solution while ``c_mult < 1``.
6. Its first ``tell`` already blends ``C = (1 - eta) I + eta Sigma_hat`` and ``mu_shift = eta
   (mu_1 - mu_0)``; the reference code's first estimate is the diagonal of ``Sigma_hat`` with
   no shift, and the second sets ``mu_shift = mu_2 - mu_1``.

:func:`test_matches_evosax_given_the_papers_sdr_and_elitism` compares the updates themselves,
state by state: evosax gets ``elite_ratio = 0.35`` (so its ``|S|`` and rates are evolax's),
``nis_max_gens = 25 + l``, the paper's SDR (a subclass overriding its two SDR methods), and
the elite: it is built for ``pop_size + 1`` and told ``[elite; samples]``. Items 1 and 3 live
in ``ask`` (evolax asks for both); item 6 is skipped by handing evosax evolax's state after
the first two tells.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.linalg import solve_triangular

from evolax.algorithms.cma.iamalgam_full import IAMaLGaMFull, default_pop_size
from evolax.problems import bbob_problem
from helpers import best_after

pytestmark = pytest.mark.slow
evosax = pytest.importorskip("evosax.algorithms")

RTOL, ATOL = 2e-5, 2e-6


def quadratic(x, dim):
    """A fixed random rotated ellipsoid, maximised at a random target: no ties."""
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    hessian = jnp.asarray(q @ np.diag(rng.uniform(0.5, 5.0, dim)) @ q.T, jnp.float32)
    y = x - jnp.asarray(0.5 * rng.normal(size=dim), jnp.float32)[None]
    return -jnp.sum(jnp.dot(y, hessian) * y, axis=1)


def paper_sdr(cls, whiten):
    """``cls`` with the paper's SDR: ``max |L^{-1} d| / sqrt(c_mult)`` for ``L`` the lower
    factor of ``C`` (``whiten(C, d) = L^{-1} d``)."""

    class PaperSDR(cls):
        def standard_deviation_ratio(self, improvement_mask, elites, C, mean):
            average = jnp.dot(improvement_mask, elites) / jnp.sum(improvement_mask)
            return jnp.max(jnp.abs(whiten(C, average - mean)))

        def adaptive_variance_scaling(self, any_improvement, sdr, c_mult, nis, params):
            scaled = sdr / jnp.sqrt(c_mult)
            return super().adaptive_variance_scaling(any_improvement, scaled, c_mult, nis, params)

    return PaperSDR


def lower_whiten(cov, d):
    return solve_triangular(jnp.linalg.cholesky(cov), d, lower=True)


def compare_with_evosax(ours, their_cls, dim, cov_of, seed, their_params=lambda p, q: q):
    """Two tells of evolax, then evosax takes evolax's state, and for 7 generations evolax
    asks, both are told the samples (evosax with the elite first, fitness negated) and the
    states agree; ``cov_of(state)`` is evolax's covariance in evosax's form. Returns the
    values ``c_mult`` and ``NIS`` took."""
    pop = ours.pop_size
    p = ours.parameters(dim)
    x0 = jnp.linspace(-1.0, 1.0, dim)
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        theirs = their_cls(population_size=pop + 1, solution=jnp.zeros(dim))
        assert theirs.elite_ratio == 0.5  # item 4: evosax's tau
        theirs.elite_ratio = ours.selection_ratio
        assert theirs.num_elites == p.n_selected
        params = theirs.default_params
        assert params.nis_max_gens == 50 != p.max_no_improvement  # item 4: NIS_MAX
        params = their_params(p, params.replace(nis_max_gens=p.max_no_improvement))
        rates = [params.eta_std, params.eta_shift]
        np.testing.assert_allclose(rates, [p.cov_lr, p.shift_lr], rtol=1e-6)
        their_state = theirs.init(jax.random.key(0), x0, params)

    key = jax.random.key(seed)
    state = ours.init(key, x0)
    tell = jax.jit(ours.tell)
    multipliers, stretches = set(), set()
    for step in range(9):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, step))
        x, _ = ours.ask(ask_key, state)
        fitness = quadratic(x, dim)
        new, _ = tell(tell_key, state, x, fitness)
        if step == 1:  # the reference code's start is over: evosax continues from here
            their_state = their_state.replace(
                mean=new.mean,
                C=cov_of(new),
                mean_shift=new.shift,
                c_mult=new.multiplier,
                nis_counter=new.no_improvement,
                best_solution_shaped=new.best_genome,
                best_fitness_shaped=-new.best_fitness,
            )
        elif step > 1:
            # evosax averages the improvements among the |S| selected: all of them here
            assert int(jnp.sum(fitness > state.best_fitness)) <= p.n_selected
            candidates = jnp.concatenate([state.best_genome[None], x])
            values = jnp.concatenate([state.best_fitness[None], fitness])
            with jax.numpy_rank_promotion("allow"):
                their_state, _ = theirs.tell(tell_key, candidates, -values, their_state, params)
            err = f"generation {step}"
            np.testing.assert_allclose(new.mean, their_state.mean, RTOL, ATOL, err_msg=err)
            np.testing.assert_allclose(cov_of(new), their_state.C, 1e-4, 1e-6, err_msg=err)
            np.testing.assert_allclose(new.shift, their_state.mean_shift, 1e-4, 1e-6, err_msg=err)
            np.testing.assert_allclose(new.multiplier, their_state.c_mult, 1e-6, err_msg=err)
            assert int(new.no_improvement) == int(their_state.nis_counter), err
            multipliers.add(round(float(new.multiplier), 4))
            stretches.add(int(new.no_improvement))
        state = new
    return multipliers, stretches


def test_matches_evosax_given_the_papers_sdr_and_elitism():
    """Mean, covariance, mean shift, ``c_mult`` and ``NIS`` agree for seven generations (two
    seeds, in which ``c_mult`` grows and shrinks and ``NIS`` counts). Without the paper's SDR,
    evosax's ``c_mult`` parts from the paper's in the fifth generation of seed 2."""
    ours = IAMaLGaMFull(pop_size=15, init_std=0.5)  # n = 16, |S| = 5
    patched = paper_sdr(evosax.iAMaLGaM_Full, lower_whiten)
    multipliers, stretches = set(), set()
    for seed in (0, 2):
        c_mult, nis = compare_with_evosax(ours, patched, 8, lambda s: s.cov, seed)
        multipliers, stretches = multipliers | c_mult, stretches | nis
    assert {1.0, 1.1111, 1.2346} <= multipliers and max(stretches) > 0, (multipliers, stretches)
    with pytest.raises(AssertionError, match="generation 5"):
        compare_with_evosax(ours, evosax.iAMaLGaM_Full, 8, lambda s: s.cov, 2)


def test_evosax_departs_from_the_paper():
    dim, pop = 2, 20_000
    cov = jnp.array([[1.0, 0.6], [0.6, 4.0]])
    with jax.numpy_rank_promotion("allow"):
        theirs = evosax.iAMaLGaM_Full(population_size=pop, solution=jnp.zeros(dim))
        params = theirs.default_params
        their_state = theirs.init(jax.random.key(0), jnp.zeros(dim), params)
        # 1: the samples' covariance is C + I whatever c_mult, not c_mult C
        their_state = their_state.replace(C=cov, c_mult=4.0)
        x, _ = theirs.ask(jax.random.key(1), their_state, params)
    np.testing.assert_allclose(np.cov(np.asarray(x).T), cov + jnp.eye(dim), rtol=0.05, atol=0.05)
    ours = IAMaLGaMFull(pop_size=pop)
    state = ours.init(jax.random.key(0), jnp.zeros(dim))
    state = state.replace(cov=cov, cholesky=jnp.linalg.cholesky(cov), multiplier=jnp.float32(4))
    x, _ = ours.ask(jax.random.key(1), state)
    np.testing.assert_allclose(np.cov(np.asarray(x).T), 4 * cov, rtol=0.05, atol=0.05)

    # 2: evosax whitens with the upper Cholesky factor and ignores c_mult
    d = jnp.array([1.0, 1.5])
    mask, elites = jnp.array([True, False]), jnp.stack([d, -d])
    theirs_sdr = float(theirs.standard_deviation_ratio(mask, elites, cov, jnp.zeros(dim)))
    upper = np.linalg.cholesky(np.asarray(cov)).T
    assert theirs_sdr == pytest.approx(np.abs(np.linalg.solve(upper, d)).max(), rel=1e-6)
    paper = np.abs(np.linalg.solve(2 * np.linalg.cholesky(np.asarray(cov)), d)).max()
    assert paper == pytest.approx(0.5) and theirs_sdr == pytest.approx(0.786, abs=1e-3)

    # 3: AMS moves (pop - 1) / 2 samples at evosax's tau = 0.5, the paper floor(tau n / 2)
    with jax.numpy_rank_promotion("allow"):
        small = evosax.iAMaLGaM_Full(population_size=16, solution=jnp.zeros(dim))
    assert small.ams_population_size == 7
    assert IAMaLGaMFull(pop_size=15).parameters(dim).n_ams == 2  # n = 16

    # 5: no focus on the best while c_mult < 1: evosax's mean stays the selection's average
    ours = IAMaLGaMFull(pop_size=15, elitist=False, selection_ratio=0.5)
    state = ours.init(jax.random.key(0), jnp.zeros(dim))
    state = state.replace(
        estimates=jnp.asarray(9, jnp.int32),
        no_improvement=jnp.asarray(40, jnp.int32),  # past NIS_MAX = 27
        multiplier=jnp.float32(0.9),
        best_fitness=jnp.float32(0.0),
    )
    x, _ = ours.ask(jax.random.key(2), state)
    fitness = -1.0 - jnp.sum((x - 1.0) ** 2, axis=1)  # no improvement: c_mult -> 0.81
    new, _ = ours.tell(jax.random.key(3), state, x, fitness)
    with jax.numpy_rank_promotion("allow"):
        theirs = evosax.iAMaLGaM_Full(population_size=15, solution=jnp.zeros(dim))
        params = theirs.default_params.replace(nis_max_gens=27)
        their_state = theirs.init(jax.random.key(0), jnp.zeros(dim), params)
        their_state = their_state.replace(
            C=jnp.eye(dim), c_mult=0.9, nis_counter=40, best_fitness_shaped=0.0
        )
        their_state, _ = theirs.tell(jax.random.key(3), x, -fitness, their_state, params)
    assert float(new.multiplier) == pytest.approx(0.81) == float(their_state.c_mult)
    best = np.argsort(-np.asarray(fitness))
    np.testing.assert_allclose(new.mean, x[best[0]])
    np.testing.assert_allclose(their_state.mean, np.mean(np.asarray(x)[best[:7]], axis=0), 1e-5)

    # 6: the first tell: evosax blends from C = I and starts the shift, the paper does not
    ours = IAMaLGaMFull(pop_size=16, elitist=False, selection_ratio=0.5)  # |S| = 8, as evosax
    state = ours.init(jax.random.key(0), jnp.ones(dim))
    x, _ = ours.ask(jax.random.key(4), state)
    fitness = -jnp.sum(x**2, axis=1)
    new, _ = ours.tell(jax.random.key(5), state, x, fitness)
    with jax.numpy_rank_promotion("allow"):
        theirs = evosax.iAMaLGaM_Full(population_size=16, solution=jnp.zeros(dim))
        params = theirs.default_params
        their_state = theirs.init(jax.random.key(0), jnp.ones(dim), params)
        their_state, _ = theirs.tell(jax.random.key(5), x, -fitness, their_state, params)
    np.testing.assert_allclose(new.mean, their_state.mean, 1e-6)
    selected = np.asarray(x)[np.argsort(-np.asarray(fitness))[:8]]
    estimate = np.cov(selected.T, bias=True)
    eta = float(params.eta_std)
    blended = (1 - eta) * np.eye(dim) + eta * estimate
    np.testing.assert_allclose(their_state.C, blended, 1e-5, 1e-6)
    np.testing.assert_allclose(new.cov, np.diag(np.diag(estimate)), 1e-5, 1e-7)
    eta_shift = float(params.eta_shift)
    np.testing.assert_allclose(their_state.mean_shift, eta_shift * (new.mean - 1.0), 1e-5, 1e-6)
    np.testing.assert_array_equal(new.shift, np.zeros(dim))


def test_bbob_sphere_against_evosax():
    """f1 (sphere), d = 10, the paper's n = 31 for both (evolax 30 samples and the elite),
    400 generations, seeds 0-1: evolax reaches f - f* < 1e-8 (measured 1.6e-15 and 2.2e-16);
    evosax, whose samples keep a variance above 1 (item 1), stalls above 0.5 (measured 1.8 and
    2.3)."""
    dim = 10
    problem = bbob_problem(1, dim)
    run = jax.jit(best_after, static_argnums=(0, 2))
    for seed in range(2):
        key = jax.random.key(seed)
        ours = float(run(IAMaLGaMFull(pop_size=default_pop_size(dim)), problem, 400, key))
        with jax.numpy_rank_promotion("allow"):
            theirs = evosax.iAMaLGaM_Full(population_size=31, solution=jnp.zeros(dim))
            theirs = float(run(theirs, problem, 400, key, theirs.default_params))
        assert ours < 1e-8 and theirs > 0.5, (seed, ours, theirs)
