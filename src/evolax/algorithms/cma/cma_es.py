"""CMA-ES: covariance matrix adaptation (Hansen, 2016, "The CMA Evolution Strategy: A Tutorial"),
with pycma 4's defaults."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import HIGHEST
from evolax.algorithms.cma.cma_family import (
    CMAFamily,
    CMAParameters,
    CMAState,
    cma_parameters,
    compensated,
    default_pop_size,
    eigen_interval,
    extremes,
    moved,
)
from evolax.algorithms.unbatched import one_at_a_time
from evolax.validation import check_positive_int

__all__ = [
    "CMAES",
    "CMAESState",
    "decompose",
    "default_pop_size",
    "eigen_interval",
    "refactor",
]


@chex.dataclass(frozen=True, kw_only=True)
class CMAESState(CMAState):
    """CMA-ES state: the family's fields plus the full covariance and its decomposition.

    Attributes:
        cov: the covariance matrix ``C``, ``[D, D]``, symmetric (exactly so when just
            decomposed; in between, up to the rounding of its rank-mu updates). In float32
            (factored), ``C`` as of the last decomposition, ``B diag(D^2) B^T``: the updates
            since are in ``whitened_cov`` (the current ``C`` is ``B D W D B^T``).
        eigvecs: ``B``, the eigenvectors of ``C`` at the last decomposition (columns).
        eigvals_sqrt: ``D``, square roots of its eigenvalues (clipped positive), ``[D]``.
        eigen_generation: the generation of the last eigendecomposition.
        whitened_cov: in float32 (and narrower), ``W = D^{-1} B^T C B D^{-1}``, ``C`` in the
            frame of the last decomposition (the identity just after it): the covariance
            update is applied to ``W`` only and ``B, D`` come from it (:func:`refactor`);
            unused in float64.
    """

    cov: Float[Array, "dim dim"]
    eigvecs: Float[Array, "dim dim"]
    eigvals_sqrt: Float[Array, " dim"]
    eigen_generation: Int[Array, ""]
    whitened_cov: Float[Array, "dim dim"]


def decompose(cov: Float[Array, "dim dim"]) -> tuple[Float[Array, "dim dim"], Float[Array, " dim"]]:
    """``B, D`` with ``C = B diag(D^2) B^T``; eigenvalues are clipped to at least the largest
    times the dtype's machine epsilon (``2^-23`` in float32).

    ``eigh`` resolves eigenvalues only to about ``eps * max``; smaller ones are rounding noise,
    can be zero or negative, and ``C^{-1/2}`` built from them turns the next step into garbage
    (``std`` then overflows). Clipped, ``cond(C) <= 1 / eps`` and whitening stays accurate;
    ConditionCov fires at that limit.
    """
    # C is symmetric (the caller symmetrises it): ``cov.T`` is LAPACK's column-major layout
    # of ``cov``'s rows, and eigh's own symmetrisation is a transposed read; eigh(cov) made
    # XLA lay C out column-major through the cond, two transposing copies of C a generation
    eigvals, eigvecs = jnp.linalg.eigh(cov.T, symmetrize_input=False)
    floor = jnp.maximum(jnp.max(eigvals) * jnp.finfo(cov.dtype).eps, jnp.finfo(cov.dtype).tiny)
    return eigvecs, jnp.sqrt(jnp.maximum(eigvals, floor))


def refactor(
    eigvecs: Float[Array, "dim dim"],
    eigvals_sqrt: Float[Array, " dim"],
    whitened_cov: Float[Array, "dim dim"],
) -> tuple[Float[Array, "dim dim"], Float[Array, " dim"]]:
    """``B', D'`` with ``B' diag(D'^2) B'^T = C = B D W D B^T``, from the factor ``G = B D
    W^{1/2}`` (``C = G G^T``) by a singular value decomposition; ``D'`` is clipped to at least
    ``eps`` times its largest.

    ``eigh(C)`` resolves eigenvalues only to ``eps * max``, so in float32 ``cond(C)`` stops at
    ``1 / eps`` (8e6: axis ratio 2.9e3), short of what BBOB's f14 needs for 1e-8. ``W`` is
    close to the identity (well conditioned) and the SVD of ``G`` resolves its singular
    values, the axis lengths ``D'``, to ``eps * max D'``: ``cond(C)`` to ``1 / eps^2`` (7e13,
    pycma's ``tol_condition`` is 1e14).
    """
    w_eigvals, w_eigvecs = jnp.linalg.eigh(whitened_cov)
    root = w_eigvecs * jnp.sqrt(jnp.maximum(w_eigvals, 0.0))[None]  # W^{1/2} up to rotation
    factor = jnp.dot(eigvecs * eigvals_sqrt[None], root, precision=HIGHEST)
    left, singular, _ = jnp.linalg.svd(factor, full_matrices=False)
    floor = jnp.maximum(singular[0] * jnp.finfo(factor.dtype).eps, jnp.finfo(factor.dtype).tiny)
    return left, jnp.maximum(singular, floor)


@one_at_a_time  # vmapped (over seeds, say), the decomposition stays lazy and unbatched
def _decompose_if(due, cov, eigvecs, eigvals_sqrt):
    """``cov`` symmetrised and decomposed when ``due``, else ``cov`` and the last ``eigvecs,
    eigvals_sqrt``. As pycma, symmetrise only then: ``cov + cov.T`` reads ``cov`` across
    its rows, the slowest step of a generation at d = 5000 (3 of 5 seconds on one core)."""

    return jax.lax.cond(due, _symmetrised_decomposition, lambda c: (c, eigvecs, eigvals_sqrt), cov)


def _symmetrised_decomposition(cov):
    """``(C + C^T) / 2`` and its :func:`decompose`."""
    cov = 0.5 * (cov + cov.T)
    return (cov, *decompose(cov))


EIGH_AXIS_RATIO = 100.0
"""Below this ratio of the last decomposition's longest to shortest axis (``cond(C) < 1e4``),
float32's factored CMA-ES decomposes ``C = B D W D B^T`` by ``eigh``, whose smallest
eigenvalue is then good to ``eps cond(C)``, about 1e-3 relative; above it, by
:func:`refactor`'s SVD."""


@one_at_a_time
def _refactor_if(due, cov, eigvecs, eigvals_sqrt, whitened_cov):
    """When ``due``, ``C = B D W D B^T`` decomposed (:func:`decompose` while the last axis
    ratio is below :data:`EIGH_AXIS_RATIO`, else ``B', D' = refactor(...)`` and ``C = B'
    diag(D'^2) B'^T``), else ``cov`` and the last ``eigvecs, eigvals_sqrt``: ``C`` is formed
    only here, ``O(n^3)`` once per decomposition."""

    def precise(b, d, w):
        left, singular = refactor(b, d, w)
        axes = left * singular[None]
        cov = jnp.dot(axes, axes.T, precision=HIGHEST)
        return 0.5 * (cov + cov.T), left, singular

    def cheap(b, d, w):  # eigh resolves a mildly conditioned C well: a few times faster
        axes = b * d[None]
        cov = jnp.dot(jnp.dot(axes, w, precision=HIGHEST), axes.T, precision=HIGHEST)
        return _symmetrised_decomposition(cov)

    def fresh(cov, b, d, w):
        del cov
        w = 0.5 * (w + w.T)  # symmetrised only here, as C in float64 (a transposed read)
        mild = jnp.max(d) < jnp.min(d) * EIGH_AXIS_RATIO
        return jax.lax.cond(mild, cheap, precise, b, d, w)

    def last(cov, b, d, _):
        return cov, b, d

    return jax.lax.cond(due, fresh, last, cov, eigvecs, eigvals_sqrt, whitened_cov)


class CMAES(CMAFamily[CMAESState]):
    """CMA-ES with active covariance update (Hansen, 2016, appendix A), with the default
    parameters, ``h_sigma`` and step-size cap of pycma 4 (see
    :func:`~evolax.algorithms.cma.cma_family.cma_parameters`): told the same samples, its state
    follows pycma's ``CMAEvolutionStrategy`` to about 1e-10 in float64.

    Samples ``x_k = mean + std B D z_k``. On top of the family's mean, paths and step size
    (:class:`~evolax.algorithms.cma.cma_family.CMAFamily`), ``C`` gets the rank-one and active
    rank-mu updates (eq. 46-47, pycma's ``GaussFullSampler.update``: the negative weights
    rescaled by ``n / |C^{-1/2} y_i|^2`` with the last ``B, D``); ``B`` and ``D`` are
    recomputed by ``eigh`` only every :func:`~evolax.algorithms.cma.cma_family.eigen_interval`
    generations (appendix B.2), so ``tell`` costs ``O(lambda n^2)`` amortised; eigenvalues
    are clipped to at least ``eps`` times the largest (see :func:`decompose`). In float32 the
    update is applied instead in the frame of the last ``B, D`` (``whitened_cov``, near the
    identity; ``cov`` is formed only at a decomposition) and ``B, D`` come from the SVD of a
    factor of ``C`` (:func:`refactor`), which resolves ``cond(C)`` to ``1 / eps^2`` instead of
    ``eigh``'s ``1 / eps``: BBOB's f14 needs more than float32's ``1 / eps`` to reach 1e-8.

    Args:
        pop_size: ``lambda``, at least 2 (the tutorial's default is :func:`default_pop_size`).
        init_std: the initial step size ``sigma_0``, positive.
        active: negative weights for the worse half (eq. 53); ``False`` gives zero weights.
        tol_x: TolX of ``should_stop``; ``None`` means ``1e-12 * init_std``.
        tol_fun: TolFun of ``should_stop`` (the tutorial's ``1e-12``).
        tol_condition: ``should_stop`` fires when ``cond(C)`` exceeds this (``1e14``, as
            pycma in float64). Float32 resolves no more than ``1 / eps^2``, about 7e13 (axis
            lengths down to ``eps`` times the largest): there the floor of :func:`refactor`
            holds the condition (metric ``condition_guard``) and the run goes on.
        eigen_interval: generations between eigendecompositions; ``None`` for pycma's
            :func:`~evolax.algorithms.cma.cma_family.eigen_interval`.
        fitness_history: record each generation's best, median and worst fitness for the
            termination criteria TolFun, EqualFunValues and Stagnation of ``should_stop``;
            ``False`` leaves them out (they never fire) and ``tell`` launches about 20 kernels
            fewer (docs/results.md, kernels per generation).
        factored: in float32 (and narrower), keep ``whitened_cov`` and take ``B, D`` from
            :func:`refactor` (``cond(C)`` resolved to ``1 / eps^2``); ``False`` decomposes
            ``C`` by ``eigh`` as in float64 (``cond(C)`` to ``1 / eps``, about 30 kernels
            fewer a generation). Float64 is the same either way.
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0
    active: bool = eqx.field(static=True, default=True)
    tol_x: float | None = None
    tol_fun: float = 1e-12
    tol_condition: float = 1e14
    eigen_interval: int | None = eqx.field(static=True, default=None)
    fitness_history: bool = eqx.field(static=True, default=True)
    factored: bool = eqx.field(static=True, default=True)

    def __check_init__(self):
        if self.eigen_interval is not None:
            check_positive_int("eigen_interval", self.eigen_interval)

    def parameters(self, dim: int) -> CMAParameters:
        """pycma's default strategy parameters for dimension ``dim``."""
        return cma_parameters(dim, self.pop_size, self.active)

    def _init(self, key, x0):
        del key
        eye = jnp.eye(x0.shape[0], dtype=x0.dtype)
        return CMAESState(
            **self._init_paths(x0),
            cov=eye,
            eigvecs=eye,
            eigvals_sqrt=jnp.ones_like(x0),
            eigen_generation=jnp.asarray(0, jnp.int32),
            whitened_cov=eye,
        )

    def _sample(self, state, z):
        return jnp.dot(z * state.eigvals_sqrt[None], state.eigvecs.T, precision=HIGHEST)

    def _inverse_sqrt(self, state, v):  # B D^{-1} B^T v
        along = jnp.dot(v, state.eigvecs, precision=HIGHEST) / state.eigvals_sqrt
        return jnp.dot(state.eigvecs, along, precision=HIGHEST)

    def _covariance(self, state, p, y, weights, p_c, h_sigma, generation):
        dim = state.mean.shape[0]
        # eq. 46-47: w_i° rescales the negative weights by n / |C^{-1/2} y_i|^2, where
        # |C^{-1/2} y_i| = |D^{-1} B^T y_i|
        z = jnp.dot(y, state.eigvecs, precision=HIGHEST) / state.eigvals_sqrt[None]
        sq_norms = jnp.sum(z**2, axis=1)
        circ = jnp.where(weights >= 0, weights, weights * dim / jnp.maximum(sq_norms, 1e-30))
        delta_h = (1 - h_sigma) * p.c_c * (2 - p.c_c)
        decay = 1 + p.c1 * delta_h - p.c1 - p.c_mu * float(p.weights.sum())
        interval = self.eigen_interval or eigen_interval(dim, self.pop_size)
        due = generation - state.eigen_generation >= interval
        whitened_cov = state.whitened_cov
        if self.factored and compensated(y.dtype):  # the update in the last B, D's frame only
            u = jnp.dot(p_c, state.eigvecs, precision=HIGHEST) / state.eigvals_sqrt
            whitened_cov = (
                decay * whitened_cov
                + p.c1 * jnp.outer(u, u)
                + p.c_mu * jnp.dot(z.T * circ[None], z, precision=HIGHEST)
            )
            cov, eigvecs, eigvals_sqrt = _refactor_if(
                due, state.cov, state.eigvecs, state.eigvals_sqrt, whitened_cov
            )
            whitened_cov = jnp.where(due, jnp.eye(dim, dtype=y.dtype), whitened_cov)
        else:
            rank_mu = jnp.dot(y.T * circ[None], y, precision=HIGHEST)
            cov = decay * state.cov + p.c1 * jnp.outer(p_c, p_c) + p.c_mu * rank_mu
            cov, eigvecs, eigvals_sqrt = _decompose_if(due, cov, state.eigvecs, state.eigvals_sqrt)
        return dict(
            cov=cov,
            eigvecs=eigvecs,
            eigvals_sqrt=eigvals_sqrt,
            eigen_generation=jnp.where(due, generation, state.eigen_generation),
            whitened_cov=whitened_cov,
        )

    def _axis_lengths(self, state):
        return state.eigvals_sqrt

    def _diagonal(self, state):
        return jnp.diagonal(state.cov)

    def _no_effect_axis(self, state):
        axes = 0.1 * state.std * state.eigvals_sqrt[None] * state.eigvecs  # columns: axes
        unmoved = ~moved(state.mean[:, None], state.mean_residual[:, None], axes)
        return jnp.any(jnp.all(unmoved, axis=0))

    def _condition_guarded(self, state):  # the floor of decompose or refactor holds
        eps = jnp.finfo(state.eigvals_sqrt.dtype).eps
        smallest, largest = extremes(state.eigvals_sqrt)
        if compensated(state.eigvals_sqrt.dtype):  # refactor: D >= eps max D
            return smallest <= largest * eps * (1 + 8 * eps)
        return smallest**2 <= largest**2 * eps * (1 + 8 * eps)
