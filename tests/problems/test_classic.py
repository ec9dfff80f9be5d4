"""Classic test functions against loop-by-loop numpy transcriptions of their textbook formulas."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.problems import ellipsoid, rastrigin, rosenbrock, shifted, sphere, to_fitness


def numpy_sphere(x):
    return sum(xi**2 for xi in x)


def numpy_ellipsoid(x, condition):
    n = len(x)
    return sum(condition ** (i / (n - 1)) * x[i] ** 2 for i in range(n))


def numpy_rosenbrock(x):
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(len(x) - 1))


def numpy_rastrigin(x, a=10.0):
    return a * len(x) + sum(xi**2 - a * np.cos(2 * np.pi * xi) for xi in x)


@pytest.mark.parametrize(
    ("function", "reference"),
    [
        (sphere, numpy_sphere),
        (lambda x: ellipsoid(x, condition=1e4), lambda x: numpy_ellipsoid(x, 1e4)),
        (rosenbrock, numpy_rosenbrock),
        (rastrigin, numpy_rastrigin),
        (lambda x: rastrigin(x, amplitude=3.0), lambda x: numpy_rastrigin(x, 3.0)),
    ],
)
def test_matches_the_formula_on_batches(function, reference):
    x = np.random.default_rng(0).uniform(-3, 3, (4, 3, 6)).astype(np.float32)
    values = jax.jit(function)(x)
    assert values.shape == (4, 3) and values.dtype == jnp.float32
    expected = np.array([[reference(row.astype(np.float64)) for row in batch] for batch in x])
    np.testing.assert_allclose(values, expected, rtol=2e-5)
    assert function(x[0, 0]).shape == ()


def test_minima_and_known_values():
    dim = 5
    for function, optimum in [
        (sphere, 0.0),
        (ellipsoid, 0.0),
        (rosenbrock, 1.0),
        (rastrigin, 0.0),
    ]:
        x_opt = jnp.full(dim, optimum)
        assert float(function(x_opt)) == 0.0
        around = x_opt[None] + jax.random.normal(jax.random.key(0), (32, dim))
        assert bool(jnp.all(function(around) > 0.0))
    unit = jnp.eye(dim)
    np.testing.assert_allclose(ellipsoid(unit), np.logspace(0, 6, dim), rtol=1e-5)
    assert float(rosenbrock(jnp.zeros(2))) == 1.0
    assert float(rastrigin(jnp.full(3, 0.5))) == pytest.approx(3 * (10 + 0.25 + 10))
    assert sphere(jnp.arange(3)).dtype == jnp.float32  # integer input is computed in float


def test_shifted_and_to_fitness():
    shift = jnp.array([1.0, -2.0, 0.5])
    objective = shifted(rastrigin, shift)
    fitness = to_fitness(objective)
    assert float(objective(shift)) == 0.0 and float(fitness(shift)) == 0.0
    x = jax.random.normal(jax.random.key(1), (7, 3))
    np.testing.assert_allclose(objective(x), rastrigin(x - shift[None]), rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(fitness)(x), -objective(x), rtol=1e-6)
    assert bool(jnp.all(fitness(x) < 0.0))
    shifted_rosenbrock = shifted(rosenbrock, shift - 1.0)
    assert float(shifted_rosenbrock(shift)) == 0.0
