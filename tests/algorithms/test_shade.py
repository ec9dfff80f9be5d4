"""SHADE against a float64 numpy transcription of Tanabe & Fukunaga (2013) fed the same random
numbers (the JADE pieces it shares come from test_jade), and on a shifted ellipsoid."""

import numpy as np
import pytest
from test_jade import np_cauchy, run_against_numpy, shifted_ellipsoid

from evolax.algorithms.de.shade import SHADE
from helpers import solve


def shade_parameters(algo, params, d):
    """r_i uniform in {0 .. H-1}; CR_i ~ N(M_CR[r_i], 0.1) clipped; F_i ~ Cauchy(M_F[r_i], 0.1)
    (> 0, <= 1); p_i ~ U[2 / NP, 0.2]; x_pbest among the top ceil(p_i NP)."""
    M_F, M_CR, _ = params
    H, NP = algo.memory_size, algo.pop_size
    r = np.minimum(np.floor(d.extra_u[:, 0] * H).astype(int), H - 1)
    p_min = 2 / NP
    p = p_min + d.extra_u[:, 1] * (max(algo.p_max, p_min) - p_min)
    n_best = np.clip(np.ceil(p * NP), 1, NP).astype(int)
    return np_cauchy(M_F[r], d.f_u), np.clip(M_CR[r] + 0.1 * d.cr_z, 0, 1), n_best


def shade_adapt(algo, params, F, CR, success, improvement):
    """If S is not empty: w_k = Delta f_k / sum Delta f, M_CR[k] = mean_WA(S_CR) =
    sum w S_CR, M_F[k] = mean_WL(S_F) = sum w S_F^2 / sum w S_F, k <- k + 1 (mod H)."""
    M_F, M_CR, k = (np.array(params[0]), np.array(params[1]), params[2])
    if success.any():
        w = improvement[success] / np.sum(improvement[success])
        S_F, S_CR = F[success], CR[success]
        M_CR[k] = np.sum(w * S_CR)
        M_F[k] = np.sum(w * S_F**2) / np.sum(w * S_F)
        k = (k + 1) % algo.memory_size
    return M_F, M_CR, k


shade_adapt.initial = lambda algo: (
    np.full(algo.memory_size, 0.5),
    np.full(algo.memory_size, 0.5),
    0,
)


def compare(state, params):
    np.testing.assert_allclose(state.memory_F, params[0], rtol=1e-5)
    np.testing.assert_allclose(state.memory_CR, params[1], rtol=1e-5)
    assert int(state.memory_index) == params[2]


shade_adapt.compare = compare


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param(dict(memory_size=3), marks=pytest.mark.slow),  # nox -s slow
        pytest.param(dict(memory_size=100, archive=False, p_max=0.4), marks=pytest.mark.slow),
    ],
)
def test_generations_match_a_numpy_transcription_of_the_paper(kwargs):
    """NP = 20 so p_i spans [0.1, p_max] (x_pbest among the top 2-4, or 2-8); H = 3 wraps."""
    algo = SHADE(pop_size=20, **kwargs)
    largest, state = run_against_numpy(algo, shade_parameters, shade_adapt, gens=8, pop=20)
    if algo.archive:
        assert largest == 20  # the archive filled up and was thinned at random
    assert np.any(np.asarray(state.memory_F) != 0.5)


def test_solves_a_10d_ellipsoid():
    """D = 10, NP = 30, init_std = 3, defaults otherwise (H = 100), 3 seeds: f < 1e-6 within
    400 generations (12,000 evaluations)."""
    best = solve(SHADE(pop_size=30, init_std=3.0), shifted_ellipsoid, 10, 400)
    assert np.all(-best < 1e-6), -best


def test_small_populations_use_p_equal_to_2_over_np():
    from evolax.algorithms.de.shade import p_range

    assert p_range(8, 0.2) == (0.25, 0.25)
    assert float(p_range(100, 0.2)[1]) == pytest.approx(0.2)
