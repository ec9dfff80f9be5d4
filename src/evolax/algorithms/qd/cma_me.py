"""CMA-ME (Fontaine, Togelius, Nikolaidis & Hoover 2020) and CMA-MAE (Fontaine & Nikolaidis
2023): CMA-ES emitters that explore an archive, run side by side by one scheduler."""

from __future__ import annotations

from typing import ClassVar

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import HIGHEST, Algorithm, normal
from evolax.algorithms.cma.cma_es import decompose
from evolax.algorithms.cma.cma_family import expected_norm
from evolax.algorithms.qd.common import QD_SUMMARY, QDState, archive_output
from evolax.algorithms.unbatched import one_at_a_time
from evolax.qd import Archive, ArchiveState, GridArchive, Insertion
from evolax.validation import check_positive, check_positive_int

_decompose = one_at_a_time(decompose)  # vmapped over emitters (and seeds), one matrix per call

RANKERS = ("improvement", "optimizing", "random_direction", "value")
"""The emitters' rankings (pyribs' names in brackets):

- ``improvement`` (``2imp``): candidates that open a cell first, then those that improve one,
  each group by its value (fitness minus the cell's threshold); CMA-ME's improvement emitter.
- ``optimizing`` (``2obj``): the same groups, each by fitness; the optimizing emitter.
- ``random_direction`` (``2rd``): the same groups, each by the projection of its descriptor
  on the emitter's random direction (drawn ``N(0, I)`` at each restart); the random-direction
  emitter.
- ``value`` (``imp``): by value alone; CMA-MAE's emitter.
"""


@chex.dataclass(frozen=True, kw_only=True)
class EmitterState:
    """The CMA-ES searches of the emitters, one row each.

    Attributes:
        mean: ``[E, D]``.
        std: the step size ``sigma``, ``[E]``.
        cov: the covariance ``C``, ``[E, D, D]``.
        eigvecs, eigvals_sqrt: ``C = B diag(d^2) B^T``, ``[E, D, D]`` and ``[E, D]``.
        p_sigma, p_c: the evolution paths, ``[E, D]``.
        age: generations since the emitter's last restart, ``i32[E]``.
        direction: the random-direction ranking's direction, ``[E, n_desc]``.
        restarts: restarts so far, ``i32[E]``.
    """

    mean: Float[Array, "emitters dim"]
    std: Float[Array, " emitters"]
    cov: Float[Array, "emitters dim dim"]
    eigvecs: Float[Array, "emitters dim dim"]
    eigvals_sqrt: Float[Array, "emitters dim"]
    p_sigma: Float[Array, "emitters dim"]
    p_c: Float[Array, "emitters dim"]
    age: Int[Array, " emitters"]
    direction: Float[Array, "emitters desc"]
    restarts: Int[Array, " emitters"]


@chex.dataclass(frozen=True, kw_only=True)
class CMAMEState(QDState):
    """A :class:`~evolax.algorithms.qd.common.QDState` with the emitters' searches.

    Attributes:
        emitters: :class:`EmitterState`.
        result: the plain archive of every elite found (CMA-MAE, whose ``archive`` anneals
            its thresholds), or ``None``; metrics and :meth:`CMAME.elites` come from it.
    """

    emitters: EmitterState
    result: ArchiveState | None = None


