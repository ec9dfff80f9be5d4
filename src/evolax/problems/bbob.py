"""The 24 noiseless BBOB functions in pure JAX, matching COCO's ``bbob`` suite instance by instance.

Hansen, Finck, Ros & Auger (2009), "Real-Parameter Black-Box Optimization Benchmarking 2009:
Noiseless Functions Definitions", INRIA RR-6829, as implemented in the COCO platform
(https://github.com/numbbo/coco, ``code-experiments/src/f_*.c``; checked against
``cocoex`` 2.8.2). Where COCO's code differs from the 2009 report, COCO's code is followed:
f4 takes ``|x_opt|`` in its odd (1-based) coordinates, f5 clips ``x`` at the optimum
(``x_i x_opt_i >= 25``), f12 draws ``x_opt`` from seed ``rseed + 1e6``, f20's ``x_opt``
is COCO's recorded best parameter (``+-4.2096874633 / 2``).

Usage::

    problem = bbob_problem(function_id=15, dim=10, instance=1)   # COCO's bbob_f015_i01_d10
    f = problem(x)               # f32[..., 10] -> f32[...]: COCO's f(x), minimised, f >= f_opt
    fitness = problem.fitness(x) # -(f(x) - f_opt): maximise it with any evolax algorithm

Problems are equinox modules (pytrees): their arrays are leaves, ``function_id`` and ``dim``
are static. Pass a problem as an argument to a jitted function (``jax.jit(lambda p, x:
p(x))``: instances of one function and dimension share the compilation) or close over it
(``jax.jit(lambda x: problem(x))``); ``jax.jit(problem)`` itself fails, as a module with
array fields is not hashable. Instances of one function and dimension can be stacked
(``jax.tree.map(lambda *a: jnp.stack(a), *problems)``) and ``vmap``-ped over.

All instance data (``x_opt``, ``f_opt``, rotations) is computed in float64 numpy at
construction and stored in JAX's default float dtype (float32 unless x64 is enabled).
Evaluation runs in the wider of ``x``'s dtype and the stored dtype, never below float32.

Float32 accuracy, measured against COCO on [-6, 6]^dim and near the optimum, as a fraction
of ``|f - f_opt| + |f_opt| + 1``: ~1e-5 for most functions (up to ~5e-5 for f11 and f17/f18,
where condition numbers up to 1e6 amplify rounding in rotated coordinates), ~1e-3 for
f16 (Weierstrass, frequencies up to 3^11), f19 (cosine of values up to ~1e6) and f23
(Katsuura, frequencies up to 2^32), which amplify the rounding of their internal
coordinates; f7 (step ellipsoid) can land on the other side of a rounding step. Values
beyond float32's range (far outside [-5, 5]^dim) become inf or nan. Build and evaluate
under ``jax.enable_x64(True)`` to match COCO to ~1e-9 relative or better; f19 is then
computed exactly as COCO's C code does (its sums in COCO's order, every product rounded
before it is added) and equals COCO's value to 1e-12 relative, as do the rotations (built
with COCO's loops and the C library's ``log`` and ``cos``).
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.problems.bbob_instances import (
    instance_seed,
    legacy_fopt,
    legacy_gauss,
    legacy_rotation,
    legacy_uniform,
    legacy_xopt,
)

__all__ = [
    "BBOB_DIMENSIONS",
    "BBOB_FUNCTION_NAMES",
    "BBOBProblem",
    "bbob_problem",
    "bbob_suite",
]

BBOB_DIMENSIONS = (2, 3, 5, 10, 20, 40)
"""The dimensions of COCO's ``bbob`` suite (any ``dim >= 2`` works here)."""

