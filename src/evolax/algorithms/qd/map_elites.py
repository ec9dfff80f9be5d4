"""MAP-Elites over any archive, with iso+line variation (Mouret & Clune 2015; Vassiliades &
Mouret 2018), and its grid and CVT forms (Vassiliades et al. 2018)."""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import Algorithm
from evolax.algorithms.qd.common import QD_SUMMARY, QDState, archive_output, iso_line
from evolax.algorithms.qd.common import archive_metrics as archive_metrics
from evolax.qd import Archive, CVTArchive, GridArchive, cvt_centroids
from evolax.validation import check_non_negative, check_positive

MAPElitesState = QDState


class ArchiveMAPElites(Algorithm[QDState]):
    """MAP-Elites (Mouret & Clune, 2015) over any :class:`~evolax.qd.Archive`.

    Each generation draws ``pop_size`` parent pairs uniformly from the occupied cells and
    makes children by iso+line variation (Vassiliades & Mouret, 2018, eq. 1):
    ``x_i + mutation_std * N(0, I) + line_std * N(0, 1) * (x_j - x_i)``. ``tell`` offers them
    to the archive with their descriptors (:attr:`extra_inputs`, ``[pop, n_desc]``; the
    trainer passes those the task computes, ``Task.descriptor``). While the archive is empty,
    ``ask`` returns ``x0 + init_std * N(0, I)``. A non-finite fitness never enters the
    archive; :meth:`best` (the best genome ever told) is the best elite.

    Args:
        pop_size: children per generation.
        archive: where elites live (:class:`~evolax.qd.GridArchive`,
            :class:`~evolax.qd.CVTArchive`, :class:`~evolax.qd.UnstructuredArchive`).
        mutation_std: isotropic mutation std (``sigma_iso``), ``>= 0``.
        line_std: std of the step along the line to the second parent (``sigma_line``).
        init_std: spread of the first generation around ``x0``, positive.
    """

    extra_inputs: ClassVar[tuple[str, ...]] = ("descriptors",)

    summary_metrics: ClassVar[tuple[str, ...]] = QD_SUMMARY
    pop_size: int = eqx.field(static=True)
    archive: Archive
    mutation_std: float = 0.01
    line_std: float = 0.2
    init_std: float = 0.1

    def __check_init__(self):
        check_non_negative("mutation_std", self.mutation_std)
        check_non_negative("line_std", self.line_std)
        check_positive("init_std", self.init_std)

    def cell_index(self, descriptors: Float[Array, "pop desc"]) -> Int[Array, " pop"]:
        """The cell of each descriptor (cell archives only)."""
        return self.archive.index(descriptors)  # type: ignore[attr-defined]

    def _init(self, key, x0):
        del key
        return QDState(archive=self.archive.init(x0))

    def _ask(self, key, state):
        pick_key, iso_key, line_key = jax.random.split(key, 3)
        elites = state.archive
        parents = self.archive.sample(pick_key, elites, 2 * self.pop_size)
        x = elites.genomes[parents[: self.pop_size]]
        y = elites.genomes[parents[self.pop_size :]]
        children, iso = iso_line(iso_key, line_key, x, y, self.mutation_std, self.line_std)
        first = elites.genomes[0][None] + self.init_std * iso  # every cell holds x0 then
        return jnp.where(jnp.any(elites.occupied), children, first), state

    def outputs(self, state):
        return archive_output(self.archive, state.archive)

    def _tell(self, key, state, x, fitness, descriptors):
        del key
        archive, insertion = self.archive.add(state.archive, x, fitness, descriptors)
        added = jnp.sum(insertion.status > 0).astype(jnp.float32)
        return state.replace(archive=archive), self.archive.metrics(archive) | {
            "archive_insertions": added
        }


class MAPElites(ArchiveMAPElites):
    """MAP-Elites over a regular grid of behaviour descriptors
    (:class:`~evolax.qd.GridArchive`; see :class:`ArchiveMAPElites`).

    Args:
        pop_size: children per generation.
        grid_shape: cells along each descriptor dimension, e.g. ``(32, 32)``.
        descriptor_low, descriptor_high: the descriptor space's bounds, one per dimension
            (descriptors outside fall in the border cells).
        mutation_std, line_std, init_std: see :class:`ArchiveMAPElites`.
        qd_offset: subtracted from elite fitness in the QD-score.
    """

    def __init__(
        self,
        pop_size: int,
        grid_shape,
        descriptor_low,
        descriptor_high,
        mutation_std: float = 0.01,
        line_std: float = 0.2,
        init_std: float = 0.1,
        qd_offset: float = 0.0,
    ):
        archive = GridArchive(grid_shape, descriptor_low, descriptor_high, qd_offset=qd_offset)
        super().__init__(pop_size, archive, mutation_std, line_std, init_std)


class CVTMAPElites(ArchiveMAPElites):
    """CVT-MAP-Elites (Vassiliades, Chatzilygeroudis & Mouret, 2018): MAP-Elites whose cells
    are the Voronoi cells of ``n_cells`` centroids spread over the descriptor box by k-means
    (:func:`~evolax.qd.cvt_centroids`), so the cell count does not grow with the descriptor
    dimension.

    Args:
        pop_size: children per generation.
        descriptor_low, descriptor_high: the descriptor box, one bound per dimension.
        n_cells: the number of centroids.
        mutation_std, line_std, init_std: see :class:`ArchiveMAPElites`.
        qd_offset: subtracted from elite fitness in the QD-score.
        n_samples: uniform points k-means clusters (default ``20 n_cells``).
        cvt_seed: the seed of those points and of k-means' start.
    """

    def __init__(
        self,
        pop_size: int,
        descriptor_low,
        descriptor_high,
        n_cells: int = 1024,
        mutation_std: float = 0.01,
        line_std: float = 0.2,
        init_std: float = 0.1,
        qd_offset: float = 0.0,
        n_samples: int | None = None,
        cvt_seed: int = 0,
    ):
        centroids = cvt_centroids(
            jax.random.key(cvt_seed), n_cells, descriptor_low, descriptor_high, n_samples
        )
        archive = CVTArchive(centroids, descriptor_low, descriptor_high, qd_offset=qd_offset)
        super().__init__(pop_size, archive, mutation_std, line_std, init_std)
