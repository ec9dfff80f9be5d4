"""ZDT, DTLZ and WFG: their Pareto-optimal sets map onto the published fronts, points off them are
dominated, and each true front sampled by ``pareto_front`` satisfies its closed form; pymoo's
values at random points in test_pareto_pymoo.py (slow)."""

from fractions import Fraction
from math import floor

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.problems.multiobjective import (
    MULTIOBJECTIVE_PROBLEMS,
    dtlz1,
    dtlz2,
    pareto_front,
    zdt1,
    zdt2,
    zdt3,
)

N = 30


def optimal(name, x1, n=N, m=2):
    """Pareto-optimal inputs: position variables ``x1``, the rest at their optimum."""
    rest = 0.5 if name.startswith("dtlz") else 0.0
    return jnp.concatenate([x1, jnp.full((*x1.shape[:-1], n - x1.shape[-1]), rest)], axis=-1)


@pytest.mark.parametrize(
    ("problem", "curve"),
    [(zdt1, lambda f1: 1 - np.sqrt(f1)), (zdt2, lambda f1: 1 - f1**2)],
)
def test_zdt_optima_lie_on_the_front(problem, curve):
    x1 = jnp.linspace(0.0, 1.0, 11)[:, None]
    f = np.asarray(problem(optimal("zdt", x1)))
    np.testing.assert_allclose(f[:, 0], np.asarray(x1[:, 0]), atol=1e-6)
    np.testing.assert_allclose(f[:, 1], curve(f[:, 0]), atol=1e-6)
    # any other tail raises g, so f2 rises at the same f1
    worse = np.asarray(problem(optimal("zdt", x1).at[:, 5].set(0.3)))
    assert np.all(worse[:, 1] > f[:, 1])


def test_dtlz_optima_lie_on_plane_and_sphere():
    x = jax.random.uniform(jax.random.key(0), (50, 2))
    plane = dtlz1(optimal("dtlz", x, n=7, m=3))
    np.testing.assert_allclose(np.asarray(plane).sum(-1), 0.5, atol=1e-6)
    sphere = dtlz2(optimal("dtlz", x, n=12, m=3))
    np.testing.assert_allclose(np.linalg.norm(np.asarray(sphere), axis=-1), 1.0, atol=1e-6)
    assert dtlz2(jnp.zeros((4, 9)), n_objectives=5).shape == (4, 5)


@pytest.mark.parametrize(
    "name",
    [
        n
        for n in MULTIOBJECTIVE_PROBLEMS
        if n[:3] == "zdt" or n in ("dtlz1", "dtlz2", "dtlz3", "dtlz4")
    ],
)
def test_sampled_fronts_satisfy_their_closed_forms(name):
    front = pareto_front(name, 200, n_objectives=3)
    if name in ("zdt1", "zdt4"):
        np.testing.assert_allclose(front[:, 1], 1 - np.sqrt(front[:, 0]))
    elif name in ("zdt2", "zdt6"):
        np.testing.assert_allclose(front[:, 1], 1 - front[:, 0] ** 2)
    elif name == "zdt3":
        assert 30 < len(front) < 200  # the dominated parts of the curve are gone
        on_curve = zdt3(optimal("zdt", jnp.asarray(front[:, :1])))
        np.testing.assert_allclose(np.asarray(on_curve), front, atol=1e-5)
    elif name == "dtlz1":
        assert front.shape[1] == 3 and len(front) >= 200
        np.testing.assert_allclose(front.sum(-1), 0.5)
    else:
        np.testing.assert_allclose(np.linalg.norm(front, axis=-1), 1.0)


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("name", ["dtlz5", "dtlz7"] + [f"wfg{i}" for i in range(1, 10)])
def test_new_fronts_satisfy_their_closed_forms(name, m):
    """DTLZ5's curve, DTLZ7's ``f_m = 2m - sum f_i (1 + sin 3 pi f_i)``; WFG's ``f_j = 2j h_j``
    with WFG1's convex and mixed shapes, WFG2's convex (disconnected: some points dropped),
    WFG3's line (``sum h_j = 1``), WFG4-9's sphere."""
    front = pareto_front(name, 300, n_objectives=m)
    assert front.shape[1] == m and len(front) > 30
    h = front / (2.0 * np.arange(1, m + 1))
    if name == "dtlz5":
        np.testing.assert_allclose(np.linalg.norm(front, axis=-1), 1.0)
        if m == 3:
            np.testing.assert_allclose(front[:, 0], front[:, 1], atol=1e-12)
    elif name == "dtlz7":
        rest = np.sum(front[:, :-1] * (1 + np.sin(3 * np.pi * front[:, :-1])), axis=1)
        np.testing.assert_allclose(front[:, -1], 2 * m - rest)
        assert len(front) < 300  # dominated pieces dropped
    elif name in ("wfg1", "wfg2") and m == 2:
        x = np.arccos(1 - h[:, 0]) * 2 / np.pi  # h_1 = 1 - cos(x pi / 2)
        last = 1 - x - np.cos(10 * np.pi * x + np.pi / 2) / (10 * np.pi)
        if name == "wfg2":
            last = 1 - x * np.cos(5 * np.pi * x) ** 2
            assert len(front) < 300
        np.testing.assert_allclose(h[:, 1], last, atol=1e-9)
    elif name == "wfg3":
        np.testing.assert_allclose(h.sum(-1), 1.0)
    elif name not in ("wfg1", "wfg2"):
        np.testing.assert_allclose(np.linalg.norm(h, axis=-1), 1.0)


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(ValueError, match=r"^zdt1: x must have shape \(\.\.\., n\) with n >= 2"):
        zdt1(jnp.zeros(1))
    with pytest.raises(ValueError, match=r"^n_objectives must be at least 2, got 1$"):
        dtlz2(jnp.zeros(5), n_objectives=1)
    with pytest.raises(ValueError, match=r"^name must be one of \["):
        pareto_front("zdt5")


def test_wfg_flat_bias_keeps_float32_accuracy_near_zero():
    """WFG's ``b_flat(y, 0.8, 0.75, 0.85)`` in float32 against the paper's formula in float64,
    down to ``y = 1e-12``: its cancelling form (``a + min(0, floor(y - b)) a (b - y) / b``) is
    off by ~1e-8 absolute at 0, which WFG1's ``y^0.02`` next makes ~0.7."""
    from evolax.problems.wfg import _bias_flat

    y = np.concatenate([np.logspace(-12, -1, 23), np.linspace(0.1, 1.0, 37)]).astype(np.float32)
    a, b, c = Fraction(4, 5), Fraction(3, 4), Fraction(17, 20)

    def published(v):  # exactly, in rationals
        v = Fraction(float(v))
        return float(
            a
            + min(0, floor(v - b)) * a * (b - v) / b
            - min(0, floor(c - v)) * (1 - a) * (v - c) / (1 - c)
        )

    ours = np.asarray(_bias_flat(jnp.asarray(y), 0.8, 0.75, 0.85), np.float64)
    np.testing.assert_allclose(ours, [published(v) for v in y], rtol=1e-6)
    assert _bias_flat(jnp.zeros(1, jnp.float32), 0.8, 0.75, 0.85)[0] == 0.0