BBOB_FUNCTION_NAMES = {
    1: "sphere",
    2: "separable ellipsoid",
    3: "separable Rastrigin",
    4: "Bueche-Rastrigin",
    5: "linear slope",
    6: "attractive sector",
    7: "step ellipsoid",
    8: "Rosenbrock",
    9: "rotated Rosenbrock",
    10: "ellipsoid",
    11: "discus",
    12: "bent cigar",
    13: "sharp ridge",
    14: "different powers",
    15: "Rastrigin",
    16: "Weierstrass",
    17: "Schaffer F7, condition 10",
    18: "Schaffer F7, condition 1000",
    19: "composite Griewank-Rosenbrock F8F2",
    20: "Schwefel x sin(sqrt(|x|))",
    21: "Gallagher 101 peaks",
    22: "Gallagher 21 peaks",
    23: "Katsuura",
    24: "Lunacek bi-Rastrigin",
}
"""Function id -> name, as in Hansen et al. (2009)."""

_ROTATION_OFFSET = 1000000  # COCO's second rotation (and f12's x_opt) use rseed + 1e6
_SCHWEFEL_XOPT = 4.2096874637  # 2 |x_opt| of f20 in COCO's transformation chain
_SCHWEFEL_BEST = 4.2096874633  # 2 |x_opt| of f20 as COCO records its best parameter


class BBOBProblem(eqx.Module):
    """One instance of a noiseless BBOB function (Hansen et al. 2009), as COCO defines it.

    Build it with :func:`bbob_problem`. Calling it gives COCO's (minimised) value.

    Attributes:
        function_id: 1..24 (static).
        dim: the search-space dimension (static).
        instance: COCO's instance number (``int32`` scalar array, so that instances of one
            function and dimension share a tree structure and can be stacked).
        x_opt: ``[dim]``, the global minimiser as COCO records it (f5: the corner of
            ``[-5, 5]^dim`` where the slope is lowest, as f5 is flat beyond it).
        f_opt: scalar, the optimal value, ``min f``.
        params: the instance's transformation data (rotations, shifts, weights).
    """

    function_id: int = eqx.field(static=True)
    dim: int = eqx.field(static=True)
    instance: Int[Array, ""]
    x_opt: Float[Array, " dim"]
    f_opt: Float[Array, ""]
    params: dict[str, Array]

    lower_bound = -5.0
    """COCO's region of interest is ``[-5, 5]^dim`` (the optimum is inside)."""
    upper_bound = 5.0

    @property
    def name(self) -> str:
        """The function's name, e.g. ``"Rastrigin"``."""
        return BBOB_FUNCTION_NAMES[self.function_id]

    def __call__(self, x: Float[Array, "... dim"]) -> Float[Array, "..."]:
        """COCO's value ``f(x)`` (minimised; ``f(x_opt) = f_opt``).

        Args:
            x: ``[..., dim]``, any leading batch shape.
        Returns:
            ``[...]``.
        """
        delta = self.delta_f(x)
        return delta + self.f_opt.astype(delta.dtype)

    def delta_f(self, x: Float[Array, "... dim"]) -> Float[Array, "..."]:
        """``f(x) - f_opt``, computed without adding ``f_opt`` (no cancellation near the optimum).

        Args:
            x: ``[..., dim]``.
        Returns:
            ``[...]``, non-negative (up to rounding).
        """
        x = jnp.asarray(x)
        if x.ndim == 0 or x.shape[-1] != self.dim:
            raise ValueError(f"x must have shape (..., {self.dim}), got {x.shape}")
        dtype = jnp.promote_types(x.dtype, self.x_opt.dtype)  # at least the stored float
        params = {k: v.astype(dtype) for k, v in self.params.items()}
        flat = x.reshape(-1, self.dim).astype(dtype)
        evaluate = _EVALUATORS[self.function_id]
        values = jax.vmap(lambda v: evaluate(params, v))(flat)
        return values.reshape(x.shape[:-1])

    def fitness(self, x: Float[Array, "... dim"]) -> Float[Array, "..."]:
        """Fitness to maximise: ``-(f(x) - f_opt)``, 0 at the optimum, negative elsewhere.

        Args:
            x: ``[..., dim]``.
        Returns:
            ``[...]``.
        """
        return -self.delta_f(x)


