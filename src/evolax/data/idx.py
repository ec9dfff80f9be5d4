"""Read the IDX file format (MNIST's), gzipped or not."""

from __future__ import annotations

import gzip
import math
import os
import struct
import zlib
from pathlib import Path

import numpy as np

GZIP_MAGIC = b"\x1f\x8b"

IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
"""IDX dtype code -> the big-endian numpy dtype of the data that follows the header."""


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file into a native-endian numpy array.

    The header is two zero bytes, a dtype code (``0x08`` uint8, ``0x09`` int8, ``0x0B`` int16,
    ``0x0C`` int32, ``0x0D`` float32, ``0x0E`` float64), the number of dimensions ``ndim``,
    then ``ndim`` big-endian uint32 sizes; big-endian data follows. A file starting with the
    gzip magic bytes ``1f 8b`` is decompressed first, whatever its name.

    Args:
        path: the file.

    Returns:
        an array of the header's shape and dtype (native byte order).

    Raises:
        ValueError: naming ``path``, for a bad magic number, an unknown dtype code, a corrupt
            gzip stream, or data shorter (truncated) or longer than the header says.
    """
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as error:
            raise ValueError(f"{path}: corrupt or truncated gzip stream ({error})") from error
    return _parse(raw, path)


def _parse(raw: bytes, path: Path) -> np.ndarray:
    if len(raw) < 4:
        raise ValueError(f"{path}: truncated IDX file: {len(raw)} bytes, shorter than a header")
    if raw[:2] != b"\x00\x00":
        raise ValueError(
            f"{path}: bad IDX magic number {raw[:4].hex()}: expected two zero bytes, a dtype "
            "code and the number of dimensions"
        )
    code, ndim = raw[2], raw[3]
    if code not in IDX_DTYPES:
        known = ", ".join(f"0x{c:02X}" for c in IDX_DTYPES)
        raise ValueError(f"{path}: unknown IDX dtype code 0x{code:02X} (known: {known})")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(
            f"{path}: truncated IDX file: the header of {ndim} dimensions needs {header} bytes, "
            f"the file has {len(raw)}"
        )
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    dtype = IDX_DTYPES[code]
    count = math.prod(shape)
    expected = count * dtype.itemsize
    actual = len(raw) - header
    if actual < expected:
        raise ValueError(
            f"{path}: truncated IDX file: shape {shape} of {dtype.name} needs {expected} data "
            f"bytes, the file has {actual}"
        )
    if actual > expected:
        raise ValueError(
            f"{path}: {actual - expected} bytes after the data of shape {shape} that the "
            "header describes"
        )
    data = np.frombuffer(raw, dtype=dtype, count=count, offset=header)
    return data.astype(dtype.newbyteorder("=")).reshape(shape)
