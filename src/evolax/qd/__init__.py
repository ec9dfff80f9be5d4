"""Quality-diversity archives as pytrees: a grid, centroidal Voronoi cells and an unstructured
(novelty) archive, with pyribs' acceptance rules (CMA-MAE's annealed thresholds included) and
the QD metrics."""

from evolax.qd.archive import (
    IMPROVED,
    NEW,
    NOT_ADDED,
    Archive,
    ArchiveState,
    CellArchive,
    Insertion,
    qd_metrics,
)
from evolax.qd.cvt import CVTArchive, cvt_centroids
from evolax.qd.grid import GridArchive
from evolax.qd.unstructured import UnstructuredArchive, knn_distance, novelty

__all__ = [
    "IMPROVED",
    "NEW",
    "NOT_ADDED",
    "Archive",
    "ArchiveState",
    "CVTArchive",
    "CellArchive",
    "GridArchive",
    "Insertion",
    "UnstructuredArchive",
    "cvt_centroids",
    "knn_distance",
    "novelty",
    "qd_metrics",
]
