"""IDX reading and MNIST loading: local files, checksums, and downloads from a local server."""

import contextlib
import gzip
import hashlib
import http.server
import os
import shutil
import struct
import threading
from pathlib import Path

import numpy as np
import pytest

from evolax.data import mnist
from evolax.data.idx import read_idx
from evolax.data.mnist import MnistData, load_mnist

NAMES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
# Published MNIST facts (LeCun et al.): digits per class in each split.
TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def shared_mnist_dir() -> Path:
    """The folder holding the four MNIST .gz files; skip the test if they are absent."""
    root = os.environ.get("EVOLAX_DATA_DIR")
    root = Path(root) if root else Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
    for folder in (root / "mnist", root):
        if all((folder / f"{name}.gz").is_file() for name in NAMES):
            return folder.resolve()
    pytest.skip(f"MNIST .gz files not found in {root} or {root / 'mnist'} (set EVOLAX_DATA_DIR)")


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """An empty cache (XDG_CACHE_HOME), no EVOLAX_DATA_DIR, no proxies, no real mirrors."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("EVOLAX_DATA_DIR", raising=False)
    monkeypatch.setenv("no_proxy", "*")
    monkeypatch.setenv("NO_PROXY", "*")
    monkeypatch.setattr(mnist, "MIRRORS", ())
    return tmp_path


@contextlib.contextmanager
def serve(folder: Path):
    """A local HTTP server for ``folder``; yields its base URL and the list of paths requested."""
    requested = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(folder), **kwargs)

        def do_GET(self):
            requested.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", requested
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def copy_gz(folder: Path, destination: Path) -> Path:
    destination.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        shutil.copy(folder / f"{name}.gz", destination / f"{name}.gz")
    return destination


def corrupt(path: Path) -> None:
    """Flip one byte in the middle of a (writable) file."""
    path.chmod(0o644)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


# --- read_idx -------------------------------------------------------------------------------


def idx_bytes(array: np.ndarray, code: int) -> bytes:
    """An IDX file written by hand: magic, big-endian sizes, big-endian data."""
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


CASES = [
    (0x08, np.uint8, (3, 4, 5)),
    (0x09, np.int8, (7,)),
    (0x0B, np.int16, (2, 3)),
    (0x0C, np.int32, (4, 1, 2, 3)),
    (0x0D, np.float32, (5, 2)),
    (0x0E, np.float64, (3, 0, 2)),
]


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize(("code", "dtype", "shape"), CASES)
def test_read_idx_round_trips_every_dtype(tmp_path, code, dtype, shape, gz):
    rng = np.random.default_rng(code)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        array = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    else:
        array = (rng.standard_normal(shape) * 1e3).astype(dtype)
    raw = idx_bytes(array, code)
    path = tmp_path / "array.idx"
    path.write_bytes(gzip.compress(raw) if gz else raw)
    result = read_idx(path)
    assert result.dtype == np.dtype(dtype) and result.dtype.isnative
    assert result.shape == shape
    np.testing.assert_array_equal(result, array)
    result[...] = 0  # a writable copy, not a view of the file's bytes


def test_read_idx_detects_gzip_by_magic_not_name(tmp_path):
    array = np.arange(12, dtype=np.int32).reshape(3, 4)
    raw = idx_bytes(array, 0x0C)
    (tmp_path / "compressed.idx").write_bytes(gzip.compress(raw))
    (tmp_path / "plain.gz").write_bytes(raw)
    np.testing.assert_array_equal(read_idx(tmp_path / "compressed.idx"), array)
    np.testing.assert_array_equal(read_idx(str(tmp_path / "plain.gz")), array)


@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_rejects_truncated_data(tmp_path, gz):
    raw = idx_bytes(np.arange(10, dtype=np.int16), 0x0B)[:-1]
    path = tmp_path / "short.idx"
    path.write_bytes(gzip.compress(raw) if gz else raw)
    with pytest.raises(ValueError, match="truncated") as error:
        read_idx(path)
    assert str(path) in str(error.value)


def test_read_idx_rejects_truncated_header_and_gzip_stream(tmp_path):
    raw = idx_bytes(np.zeros((2, 3, 4), np.uint8), 0x08)
    header_only = tmp_path / "header.idx"
    header_only.write_bytes(raw[:10])  # 3 dimensions need a 16-byte header
    with pytest.raises(ValueError, match="truncated"):
        read_idx(header_only)
    cut_stream = tmp_path / "stream.idx"
    cut_stream.write_bytes(gzip.compress(raw)[:-12])
    with pytest.raises(ValueError, match="gzip") as error:
        read_idx(cut_stream)
    assert str(cut_stream) in str(error.value)


def test_read_idx_rejects_trailing_data(tmp_path):
    path = tmp_path / "long.idx"
    path.write_bytes(idx_bytes(np.arange(4, dtype=np.uint8), 0x08) + b"\x00")
    with pytest.raises(ValueError, match="1 bytes after"):
        read_idx(path)


@pytest.mark.parametrize("first_bytes", [b"\x01\x00", b"\x00\x01", b"PK"])
def test_read_idx_rejects_bad_magic(tmp_path, first_bytes):
    path = tmp_path / "bad.idx"
    path.write_bytes(first_bytes + idx_bytes(np.arange(4, dtype=np.uint8), 0x08)[2:])
    with pytest.raises(ValueError, match="magic") as error:
        read_idx(path)
    assert str(path) in str(error.value)


def test_read_idx_rejects_unknown_dtype_code(tmp_path):
    path = tmp_path / "code.idx"
    path.write_bytes(bytes([0, 0, 0x0A, 1]) + struct.pack(">I", 2) + b"\x00\x00")
    with pytest.raises(ValueError, match="0x0A") as error:
        read_idx(path)
    assert str(path) in str(error.value)


# --- load_mnist from local files --------------------------------------------------------------


@pytest.fixture(scope="module")
def shared_data() -> MnistData:
    folder = shared_mnist_dir()
    return load_mnist(folder, download=False)


def test_loads_shared_data_via_env_var(isolated, monkeypatch):
    folder = shared_mnist_dir()
    monkeypatch.setenv("EVOLAX_DATA_DIR", str(folder.parent))  # files in its mnist/ subfolder
    data = load_mnist(download=False)
    for images, labels, n in [
        (data.train_images, data.train_labels, 60000),
        (data.test_images, data.test_labels, 10000),
    ]:
        assert images.shape == (n, 28, 28) and images.dtype == np.uint8
        assert labels.shape == (n,) and labels.dtype == np.uint8
        assert images.min() == 0 and images.max() == 255
        assert set(np.unique(labels)) == set(range(10))
    assert data.train_labels[0] == 5 and data.test_labels[0] == 7
    assert np.bincount(data.train_labels).tolist() == TRAIN_COUNTS
    assert np.bincount(data.test_labels).tolist() == TEST_COUNTS


def test_loads_ungzipped_files(isolated, shared_data):
    folder = isolated / "plain"
    folder.mkdir()
    for name in NAMES:
        with gzip.open(shared_mnist_dir() / f"{name}.gz") as source:
            (folder / name).write_bytes(source.read())
    data = load_mnist(folder, download=False)
    for field in ("train_images", "train_labels", "test_images", "test_labels"):
        np.testing.assert_array_equal(getattr(data, field), getattr(shared_data, field))


def test_ungzipped_file_of_wrong_size_is_rejected(isolated):
    folder = copy_gz(shared_mnist_dir(), isolated / "data")
    (folder / "t10k-labels-idx1-ubyte.gz").unlink()
    (folder / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(np.arange(10, dtype=np.uint8), 8))
    with pytest.raises(ValueError, match="t10k-labels-idx1-ubyte"):
        load_mnist(folder, download=False)


def test_corrupted_local_file_fails_its_checksum(isolated):
    folder = copy_gz(shared_mnist_dir(), isolated / "data")
    corrupt(folder / "train-labels-idx1-ubyte.gz")
    with pytest.raises(ValueError, match=r"train-labels-idx1-ubyte\.gz.*SHA-256"):
        load_mnist(folder, download=False)


def assert_missing_message(message: str, folders: list[Path]) -> None:
    for name in NAMES:
        assert name in message
    for folder in folders:
        assert f"  {folder}\n" in message
    assert "EVOLAX_DATA_DIR" in message


def searched(data_dir: Path, cache: Path) -> list[Path]:
    return [data_dir, data_dir / "mnist", cache / "evolax", cache / "evolax" / "mnist"]


def test_missing_files_without_download(isolated):
    empty = isolated / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError) as error:
        load_mnist(empty, download=False)
    assert_missing_message(str(error.value), searched(empty, isolated / "xdg"))
    assert not (isolated / "xdg").exists()


def test_missing_files_when_every_mirror_fails(isolated, monkeypatch):
    empty = isolated / "empty"
    (isolated / "served").mkdir()
    with serve(isolated / "served") as (url, requested):
        monkeypatch.setattr(mnist, "MIRRORS", (url,))
        with pytest.raises(FileNotFoundError) as error:
            load_mnist(empty)
    message = str(error.value)
    assert_missing_message(message, searched(empty, isolated / "xdg"))
    assert "404" in message and url in message
    assert requested == ["/train-images-idx3-ubyte.gz"]  # gave up at the first missing file
    assert list((isolated / "xdg" / "evolax" / "mnist").iterdir()) == []  # no partial files


def test_no_mirror_answering_is_reported_at_once(isolated, monkeypatch):
    """Offline, the mirrors are tried once, all at once, within CONNECT_TIMEOUT: no download
    is attempted (it took 13 s of look-ups before the error)."""
    import socket

    with socket.socket() as closed:  # a port nothing listens on: connections are refused
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/"
        monkeypatch.setattr(mnist, "MIRRORS", (url,))
        monkeypatch.setattr(mnist, "_fetch", lambda *args: pytest.fail("downloaded"))
        with pytest.raises(FileNotFoundError, match="no download mirror answered within 3 s"):
            load_mnist(isolated / "empty")


# --- downloads from a local server ------------------------------------------------------------


def test_downloads_once_into_the_cache(isolated, monkeypatch, shared_data):
    served = copy_gz(shared_mnist_dir(), isolated / "served")
    (isolated / "nothing").mkdir()
    with serve(isolated / "nothing") as (dead, _), serve(served) as (url, requested):
        monkeypatch.setattr(mnist, "MIRRORS", (dead, url))  # the first mirror has nothing
        data = load_mnist()
        assert sorted(requested) == sorted(f"/{name}.gz" for name in NAMES)
        again = load_mnist()  # from the cache: no more requests
        assert len(requested) == 4
    cache = isolated / "xdg" / "evolax" / "mnist"
    assert sorted(p.name for p in cache.iterdir()) == sorted(f"{name}.gz" for name in NAMES)
    for name in NAMES:
        digest = hashlib.sha256((cache / f"{name}.gz").read_bytes()).hexdigest()
        assert digest == mnist.SHA256[name]
    for field in ("train_images", "train_labels", "test_images", "test_labels"):
        np.testing.assert_array_equal(getattr(data, field), getattr(shared_data, field))
        np.testing.assert_array_equal(getattr(again, field), getattr(shared_data, field))


def test_corrupted_download_fails_its_checksum_and_leaves_nothing(isolated, monkeypatch):
    served = copy_gz(shared_mnist_dir(), isolated / "served")
    corrupt(served / "t10k-labels-idx1-ubyte.gz")
    with serve(served) as (url, _):
        monkeypatch.setattr(mnist, "MIRRORS", (url,))
        with pytest.raises(ValueError, match=r"t10k-labels-idx1-ubyte\.gz.*checksum"):
            load_mnist()
    cache = isolated / "xdg" / "evolax" / "mnist"
    left = sorted(p.name for p in cache.iterdir())
    assert left == sorted(f"{name}.gz" for name in NAMES[:3])  # only the verified files


# --- MnistData ----------------------------------------------------------------------------------


def test_mnist_data_checks_shapes_and_labels():
    images = np.zeros((4, 28, 28), np.uint8)
    labels = np.array([0, 1, 2, 9])
    MnistData(images, labels, images[:2], labels[:2])
    with pytest.raises(ValueError, match="train_images"):
        MnistData(images.astype(np.float32), labels, images, labels)
    with pytest.raises(ValueError, match="test_images"):
        MnistData(images, labels, images[:, :27], labels)
    with pytest.raises(ValueError, match="train_labels"):
        MnistData(images, labels[:3], images, labels)
    with pytest.raises(ValueError, match="test_labels"):
        MnistData(images, labels, images, np.array([0, 1, 2, 10]))