class CMAME(Algorithm[CMAMEState]):
    """CMA-ME: ``len(emitters)`` CMA-ES searches, each drawing ``pop_size / len(emitters)``
    candidates per generation, all offered to one archive (Fontaine et al., 2020).

    Each emitter ranks its candidates by what the archive made of them (:data:`RANKERS`:
    ``improvement``, ``optimizing`` and ``random_direction`` are the paper's three emitters;
    several kinds can run side by side, e.g. ``("improvement",) * 5 + ("random_direction",)
    * 5``) and updates its mean, paths, covariance and step size from the ``mu`` best
    (weights ``log(mu + 1/2) - log i``; Hansen's tutorial's rates for that ``mu``). With
    ``selection="filter"`` ``mu`` is the number the archive accepted (none: no update), with
    ``"mu"`` half the batch. An emitter restarts from a random elite with ``C = I`` and
    ``sigma = init_std`` when ``restart="no_improvement"`` and the archive took none of its
    candidates, or when its search has converged (``cond(C) > 1e14``,
    ``sigma sqrt(max eig C) < 1e-11``, or a ranking whose first and last values agree to
    ``1e-12``); these are pyribs 0.12's rules.

    Besides the fitness, ``tell`` needs each candidate's descriptor (:attr:`extra_inputs`).

    Args:
        pop_size: candidates per generation, a multiple of ``len(emitters)``.
        archive: where elites live (any :class:`~evolax.qd.Archive`; one that anneals makes
            this CMA-MAE, see :class:`CMAMAE`).
        emitters: each emitter's ranking, one of :data:`RANKERS`.
        init_std: each emitter's initial (and restart) step size, positive.
        selection: ``"filter"`` or ``"mu"``.
        restart: ``"no_improvement"`` or ``"basic"`` (only on convergence).
        result_archive: a plain archive that also takes every candidate, for metrics and
            deployment (``None``: ``archive`` itself).
    """

    extra_inputs: ClassVar[tuple[str, ...]] = ("descriptors",)

    summary_metrics: ClassVar[tuple[str, ...]] = QD_SUMMARY
    pop_size: int = eqx.field(static=True)
    archive: Archive
    emitters: tuple[str, ...] = eqx.field(static=True)
    init_std: float
    selection: str = eqx.field(static=True)
    restart: str = eqx.field(static=True)
    result_archive: Archive | None

    def __init__(
        self,
        pop_size: int,
        archive: Archive,
        emitters=("improvement",) * 5,
        init_std: float = 0.5,
        selection: str = "filter",
        restart: str = "no_improvement",
        result_archive: Archive | None = None,
    ):
        self.pop_size = pop_size
        self.archive = archive
        self.emitters = (emitters,) if isinstance(emitters, str) else tuple(emitters)
        self.init_std = init_std
        self.selection = selection
        self.restart = restart
        self.result_archive = result_archive

    def __check_init__(self):
        if not self.emitters:
            raise ValueError("emitters must name at least one emitter, got ()")
        unknown = sorted(set(self.emitters) - set(RANKERS))
        if unknown:
            raise ValueError(f"emitters must each be one of {RANKERS}, got {unknown}")
        if isinstance(self.pop_size, int) and self.pop_size % len(self.emitters):
            raise ValueError(
                f"pop_size must be a multiple of the {len(self.emitters)} emitters, got "
                f"{self.pop_size}"
            )
        check_positive_int("batch size (pop_size / emitters)", self.pop_size // len(self.emitters))
        check_positive("init_std", self.init_std)
        if self.selection not in ("filter", "mu"):
            raise ValueError(f"selection must be 'filter' or 'mu', got {self.selection!r}")
        if self.restart not in ("no_improvement", "basic"):
            raise ValueError(f"restart must be 'no_improvement' or 'basic', got {self.restart!r}")

    @property
    def batch_size(self) -> int:
        """Candidates per emitter and generation."""
        return self.pop_size // len(self.emitters)

    def elites(self, state: CMAMEState) -> ArchiveState:
        """The archive of every elite found (CMA-MAE's result archive, else the archive)."""
        return state.archive if state.result is None else state.result

    def _fresh(self, key, mean: Float[Array, "emitters dim"], restarts) -> EmitterState:
        n, dim = mean.shape
        eye = jnp.broadcast_to(jnp.eye(dim, dtype=mean.dtype), (n, dim, dim))
        return EmitterState(
            mean=mean,
            std=jnp.full(n, self.init_std, mean.dtype),
            cov=eye,
            eigvecs=eye,
            eigvals_sqrt=jnp.ones_like(mean),
            p_sigma=jnp.zeros_like(mean),
            p_c=jnp.zeros_like(mean),
            age=jnp.zeros(n, jnp.int32),
            direction=normal(key, (n, self.archive.n_desc), mean),
            restarts=restarts,
        )

    def _init(self, key, x0):
        n = len(self.emitters)
        mean = jnp.broadcast_to(x0[None], (n, x0.shape[0]))
        result = None if self.result_archive is None else self.result_archive.init(x0)
        return CMAMEState(
            archive=self.archive.init(x0),
            emitters=self._fresh(key, mean, jnp.zeros(n, jnp.int32)),
            result=result,
        )

    def _ask(self, key, state):
        e = state.emitters
        n, dim = e.mean.shape
        z = normal(key, (n, self.batch_size, dim), e.mean)
        y = jnp.einsum("ebd,ecd->ebc", z * e.eigvals_sqrt[:, None], e.eigvecs, precision=HIGHEST)
        x = e.mean[:, None] + e.std[:, None, None] * y
        return x.reshape(self.pop_size, dim), state

    def outputs(self, state):
        return archive_output(self.archive, state.archive if state.result is None else state.result)

    def _tell(self, key, state, x, fitness, descriptors):
        archive, added = self.archive.add(state.archive, x, fitness, descriptors)
        result = state.result
        if self.result_archive is not None:
            result, _ = self.result_archive.add(result, x, fitness, descriptors)
        descriptors = self.archive.check_descriptors(descriptors, self.pop_size)
        n, b = len(self.emitters), self.batch_size
        restart_key, pick_key = jax.random.split(key)
        kinds = jnp.asarray([RANKERS.index(k) for k in self.emitters], jnp.int32)
        updated, restart = jax.vmap(self._update)(
            state.emitters,
            x.reshape(n, b, -1),
            fitness.reshape(n, b),
            descriptors.reshape(n, b, -1),
            jax.tree.map(lambda a: a.reshape(n, b), added),
            kinds,
        )
        # restarted emitters start again from random elites of the (updated) archive
        starts = archive.genomes[self.archive.sample(pick_key, archive, n)]
        fresh = self._fresh(restart_key, starts, updated.restarts + 1)
        emitters = jax.tree.map(
            lambda new, old: jnp.where(restart.reshape((n,) + (1,) * (old.ndim - 1)), new, old),
            fresh,
            updated,
        )
        new = state.replace(archive=archive, emitters=emitters, result=result)
        shown = self.elites(new)
        metrics = (self.result_archive or self.archive).metrics(shown)
        return new, metrics | {
            "archive_insertions": jnp.sum(added.status > 0).astype(jnp.float32),
            "restarts": jnp.sum(restart).astype(jnp.float32),
            "std_mean": jnp.mean(emitters.std),
        }

    def _update(self, e: EmitterState, x, fitness, descriptors, added: Insertion, kind):
        """One emitter's CMA-ES update from its batch, and whether it restarts."""
        b, dim = x.shape
        two_stage = kind != RANKERS.index("value")
        secondary = jnp.select(
            [kind == RANKERS.index("optimizing"), kind == RANKERS.index("random_direction")],
            [fitness, descriptors @ e.direction],
            added.value,
        )
        primary = jnp.where(two_stage, added.status, 0)
        order = jnp.lexsort((secondary, primary))[::-1]  # best first
        accepted = jnp.sum(added.status > 0)
        mu = accepted if self.selection == "filter" else jnp.asarray(b // 2)
        rank = jnp.arange(1, b + 1, dtype=x.dtype)
        raw = jnp.where(rank <= mu, jnp.log(mu + 0.5) - jnp.log(rank), 0.0)
        weights = raw / jnp.maximum(jnp.sum(raw), 1e-30)
        mueff = 1.0 / jnp.maximum(jnp.sum(weights**2), 1e-30)

        c_s = (mueff + 2) / (dim + mueff + 5)
        d_s = 1 + 2 * jnp.maximum(0.0, jnp.sqrt((mueff - 1) / (dim + 1)) - 1) + c_s
        c_c = (4 + mueff / dim) / (dim + 4 + 2 * mueff / dim)
        c1 = 2 / ((dim + 1.3) ** 2 + mueff)
        c_mu = jnp.minimum(1 - c1, 2 * (mueff - 2 + 1 / mueff) / ((dim + 2) ** 2 + mueff))
        chi = expected_norm(dim)

        steps = (x[order] - e.mean[None]) / e.std  # y_i, best first
        y_w = weights @ steps
        whitened = e.eigvecs @ ((e.eigvecs.T @ y_w) / e.eigvals_sqrt)  # C^{-1/2} y_w
        p_sigma = (1 - c_s) * e.p_sigma + jnp.sqrt(c_s * (2 - c_s) * mueff) * whitened
        age = e.age + 1
        norm = jnp.linalg.norm(p_sigma) / jnp.sqrt(1 - (1 - c_s) ** (2 * age))
        h_sigma = (norm < (1.4 + 2 / (dim + 1)) * chi).astype(x.dtype)
        p_c = (1 - c_c) * e.p_c + h_sigma * jnp.sqrt(c_c * (2 - c_c) * mueff) * y_w
        rank_mu = (steps * weights[:, None]).T @ steps
        decay = 1 - c1 - c_mu + (1 - h_sigma) * c1 * c_c * (2 - c_c)
        cov = decay * e.cov + c1 * jnp.outer(p_c, p_c) + c_mu * rank_mu
        cov = 0.5 * (cov + cov.T)
        std = e.std * jnp.exp(jnp.minimum(1.0, (c_s / d_s) * (jnp.linalg.norm(p_sigma) / chi - 1)))
        eigvecs, eigvals_sqrt = _decompose(cov)
        moved = e.replace(  # type: ignore[attr-defined]
            mean=e.mean + e.std * y_w,
            std=std,
            cov=cov,
            eigvecs=eigvecs,
            eigvals_sqrt=eigvals_sqrt,
            p_sigma=p_sigma,
            p_c=p_c,
            age=age,
        )
        new = jax.tree.map(lambda a, b_: jnp.where(mu > 0, a, b_), moved, e.replace(age=age))  # type: ignore[attr-defined]

        ranked = jnp.stack([primary.astype(x.dtype), secondary], axis=1)[order]
        flat = jnp.linalg.norm(ranked[0] - ranked[-1]) < 1e-12
        converged = (
            ((jnp.max(eigvals_sqrt) / jnp.min(eigvals_sqrt)) ** 2 > 1e14)
            | (new.std * jnp.max(new.eigvals_sqrt) < 1e-11)
            | flat
            | ~jnp.all(jnp.isfinite(new.mean))
        )
        restart = converged | ((accepted == 0) if self.restart == "no_improvement" else False)
        return new, restart


class CMAMAE(CMAME):
    """CMA-MAE (Fontaine & Nikolaidis, 2023): CMA-ME over an archive whose thresholds anneal
    at ``learning_rate`` from ``threshold_min`` (:class:`~evolax.qd.Archive`), emitters that
    rank by value (fitness minus threshold, :data:`RANKERS` ``"value"``), ``mu`` selection and
    restarts only on convergence, with a plain result archive on the same grid for the
    metrics and :meth:`~CMAME.elites`.

    Args:
        pop_size: candidates per generation, a multiple of ``n_emitters``.
        grid_shape, descriptor_low, descriptor_high: the grid (:class:`~evolax.qd.GridArchive`).
        learning_rate: the archive learning rate ``alpha`` in ``[0, 1]`` (0.01 in the paper).
        threshold_min: the threshold of an empty cell, finite (the paper: the lowest fitness,
            0 on the normalised benchmarks).
        n_emitters: the number of emitters.
        init_std: each emitter's initial step size.
        qd_offset: subtracted from elite fitness in the QD-score.
    """

    def __init__(
        self,
        pop_size: int,
        grid_shape,
        descriptor_low,
        descriptor_high,
        learning_rate: float = 0.01,
        threshold_min: float = 0.0,
        n_emitters: int = 5,
        init_std: float = 0.5,
        qd_offset: float = 0.0,
    ):
        check_positive_int("n_emitters", n_emitters)
        super().__init__(
            pop_size,
            GridArchive(
                grid_shape,
                descriptor_low,
                descriptor_high,
                learning_rate=learning_rate,
                threshold_min=threshold_min,
                qd_offset=qd_offset,
            ),
            emitters=("value",) * n_emitters,
            init_std=init_std,
            selection="mu",
            restart="basic",
            result_archive=GridArchive(
                grid_shape, descriptor_low, descriptor_high, qd_offset=qd_offset
            ),
        )
