"""numpy's side of the core interop test (tests/numpy_interop.rs).

    numpy_core.py check DIR   read every .ra file Rust wrote in DIR with numpy and check its values
    numpy_core.py write DIR   write .ra files with numpy for Rust to read

A file is named DTYPE_SHAPE[_be][_z].ra, e.g. i2_3x4.ra, c8_scalar.ra, f8_3x4_be.ra.
Values follow formulas both sides compute independently, indexed by the column-major position k,
which is numpy's C-order position once the dims are reversed.
This parser is independent of the Rust one: its own eltype table, its own LZ4 (liblz4 via lz4.block).
"""
import os
import sys

import numpy as np

MAGIC = 0x7961727261776172
# (eltype, elbyte) -> numpy dtype; written here independently of the Rust table.
DTYPES = {
    (1, 1): "i1", (1, 2): "i2", (1, 4): "i4", (1, 8): "i8",
    (2, 1): "u1", (2, 2): "u2", (2, 4): "u4", (2, 8): "u8",
    (3, 2): "f2", (3, 4): "f4", (3, 8): "f8",
    (4, 8): "c8", (4, 16): "c16",
}
CODES = {v: k for k, v in DTYPES.items()}


def expected(dtype, n):
    k = np.arange(n, dtype=np.uint64)
    kind = dtype[0]
    if kind in "iu":
        return (k * np.uint64(37) + np.uint64(11)).astype("<" + dtype)
    if kind == "f":
        return (k.astype(np.float64) * 0.25 - 3.0).astype("<" + dtype)
    if kind == "c":
        kf = k.astype(np.float64)
        return (kf * 0.5 - 1j * (kf * 0.25)).astype("<" + dtype)
    raise ValueError(dtype)


def parse_name(name):
    parts = name[:-3].split("_")
    dtype, shape = parts[0], parts[1]
    dims = [] if shape == "scalar" else [int(d) for d in shape.split("x")]
    return dtype, dims, "be" in parts[2:], "z" in parts[2:]


def read_ra(path):
    raw = open(path, "rb").read()
    magic, flags, eltype, elbyte, size, ndims = np.frombuffer(raw[:48], "<u8").tolist()
    assert magic == MAGIC, hex(magic)
    dims = np.frombuffer(raw[48:48 + 8 * ndims], "<u8").tolist()
    data = raw[48 + 8 * ndims:48 + 8 * ndims + size]
    assert len(data) == size, (len(data), size)
    n = int(np.prod(dims)) if dims else 1
    if flags & 2:
        import lz4.block
        data = lz4.block.decompress(data, uncompressed_size=n * elbyte)
    dtype = np.dtype((">" if flags & 1 else "<") + DTYPES[(eltype, elbyte)])
    arr = np.frombuffer(data, dtype=dtype, count=n)
    return arr.reshape(dims[::-1]), flags, dims


def check(d):
    names = sorted(f for f in os.listdir(d) if f.endswith(".ra"))
    assert names, "no files"
    for name in names:
        dtype, dims, be, z = parse_name(name)
        arr, flags, fdims = read_ra(os.path.join(d, name))
        assert fdims == dims, (name, fdims, dims)
        assert arr.dtype.kind == np.dtype(dtype).kind and arr.dtype.itemsize == np.dtype(dtype).itemsize, (name, arr.dtype)
        assert bool(flags & 1) == be and bool(flags & 2) == z, (name, flags)
        assert arr.shape == tuple(dims[::-1]), (name, arr.shape)
        want = expected(dtype, arr.size)
        got = arr.astype("<" + dtype).ravel()
        assert np.array_equal(got, want), (name, got[:8], want[:8])
        if len(dims) == 2 and arr.size:
            # Rust's a[i, j] (first index fastest) is numpy's arr[j, i].
            i, j = dims[0] - 1, dims[1] - 1
            assert arr[j, i] == want[i + dims[0] * j], name
        print("ok", name)


def write(d):
    def put(dtype, dims, be=False, z=False):
        n = int(np.prod(dims)) if dims else 1
        arr = expected(dtype, n).astype((">" if be else "<") + dtype)
        data = arr.tobytes()
        flags = (1 if be else 0) | (2 if z else 0)
        if z:
            import lz4.block
            data = lz4.block.compress(data, store_size=False)
        eltype, elbyte = CODES[dtype]
        header = np.array([MAGIC, flags, eltype, elbyte, len(data), len(dims)] + list(dims), "<u8")
        shape = "x".join(map(str, dims)) if dims else "scalar"
        name = "_".join([dtype, shape] + (["be"] if be else []) + (["z"] if z else [])) + ".ra"
        with open(os.path.join(d, name), "wb") as f:
            f.write(header.tobytes() + data)
    for dtype in DTYPES.values():
        put(dtype, [3, 4])
    put("f4", [2, 3, 4])
    put("i8", [])
    put("f8", [3, 4], be=True)
    put("c16", [5], be=True)
    put("u2", [7, 9], z=True)
    put("f4", [0, 3])


if __name__ == "__main__":
    {"check": check, "write": write}[sys.argv[1]](sys.argv[2])