def bbob_problem(function_id: int, dim: int, instance: int = 1) -> BBOBProblem:
    """Build COCO's ``bbob`` problem ``f{function_id}``, instance ``instance``, in ``dim`` D.

    Matches ``cocoex.Suite("bbob", "instances:I", "function_indices:F dimensions:D")``:
    ``instance`` is COCO's instance number (seed ``function_id + 10000 * instance``, f4 and
    f18 borrow f3's and f17's seeds), not a position in a year's instance list.

    Args:
        function_id: 1..24 (:data:`BBOB_FUNCTION_NAMES`).
        dim: dimension, ``>= 2``. COCO's suite has 2, 3, 5, 10, 20 and 40; other dimensions
            follow the same definitions (COCO's legacy code itself stops at 44).
        instance: COCO instance number, ``>= 1`` (the 2009 instances are 1..15; later
            workshops use 1..5 plus 21..30, 31..40, ..., 101..110).
    Returns:
        The problem (arrays in JAX's default float dtype).
    """
    _check_int("function_id", function_id, 1, "an integer in 1..24")
    if function_id > 24:
        raise ValueError(f"function_id must be an integer in 1..24, got {function_id!r}")
    _check_int("dim", dim, 2, "an integer >= 2 (BBOB functions need two coordinates)")
    _check_int("instance", instance, 1, "a COCO instance number, an integer >= 1")
    function_id, dim, instance = int(function_id), int(dim), int(instance)
    params, x_opt = _BUILDERS[function_id](dim, instance_seed(function_id, instance))
    return BBOBProblem(
        function_id=function_id,
        dim=dim,
        instance=jnp.asarray(instance, jnp.int32),
        x_opt=jnp.asarray(x_opt),
        f_opt=jnp.asarray(np.float64(legacy_fopt(function_id, instance))),
        params={k: jnp.asarray(v) for k, v in params.items()},
    )


def bbob_suite(dim: int, instance: int = 1) -> list[BBOBProblem]:
    """All 24 functions of one instance and dimension, ``[bbob_problem(f, dim, instance)]``."""
    return [bbob_problem(f, dim, instance) for f in range(1, 25)]


