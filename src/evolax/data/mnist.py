"""The MNIST handwritten digits (LeCun et al., 1998): find, verify and download the IDX files."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import http.client
import logging
import os
import socket
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import cast

import numpy as np

from evolax.cache import cache_dir
from evolax.data.idx import read_idx

IMAGE_SHAPE = (28, 28)
N_CLASSES = 10

FILES: dict[str, tuple[str, tuple[int, ...]]] = {
    "train_images": ("train-images-idx3-ubyte", (60000, *IMAGE_SHAPE)),
    "train_labels": ("train-labels-idx1-ubyte", (60000,)),
    "test_images": ("t10k-images-idx3-ubyte", (10000, *IMAGE_SHAPE)),
    "test_labels": ("t10k-labels-idx1-ubyte", (10000,)),
}
"""``MnistData`` field -> (file name without ``.gz``, expected ``uint8`` shape)."""

FILE_NAMES = tuple(name for name, _ in FILES.values())

SHA256: dict[str, str] = {
    "train-images-idx3-ubyte": "0b367032e93c5d0cea0925647cfdb18614af8ee15f83e6f2fc2ad904a6835971",
    "train-labels-idx1-ubyte": "1787548bbe0bff1ec2ecdc0ef292b02df999e2d1a6002d27500982c652b17203",
    "t10k-images-idx3-ubyte": "1a1a05eab793c14bb050b398624a11b0ffd1a2953baed553b1b9bd079e2a20be",
    "t10k-labels-idx1-ubyte": "b91679a0acfe4ba0e50a2437a903084cba1f5f92592b016a25a7dfd00455798b",
}
"""File name (without ``.gz``) -> SHA-256 of the standard gzipped file ``<name>.gz``."""

MIRRORS: tuple[str, ...] = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)
"""Base URLs tried in order; each serves the four ``.gz`` files."""

DOWNLOAD_TIMEOUT = 60.0
"""Seconds ``urllib`` waits on a connection before giving up on a mirror."""

CONNECT_TIMEOUT = 3.0
"""Seconds the mirrors have, all at once, to accept a connection before any download: those
that do not are skipped, and with none the files are reported missing at once (offline, a
lookup of each mirror for each file took 13 s)."""

DATA_DIR_ENV = "EVOLAX_DATA_DIR"

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, eq=False)
class MnistData:
    """MNIST as numpy arrays (any number of images, so subsets are allowed).

    Attributes:
        train_images: ``uint8[n_train, 28, 28]`` (60,000 in the standard set), 0 = background.
        train_labels: ``uint8[n_train]`` digits 0-9 (any integer dtype is accepted).
        test_images: ``uint8[n_test, 28, 28]`` (10,000 in the standard set).
        test_labels: ``uint8[n_test]``.
    """

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray

    def __post_init__(self):
        for split in ("train", "test"):
            images = np.asarray(getattr(self, f"{split}_images"))
            labels = np.asarray(getattr(self, f"{split}_labels"))
            if images.dtype != np.uint8 or images.shape[1:] != IMAGE_SHAPE:
                raise ValueError(
                    f"{split}_images must be uint8[n, 28, 28], "
                    f"got {images.dtype}{list(images.shape)}"
                )
            if (
                not np.issubdtype(labels.dtype, np.integer)
                or labels.shape != images.shape[:1]
                or (labels.size and (labels.min() < 0 or labels.max() >= N_CLASSES))
            ):
                raise ValueError(
                    f"{split}_labels must be integers in [0, {N_CLASSES}) of shape "
                    f"{images.shape[:1]} (one per image), got {labels.dtype}{list(labels.shape)}"
                )
            object.__setattr__(self, f"{split}_images", images)
            object.__setattr__(self, f"{split}_labels", labels)


def search_dirs(data_dir: str | os.PathLike | None = None) -> list[Path]:
    """The folders :func:`load_mnist` looks in, in order.

    ``data_dir`` (else ``$EVOLAX_DATA_DIR`` when set), then the cache folder; each followed
    by its ``mnist/`` subfolder.
    """
    roots = []
    if data_dir is not None:
        roots.append(Path(data_dir).expanduser())
    elif os.environ.get(DATA_DIR_ENV):
        roots.append(Path(os.environ[DATA_DIR_ENV]).expanduser())
    roots.append(cache_dir())
    folders = [folder for root in roots for folder in (root, root / "mnist")]
    return list(dict.fromkeys(folders))


def load_mnist(data_dir: str | os.PathLike | None = None, download: bool = True) -> MnistData:
    """Load MNIST, downloading it into the cache folder the first time if it is missing.

    Each of the four files (``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
    ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``, gzipped with ``.gz`` or not) is
    looked for in ``data_dir`` (else ``$EVOLAX_DATA_DIR``), then in the cache folder
    ``$XDG_CACHE_HOME/evolax`` (default ``~/.cache/evolax``), each folder directly and in its
    ``mnist/`` subfolder. A gzipped file must match the standard file's SHA-256; an un-gzipped
    one must hold the standard shape. Missing files are downloaded (with ``download=True``)
    from :data:`MIRRORS` into ``<cache>/mnist/``, checked, then renamed into place.

    Args:
        data_dir: a folder holding the files; ``None`` to use ``$EVOLAX_DATA_DIR``.
        download: download missing files.

    Returns:
        the dataset.

    Raises:
        FileNotFoundError: files are missing and could not be downloaded; the message lists
            the file names and every folder searched.
        ValueError: a file fails its checksum or shape check (the message names it).
    """
    folders = search_dirs(data_dir)
    paths = {field: _find(name, folders) for field, (name, _) in FILES.items()}
    missing = [FILES[field][0] for field, path in paths.items() if path is None]
    if missing:
        if not download:
            raise FileNotFoundError(_missing_message(missing, folders, "download=False"))
        target = cache_dir() / "mnist"
        _download(missing, target, folders)
        paths = {field: _find(name, folders) for field, (name, _) in FILES.items()}
    # _download raises unless every file is now found, so no path is None here
    arrays = {
        field: _read_verified(cast(Path, path), FILES[field][1]) for field, path in paths.items()
    }
    return MnistData(**arrays)


def _find(name: str, folders: list[Path]) -> Path | None:
    for folder in folders:
        for candidate in (folder / f"{name}.gz", folder / name):
            if candidate.is_file():
                return candidate
    return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _read_verified(path: Path, shape: tuple[int, ...]) -> np.ndarray:
    """Check a gzipped file's SHA-256 (an un-gzipped one's shape), then read it."""
    if path.suffix == ".gz" and path.stem in SHA256:
        actual = _sha256(path)
        if actual != SHA256[path.stem]:
            raise ValueError(
                f"{path}: SHA-256 {actual} does not match the standard MNIST file's "
                f"{SHA256[path.stem]}; delete or replace the file"
            )
    array = read_idx(path)
    if array.dtype != np.uint8 or array.shape != shape:
        raise ValueError(
            f"{path}: expected uint8{list(shape)} (standard MNIST), "
            f"got {array.dtype}{list(array.shape)}"
        )
    return array


def _missing_message(missing: list[str], folders: list[Path], reason: str) -> str:
    names = ", ".join(f"{name}[.gz]" for name in FILE_NAMES)
    searched = "\n".join(f"  {folder}" for folder in folders)
    return (
        f"MNIST files not found ({reason}): missing {', '.join(missing)}.\n"
        f"Looked for the four files {names} in:\n{searched}\n"
        f"Put the files in one of these folders, or set {DATA_DIR_ENV} to a folder that holds "
        "them (directly or in its mnist/ subfolder)."
    )


class _ChecksumError(ValueError):
    pass


def _download(missing: list[str], target: Path, folders: list[Path]) -> None:
    """Download each missing file's ``.gz`` into ``target``, trying every mirror that answers
    (:func:`_answering`) in turn."""
    mirrors = _answering(MIRRORS, CONNECT_TIMEOUT)
    if MIRRORS and not mirrors:
        reason = f"no download mirror answered within {CONNECT_TIMEOUT:g} s: offline?"
        raise FileNotFoundError(_missing_message(missing, folders, reason))
    target.mkdir(parents=True, exist_ok=True)
    for name in missing:
        filename = f"{name}.gz"
        failures: list[_ChecksumError | str] = []
        for base in mirrors:
            url = base.rstrip("/") + "/" + filename
            logger.info("downloading %s", url)
            try:
                _fetch(url, target / filename, SHA256[name])
                break
            except _ChecksumError as error:
                failures.append(error)
            except (OSError, http.client.HTTPException, ValueError) as error:
                failures.append(f"{url}: {error}")
        else:
            checksum = [str(f) for f in failures if isinstance(f, _ChecksumError)]
            if checksum:
                raise ValueError(
                    f"downloaded {filename} failed its checksum: " + "; ".join(checksum)
                )
            tried = "".join(f"\n  {failure}" for failure in failures) or " (no mirrors)"
            message = _missing_message(missing, folders, "the download failed")
            raise FileNotFoundError(f"{message}\nDownload errors for {filename}:{tried}")


def _answering(mirrors: tuple[str, ...], timeout: float) -> list[str]:
    """The ``mirrors`` whose host accepts a connection within ``timeout`` seconds, all tried
    at once (name lookups included, in threads that are left behind if they hang), in order."""
    answered: list[str] = []

    def connect(url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        proxy = urllib.request.getproxies().get(parts.scheme)
        if proxy and not urllib.request.proxy_bypass(parts.hostname or ""):
            parts = urllib.parse.urlsplit(proxy)  # the proxy is what must answer
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with contextlib.suppress(OSError, ValueError):
            socket.create_connection((parts.hostname, port), timeout=timeout).close()
            answered.append(url)

    threads = [threading.Thread(target=connect, args=(url,), daemon=True) for url in mirrors]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [url for url in mirrors if url in answered]


def _fetch(url: str, destination: Path, sha256: str) -> None:
    """Stream ``url`` into a temporary file beside ``destination``; check it, then rename."""
    fd, temporary = tempfile.mkstemp(
        dir=destination.parent, prefix=f".{destination.name}.", suffix=".part"
    )
    try:
        digest = hashlib.sha256()
        with (
            os.fdopen(fd, "wb") as file,
            urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response,
        ):
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                file.write(chunk)
        if digest.hexdigest() != sha256:
            raise _ChecksumError(
                f"{url}: {destination.name} has SHA-256 {digest.hexdigest()}, expected {sha256}"
            )
        os.replace(temporary, destination)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
