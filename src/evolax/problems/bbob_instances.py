"""COCO's legacy BBOB-2009 instance generator: random numbers, rotations, x_opt and f_opt.

A numpy (float64, host-side) transcription of the algorithms in COCO's
``suite_bbob_legacy_code.c`` (Hansen, Finck, Ros & Auger 2009, "Real-Parameter Black-Box
Optimization Benchmarking 2009: Noiseless Functions Definitions", INRIA RR-6829, and the
COCO platform, https://github.com/numbbo/coco). Everything here runs once, when a
:class:`~evolax.problems.bbob.BBOBProblem` is built; nothing is traced by JAX.

Seeds: COCO builds function ``f`` of instance ``i`` from ``rseed = f + 10000 * i``, except
f4 (which uses f3's seed, ``3 + 10000 * i``) and f18 (f17's seed, ``17 + 10000 * i``); see
:func:`instance_seed`. The ``instance`` numbers are COCO's own (the ``i`` in the problem id
``bbob_f003_i01_d05``), so ``instance=71`` is the 2018-workshop instance 71.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "instance_seed",
    "legacy_fopt",
    "legacy_gauss",
    "legacy_rotation",
    "legacy_uniform",
    "legacy_xopt",
]

_MODULUS = 2147483647  # 2**31 - 1, Park & Miller's minimal standard generator
_SEED_SHARED_WITH = {4: 3, 18: 17}  # functions that reuse another function's seed


def instance_seed(function_id: int, instance: int) -> int:
    """COCO's ``rseed`` for a BBOB function and instance: ``f + 10000 * instance``.

    f4 (Bueche-Rastrigin) shares f3's seed and f18 shares f17's, as in COCO's
    ``coco_get_bbob_problem`` and ``bbob2009_compute_fopt``.
    """
    return _SEED_SHARED_WITH.get(function_id, function_id) + 10000 * instance


def legacy_uniform(n: int, seed: int) -> np.ndarray:
    """``n`` uniform numbers in (0, 1] from COCO's ``bbob2009_unif``.

    A Park-Miller minimal-standard linear congruential generator (multiplier 16807, modulus
    2^31 - 1, Schrage's factorisation) behind a 32-entry Bays-Durham shuffle table, warmed
    up with 40 draws. The first ``k`` numbers do not depend on ``n``. Zeros become 1e-99.

    Args:
        n: how many numbers.
        seed: the seed; its absolute value is used, and values below 1 become 1.
    Returns:
        ``float64[n]``.
    """
    state = max(abs(int(seed)), 1)
    table = [0] * 32
    for i in range(39, -1, -1):
        state = _lcg_step(state)
        if i < 32:
            table[i] = state
    current = table[0]
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        state = _lcg_step(state)
        slot = current // 67108865
        current = table[slot]
        table[slot] = state
        out[i] = current / 2.147483647e9
    out[out == 0.0] = 1e-99
    return out


def _lcg_step(state: int) -> int:
    high = state // 127773
    state = 16807 * (state - high * 127773) - 2836 * high
    return state + _MODULUS if state < 0 else state


def legacy_gauss(n: int, seed: int) -> np.ndarray:
    """``n`` standard normal numbers from COCO's ``bbob2009_gauss`` (Box-Muller).

    Uses ``u = legacy_uniform(2 n, seed)``: ``sqrt(-2 log u[i]) cos(2 pi u[n + i])``;
    exact zeros become 1e-99.
    """
    u = legacy_uniform(2 * n, seed)
    # the C library's log and cos, as COCO's C code calls them (numpy's own SIMD versions can
    # differ in the last bit)
    pairs = zip(u[:n], u[n:], strict=True)
    g = np.asarray([math.sqrt(-2.0 * math.log(a)) * math.cos(2.0 * math.pi * b) for a, b in pairs])
    g[g == 0.0] = 1e-99
    return g


def legacy_rotation(dim: int, seed: int) -> np.ndarray:
    """A ``dim x dim`` orthogonal matrix from COCO's ``bbob2009_compute_rotation``.

    Fills the matrix column by column with ``legacy_gauss(dim * dim, seed)``
    (``B[i, j] = g[j * dim + i]``) and orthonormalises the columns in order with
    (modified) Gram-Schmidt, each inner product summed left to right as COCO's loops do (a
    BLAS dot's other order changes the last bits). It is applied as ``z = B @ x``.
    """
    if dim * dim >= 2000:  # beyond COCO's dimensions (its code stops there): numpy's speed
        b = legacy_gauss(dim * dim, seed).reshape(dim, dim).T.copy()
        for i in range(dim):
            for j in range(i):
                b[:, i] -= np.dot(b[:, i], b[:, j]) * b[:, j]
            b[:, i] /= np.sqrt(np.dot(b[:, i], b[:, i]))
        return b
    columns = legacy_gauss(dim * dim, seed).reshape(dim, dim).tolist()  # columns[i][k] = B[k, i]
    for i in range(dim):
        column = columns[i]
        for j in range(i):
            other, prod = columns[j], 0.0
            for k in range(dim):
                prod += column[k] * other[k]
            column = [c - prod * o for c, o in zip(column, other, strict=True)]
        prod = 0.0
        for c in column:
            prod += c * c
        norm = math.sqrt(prod)
        columns[i] = [c / norm for c in column]
    return np.asarray(columns).T.copy()


def legacy_xopt(dim: int, seed: int) -> np.ndarray:
    """The optimum from COCO's ``bbob2009_compute_xopt``: uniform on a 1e-4 grid in [-4, 4).

    ``8 floor(1e4 u) / 1e4 - 4`` with ``u = legacy_uniform(dim, seed)``; exact zeros
    become -1e-5.
    """
    x = 8.0 * np.floor(1e4 * legacy_uniform(dim, seed)) / 1e4 - 4.0
    x[x == 0.0] = -1e-5
    return x


def legacy_fopt(function_id: int, instance: int) -> float:
    """The optimal value from COCO's ``bbob2009_compute_fopt``, in [-1000, 1000].

    A ratio of two normal numbers (seeds ``instance_seed(f, i)`` and that plus one),
    rounded to two decimals and clipped to +-1000.
    """
    seed = instance_seed(function_id, instance)
    scaled = 1e4 * legacy_gauss(1, seed)[0] / legacy_gauss(1, seed + 1)[0]
    return float(np.clip(np.floor(scaled + 0.5) / 100.0, -1000.0, 1000.0))