def _check_int(name: str, value: object, minimum: int, expected: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be {expected}, got {value!r}")


# --------------------------------------------------------------------------------------
# Instance data (numpy, float64): each builder returns (params, x_opt) from (dim, rseed).

_Params = dict[str, np.ndarray]


def _ramp(dim: int) -> np.ndarray:
    """``i / (dim - 1)`` for ``i = 0 .. dim - 1``: the exponent of every BBOB conditioning."""
    return np.arange(dim) / (dim - 1.0)


def _rotated_conditioning(dim: int, seed: int, base: float) -> np.ndarray:
    """``Q diag(base^ramp) R`` with ``Q, R`` the rotations of seeds ``seed + 1e6`` and ``seed``."""
    q = legacy_rotation(dim, seed + _ROTATION_OFFSET)
    r = legacy_rotation(dim, seed)
    return (q * base ** _ramp(dim)[None]) @ r


def _build_shifted(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    xopt = legacy_xopt(dim, seed)
    return {"xopt": xopt}, xopt


def _build_ellipsoid(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    xopt = legacy_xopt(dim, seed)
    return {"xopt": xopt, "weights": 1e6 ** _ramp(dim)}, xopt


def _build_rastrigin(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    xopt = legacy_xopt(dim, seed)
    return {"xopt": xopt, "scales": 10.0 ** (0.5 * _ramp(dim)), "beta": 0.2 * _ramp(dim)}, xopt


def _build_bueche_rastrigin(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    xopt = legacy_xopt(dim, seed)
    xopt[::2] = np.abs(xopt[::2])  # in COCO's (and the 2009 C) code, not in the report
    even = (np.arange(dim) % 2 == 0).astype(np.float64)
    return {"xopt": xopt, "scales": np.sqrt(10.0) ** _ramp(dim), "even": even}, xopt


def _build_linear_slope(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    corner = np.where(legacy_xopt(dim, seed) < 0.0, -5.0, 5.0)
    slopes = np.sign(corner) * np.sqrt(100.0) ** _ramp(dim)
    return {"corner": corner, "slopes": slopes}, corner


def _build_attractive_sector(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    xopt = legacy_xopt(dim, seed)
    return {"xopt": xopt, "matrix": _rotated_conditioning(dim, seed, np.sqrt(10.0))}, xopt


def _build_step_ellipsoid(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    xopt = legacy_xopt(dim, seed)
    inner = np.sqrt(10.0 ** _ramp(dim))[:, None] * legacy_rotation(dim, seed)
    outer = legacy_rotation(dim, seed + _ROTATION_OFFSET)
    params = {"xopt": xopt, "inner": inner, "outer": outer, "weights": 100.0 ** _ramp(dim)}
    return params, xopt


def _build_rosenbrock(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    xopt = 0.75 * legacy_xopt(dim, seed)
    return {"xopt": xopt, "factor": np.asarray(max(1.0, np.sqrt(dim) / 8.0))}, xopt


def _build_rotated_rosenbrock(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    """z = factor R x + 1/2; z = 1 at x = R^T 1 / (2 factor). Also f19's transformation.

    (COCO records ``R^T 1 / 2`` as f19's best parameter, which differs once ``factor > 1``,
    i.e. for ``dim > 64``, beyond COCO's dimensions.)
    """
    factor = max(1.0, np.sqrt(dim) / 8.0)
    rotation = legacy_rotation(dim, seed)
    return {"matrix": factor * rotation}, rotation.sum(axis=0) / (2.0 * factor)


def _build_rotated(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    xopt = legacy_xopt(dim, seed)
    return {"xopt": xopt, "rotation": legacy_rotation(dim, seed + _ROTATION_OFFSET)}, xopt


def _build_rotated_ellipsoid(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    params, xopt = _build_rotated(dim, seed)
    return {**params, "weights": 1e6 ** _ramp(dim)}, xopt


def _build_bent_cigar(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    xopt = legacy_xopt(dim, seed + _ROTATION_OFFSET)  # COCO: not the usual seed
    rotation = legacy_rotation(dim, seed + _ROTATION_OFFSET)
    return {"xopt": xopt, "rotation": rotation, "beta": 0.5 * _ramp(dim)}, xopt


def _build_sharp_ridge(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    return _build_attractive_sector(dim, seed)


def _build_different_powers(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    params, xopt = _build_rotated(dim, seed)
    return {**params, "powers": 2.0 + 4.0 * _ramp(dim)}, xopt


def _build_rotated_rastrigin(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    params, xopt = _build_rotated(dim, seed)
    params["matrix"] = _rotated_conditioning(dim, seed, np.sqrt(10.0))
    params["beta"] = 0.2 * _ramp(dim)
    return params, xopt


def _build_weierstrass(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    params, xopt = _build_rotated(dim, seed)
    params["matrix"] = _rotated_conditioning(dim, seed, 1.0 / np.sqrt(100.0))
    k = np.arange(12.0)
    params["amplitudes"] = 0.5**k
    params["frequencies"] = 3.0**k
    params["f0"] = np.asarray(np.sum(0.5**k * np.cos(2.0 * np.pi * 3.0**k * 0.5)))
    return params, xopt


def _build_schaffers(condition: float) -> Callable[[int, int], tuple[_Params, np.ndarray]]:
    def build(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
        params, xopt = _build_rotated(dim, seed)
        scales = np.sqrt(condition) ** _ramp(dim)
        params["matrix"] = scales[:, None] * legacy_rotation(dim, seed)
        params["beta"] = 0.5 * _ramp(dim)
        return params, xopt

    return build


def _build_schwefel(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    signs = np.where(legacy_uniform(dim, seed) < 0.5, -1.0, 1.0)
    params = {"signs": signs, "scales": np.sqrt(10.0) ** _ramp(dim)}
    return params, signs * 0.5 * _SCHWEFEL_BEST


def _build_gallagher(peaks: int) -> Callable[[int, int], tuple[_Params, np.ndarray]]:
    """Peaks ``y_i`` (the first at ``x_opt``), heights ``w_i`` and conditionings ``C_i``."""
    max_condition = 1000.0
    first_condition, b, c = (
        (np.sqrt(max_condition), 10.0, 5.0) if peaks == 101 else (max_condition, 9.8, 4.9)
    )

    def build(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
        rotation = legacy_rotation(dim, seed)
        order = np.argsort(legacy_uniform(peaks - 1, seed), kind="stable")
        conditions = np.concatenate([[first_condition], max_condition ** (order / (peaks - 2.0))])
        heights = np.concatenate([[10.0], 1.1 + 8.0 * np.arange(peaks - 1) / (peaks - 2.0)])
        scales = np.empty((peaks, dim))
        for i in range(peaks):
            axis_order = np.argsort(legacy_uniform(dim, seed + 1000 * i), kind="stable")
            scales[i] = conditions[i] ** (axis_order / (dim - 1.0) - 0.5)
        uniform = legacy_uniform(dim * peaks, seed)
        xopt = 0.8 * (b * uniform[:dim] - c)
        centres = (b * uniform.reshape(peaks, dim) - c) @ rotation.T  # [peak, dim], rotated
        centres[0] *= 0.8
        params = {"rotation": rotation, "centres": centres, "scales": scales, "heights": heights}
        return params, xopt

    return build


def _build_katsuura(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    xopt = legacy_xopt(dim, seed)
    return {"xopt": xopt, "matrix": _rotated_conditioning(dim, seed, np.sqrt(100.0))}, xopt


def _build_lunacek(dim: int, seed: int) -> tuple[_Params, np.ndarray]:
    signs = np.where(legacy_gauss(dim, seed) < 0.0, -1.0, 1.0)
    params = {"signs": signs, "matrix": _rotated_conditioning(dim, seed, np.sqrt(100.0))}
    return params, 1.25 * signs


_BUILDERS: dict[int, Callable[[int, int], tuple[_Params, np.ndarray]]] = {
    1: _build_shifted,
    2: _build_ellipsoid,
    3: _build_rastrigin,
    4: _build_bueche_rastrigin,
    5: _build_linear_slope,
    6: _build_attractive_sector,
    7: _build_step_ellipsoid,
    8: _build_rosenbrock,
    9: _build_rotated_rosenbrock,
    10: _build_rotated_ellipsoid,
    11: _build_rotated,
    12: _build_bent_cigar,
    13: _build_sharp_ridge,
    14: _build_different_powers,
    15: _build_rotated_rastrigin,
    16: _build_weierstrass,
    17: _build_schaffers(10.0),
    18: _build_schaffers(1000.0),
    19: _build_rotated_rosenbrock,
    20: _build_schwefel,
    21: _build_gallagher(101),
    22: _build_gallagher(21),
    23: _build_katsuura,
    24: _build_lunacek,
}


# --------------------------------------------------------------------------------------
# Evaluation (JAX): each evaluator maps (params, x[dim]) to f(x) - f_opt.

_Evaluator = Callable[[dict[str, Array], Array], Array]


def _matvec(matrix: Array, x: Array) -> Array:
    return jnp.dot(matrix, x, precision=jax.lax.Precision.HIGHEST)


def _oscillate(x: Array) -> Array:
    """T_osz (Hansen et al. 2009, sec. 0.2), elementwise.

    ``sign(x) exp(x^ + 0.049 (sin(c1 x^) + sin(c2 x^)))`` with ``x^ = log|x|``, ``(c1, c2) =
    (10, 7.9)`` for ``x > 0`` and ``(5.5, 3.1)`` for ``x < 0``; 0 at 0. Equal to COCO's
    ``exp(t + 0.49 (sin t + sin 0.79 t))^0.1``, ``t = x^ / 0.1``, without its overflow.
    """
    magnitude = jnp.abs(x)
    nonzero = magnitude > 0
    log_x = jnp.log(jnp.where(nonzero, magnitude, 1.0))
    positive = x > 0
    c1 = jnp.where(positive, 10.0, 5.5).astype(x.dtype)
    c2 = jnp.where(positive, 7.9, 3.1).astype(x.dtype)
    value = jnp.exp(log_x + 0.049 * (jnp.sin(c1 * log_x) + jnp.sin(c2 * log_x)))
    return jnp.where(nonzero, jnp.sign(x) * value, jnp.zeros_like(x))


def _asymmetric(x: Array, beta_ramp: Array) -> Array:
    """T_asy^beta: ``x_i^(1 + beta i/(D-1) sqrt(x_i))`` where ``x_i > 0``, else ``x_i``.

    ``beta_ramp`` is ``beta i / (D - 1)``.
    """
    positive = x > 0
    safe = jnp.where(positive, x, 1.0)
    return jnp.where(positive, jnp.exp((1.0 + beta_ramp * jnp.sqrt(safe)) * jnp.log(safe)), x)


def _boundary_penalty(x: Array) -> Array:
    """f_pen: ``sum max(0, |x_i| - 5)^2``."""
    return jnp.sum(jnp.maximum(jnp.abs(x) - 5.0, 0.0) ** 2)


def _rastrigin(z: Array) -> Array:
    return 10.0 * (z.shape[0] - jnp.sum(jnp.cos(2.0 * jnp.pi * z))) + jnp.sum(z * z)


def _rosenbrock(z: Array) -> Array:
    return 100.0 * jnp.sum((z[:-1] ** 2 - z[1:]) ** 2) + jnp.sum((z[:-1] - 1.0) ** 2)


def _schaffer_f7(z: Array) -> Array:
    s = z[:-1] ** 2 + z[1:] ** 2
    terms = s**0.25 * (1.0 + jnp.sin(50.0 * s**0.1) ** 2)
    return (jnp.sum(terms) / (z.shape[0] - 1.0)) ** 2


def _f1(p, x):
    return jnp.sum((x - p["xopt"]) ** 2)


def _f2(p, x):
    z = _oscillate(x - p["xopt"])
    return jnp.sum(p["weights"] * z * z)


def _f3(p, x):
    z = p["scales"] * _asymmetric(_oscillate(x - p["xopt"]), p["beta"])
    return _rastrigin(z)


def _f4(p, x):
    z = _oscillate(x - p["xopt"])
    z = z * p["scales"] * jnp.where((z > 0) & (p["even"] > 0), 10.0, 1.0).astype(z.dtype)
    return _rastrigin(z) + 100.0 * _boundary_penalty(x)


def _f5(p, x):
    corner = p["corner"]
    z = jnp.where(x * corner < 25.0, x, corner)
    return jnp.sum(5.0 * jnp.abs(p["slopes"]) - p["slopes"] * z)


def _f6(p, x):
    z = _matvec(p["matrix"], x - p["xopt"])
    weights = jnp.where(z * p["xopt"] > 0, 1e4, 1.0).astype(z.dtype)
    return _oscillate(jnp.sum(weights * z * z)) ** 0.9


def _f7(p, x):
    z_hat = _matvec(p["inner"], x - p["xopt"])
    z_tilde = jnp.where(
        jnp.abs(z_hat) > 0.5, jnp.floor(z_hat + 0.5), jnp.floor(10.0 * z_hat + 0.5) / 10.0
    )
    z = _matvec(p["outer"], z_tilde)
    core = jnp.maximum(1e-4 * jnp.abs(z_hat[0]), jnp.sum(p["weights"] * z * z))
    return 0.1 * core + _boundary_penalty(x)


def _f8(p, x):
    return _rosenbrock(p["factor"] * (x - p["xopt"]) + 1.0)


def _f9(p, x):
    return _rosenbrock(_matvec(p["matrix"], x) + 0.5)


def _f10(p, x):
    z = _oscillate(_matvec(p["rotation"], x - p["xopt"]))
    return jnp.sum(p["weights"] * z * z)


def _f11(p, x):
    z = _oscillate(_matvec(p["rotation"], x - p["xopt"]))
    return 1e6 * z[0] ** 2 + jnp.sum(z[1:] ** 2)


def _f12(p, x):
    rotation = p["rotation"]
    z = _matvec(rotation, _asymmetric(_matvec(rotation, x - p["xopt"]), p["beta"]))
    return z[0] ** 2 + 1e6 * jnp.sum(z[1:] ** 2)


def _f13(p, x):
    z = _matvec(p["matrix"], x - p["xopt"])
    return z[0] ** 2 + 100.0 * jnp.sqrt(jnp.sum(z[1:] ** 2))


def _f14(p, x):
    z = _matvec(p["rotation"], x - p["xopt"])
    return jnp.sqrt(jnp.sum(jnp.abs(z) ** p["powers"]))


def _f15(p, x):
    y = _asymmetric(_oscillate(_matvec(p["rotation"], x - p["xopt"])), p["beta"])
    return _rastrigin(_matvec(p["matrix"], y))


def _f16(p, x):
    z = _matvec(p["matrix"], _oscillate(_matvec(p["rotation"], x - p["xopt"])))
    phase = p["frequencies"][None] * (z[:, None] + 0.5)  # [dim, 12], in cycles
    phase = phase - jnp.round(phase)  # cos is 1-periodic in cycles: keep float32 accuracy
    mean = jnp.sum(p["amplitudes"][None] * jnp.cos(2.0 * jnp.pi * phase)) / z.shape[0]
    return 10.0 * (mean - p["f0"]) ** 3 + 10.0 / z.shape[0] * _boundary_penalty(x)


def _f17(p, x):
    y = _asymmetric(_matvec(p["rotation"], x - p["xopt"]), p["beta"])
    return _schaffer_f7(_matvec(p["matrix"], y)) + 10.0 * _boundary_penalty(x)


def _rounded(value: Array) -> Array:
    """``value`` itself, made opaque to XLA's and LLVM's rewrites: a product passed through it
    is rounded before it is added (no fused multiply-add), a divisor is not replaced by the
    multiplication with its rounded reciprocal. C code compiled for plain x86-64, as COCO's
    is, rounds every operation; this lets float64 evaluation do the same."""
    return jnp.where(value == value, value, jnp.nan)


def _in_order_matvec(matrix: Array, x: Array) -> Array:
    """``matrix @ x`` as COCO's ``transform_vars_affine`` sums it: term by term,
    ``(M_i0 x_0 + M_i1 x_1) + M_i2 x_2 + ...``, each product rounded."""
    return jax.lax.fori_loop(
        1, x.shape[0], lambda j, z: z + _rounded(x[j] * matrix[:, j]), _rounded(x[0] * matrix[:, 0])
    )


def _in_order_sum(terms: Array) -> Array:
    """``sum(terms)`` left to right, as COCO's loops add."""
    return jax.lax.fori_loop(1, terms.shape[0], lambda i, total: total + terms[i], terms[0])


def _f19(p, x):
    """In float64 exactly as COCO's C code computes it (``f_griewank_rosenbrock.c``: sums in
    its order, every product and quotient rounded): ``cos`` of values up to ~1e6 turns any
    other rounding's 1e-16 into 1e-9 differences of ``f``."""
    dim = x.shape[0]
    if x.dtype != jnp.float64:
        z = _matvec(p["matrix"], x) + 0.5
        s = 100.0 * (z[:-1] ** 2 - z[1:]) ** 2 + (1.0 - z[:-1]) ** 2
        return 10.0 + 10.0 * jnp.sum(s / 4000.0 - jnp.cos(s)) / (dim - 1.0)
    z = _in_order_matvec(p["matrix"], x) + 0.5
    c1, c2 = _rounded(z[:-1] * z[:-1]) - z[1:], 1.0 - z[:-1]
    s = _rounded(100.0 * c1 * c1) + _rounded(c2 * c2)
    total = _in_order_sum(s / _rounded(jnp.full_like(s, 4000.0)) - jnp.cos(s))
    return 10.0 + _rounded(10.0 * total / _rounded(jnp.asarray(dim - 1.0, x.dtype)))


def _f20(p, x):
    x_hat = 2.0 * p["signs"] * x
    z_hat = jnp.concatenate([x_hat[:1], x_hat[1:] + 0.25 * (x_hat[:-1] - _SCHWEFEL_XOPT)])
    z = 100.0 * (p["scales"] * (z_hat - _SCHWEFEL_XOPT) + _SCHWEFEL_XOPT)
    penalty = jnp.sum(jnp.maximum(jnp.abs(z) - 500.0, 0.0) ** 2)
    mean = jnp.sum(z * jnp.sin(jnp.sqrt(jnp.abs(z)))) / z.shape[0]
    return 0.01 * (penalty + 418.9828872724339 - mean)


def _f21(p, x):
    dim = x.shape[0]
    diff = _matvec(p["rotation"], x)[None] - p["centres"]  # [peak, dim]
    quadratic = jnp.sum(p["scales"] * diff * diff, axis=1)
    best = jnp.maximum(jnp.max(p["heights"] * jnp.exp(-0.5 / dim * quadratic)), 0.0)
    return _oscillate(10.0 - best) ** 2 + _boundary_penalty(x)


def _f23(p, x):
    dim = x.shape[0]
    z = _matvec(p["matrix"], x - p["xopt"])
    powers = 2.0 ** jnp.arange(1, 33, dtype=z.dtype)
    scaled = powers[None] * z[:, None]  # [dim, 32], exact in binary floating point
    # |v - round(v)| is the same for either rounding of ties, so round-half-even is exact here
    sums = jnp.sum(jnp.abs(scaled - jnp.round(scaled)) / powers[None], axis=1)
    log_product = jnp.sum(jnp.log1p(jnp.arange(1, dim + 1, dtype=z.dtype) * sums))
    value = 10.0 / dim**2 * jnp.expm1(10.0 / dim**1.2 * log_product)
    return value + _boundary_penalty(x)


def _f24(p, x):
    dim = x.shape[0]
    mu0, d = 2.5, 1.0
    s = 1.0 - 0.5 / (np.sqrt(dim + 20.0) - 4.1)
    mu1 = -np.sqrt((mu0**2 - d) / s)
    x_hat = 2.0 * p["signs"] * x
    z = _matvec(p["matrix"], x_hat - mu0)
    sphere0 = jnp.sum((x_hat - mu0) ** 2)
    sphere1 = d * dim + s * jnp.sum((x_hat - mu1) ** 2)
    cosines = 10.0 * (dim - jnp.sum(jnp.cos(2.0 * jnp.pi * z)))
    return jnp.minimum(sphere0, sphere1) + cosines + 1e4 * _boundary_penalty(x)


_EVALUATORS: dict[int, _Evaluator] = {
    1: _f1,
    2: _f2,
    3: _f3,
    4: _f4,
    5: _f5,
    6: _f6,
    7: _f7,
    8: _f8,
    9: _f9,
    10: _f10,
    11: _f11,
    12: _f12,
    13: _f13,
    14: _f14,
    15: _f15,
    16: _f16,
    17: _f17,
    18: _f17,
    19: _f19,
    20: _f20,
    21: _f21,
    22: _f21,
    23: _f23,
    24: _f24,
}
