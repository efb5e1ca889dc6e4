"""Shared helpers of the package's tests: an independent reader of .ra bytes (struct and numpy,
written here from the format's table, not from the package), and the reference files' folder."""

import os
import struct
from pathlib import Path

import numpy as np
import pytest

MAGIC = 0x7961727261776172
REFERENCE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "reference"

# (eltype, elbyte) -> numpy type, written here independently of the Rust table.
HAND_TYPES = {
    (1, 1): "i1", (1, 2): "i2", (1, 4): "i4", (1, 8): "i8",
    (2, 1): "u1", (2, 2): "u2", (2, 4): "u4", (2, 8): "u8",
    (3, 2): "f2", (3, 4): "f4", (3, 8): "f8",
    (4, 8): "c8", (4, 16): "c16",
}


def parse_by_hand(raw: bytes):
    """(header dict, data bytes as stored, trailing bytes) of a .ra file's bytes."""
    magic, flags, eltype, elbyte, size, ndims = struct.unpack_from("<6Q", raw, 0)
    assert magic == MAGIC, hex(magic)
    dims = list(struct.unpack_from(f"<{ndims}Q", raw, 48))
    start = 48 + 8 * ndims
    data = raw[start:start + size]
    assert len(data) == size
    header = dict(flags=flags, eltype=eltype, elbyte=elbyte, size=size, dims=dims)
    return header, data, raw[start + size:]


def numpy_view_by_hand(path) -> np.ndarray:
    """numpy's own view of a .ra file of a primitive type: shape the dims reversed."""
    raw = Path(path).read_bytes()
    h, data, _ = parse_by_hand(raw)
    count = int(np.prod(h["dims"], dtype=np.int64)) if h["dims"] else 1
    if h["flags"] & 2:
        import lz4.block
        data = lz4.block.decompress(data, uncompressed_size=count * h["elbyte"])
    order = ">" if h["flags"] & 1 else "<"
    dtype = np.dtype(order + HAND_TYPES[(h["eltype"], h["elbyte"])])
    return np.frombuffer(data, dtype=dtype, count=count).reshape(h["dims"][::-1])


def make_ra(eltype, elbyte, dims, data: bytes, flags=0, trailing=b"") -> bytes:
    """A .ra file's bytes built by hand."""
    head = struct.pack("<6Q", MAGIC, flags, eltype, elbyte, len(data), len(dims))
    return head + struct.pack(f"<{len(dims)}Q", *dims) + data + trailing


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


def shared_dir():
    """The folder the Rust side of the interop tests (tests/python_package.rs) shares with
    these tests, or None when pytest runs on its own."""
    d = os.environ.get("RAWARRAY_INTEROP_DIR")
    return Path(d) if d else None
