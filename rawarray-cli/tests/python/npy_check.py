"""numpy's side of the `ra convert` tests (rawarray-cli/tests/convert.rs, info.rs).

    npy_check.py check DIR          np.load every DTYPE_DIMS[_be][_z].npy that `ra convert` wrote in
                                    DIR and compare with the formula values and the dims rule
    npy_check.py reference REF DIR  np.load DIR/NAME.npy for every REF/NAME.ra and compare with the
                                    .ra read by numpy itself (its own header parse, no Rust)
    npy_check.py write DIR          write .npy files with numpy (C and Fortran order, both byte
                                    orders, format versions 1.0, 2.0, 3.0) for `ra convert` to read
    npy_check.py records DIR        np.load every rec_DIMS*.npy `ra convert` wrote from a record
                                    file and check its structured dtype and every field
    npy_check.py write_records DIR  write structured .npy files (C and Fortran order) to convert
    npy_check.py slice IN OUT RANGES SQUEEZE
                                    numpy's basic slice of IN (read by numpy) equals OUT, which
                                    `ra slice [--squeeze] IN OUT RANGES` wrote (SQUEEZE: 0 or 1)

Names: DTYPE_DIMS where DIMS are the .ra dims (first fastest) joined by x, or `scalar`; numpy's
shape is the dims reversed. The value at C-order position k of that numpy array (= column-major
position k of the .ra) is a formula of k, computed here and in Rust independently.
"""
import os
import sys

import numpy as np

MAGIC = 0x7961727261776172
# (eltype, elbyte) -> numpy dtype, written here independently of the Rust table.
DTYPES = {
    (1, 1): "i1", (1, 2): "i2", (1, 4): "i4", (1, 8): "i8",
    (2, 1): "u1", (2, 2): "u2", (2, 4): "u4", (2, 8): "u8",
    (3, 2): "f2", (3, 4): "f4", (3, 8): "f8",
    (4, 8): "c8", (4, 16): "c16",
}


def formula(dtype, n):
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
    parts = os.path.splitext(name)[0].split("_")
    dims = [] if parts[1] == "scalar" else [int(d) for d in parts[1].split("x")]
    return parts[0], dims, parts[2:]


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def check(d):
    names = sorted(n for n in os.listdir(d) if n.endswith(".npy"))
    assert names, "no .npy files in " + d
    for name in names:
        dtype, dims, _ = parse_name(name)
        got = np.load(os.path.join(d, name))
        shape = tuple(reversed(dims))
        want = formula(dtype, int(np.prod(shape, dtype=np.int64))).reshape(shape)
        assert got.flags.c_contiguous, name
        assert got.dtype == np.dtype("<" + dtype), (name, got.dtype)
        assert same(got, want), (name, got, want)
        print("ok", name)


def read_ra(path):
    raw = open(path, "rb").read()
    magic, flags, eltype, elbyte, size, ndims = np.frombuffer(raw[:48], "<u8").tolist()
    assert magic == MAGIC and flags == 0, path
    dims = np.frombuffer(raw[48:48 + 8 * ndims], "<u8").tolist()
    start = 48 + 8 * ndims
    data = np.frombuffer(raw[start:start + size], "<" + DTYPES[(eltype, elbyte)])
    return data.reshape(tuple(reversed(dims)))


def reference(ref, d):
    names = sorted(n for n in os.listdir(ref) if n.endswith(".ra"))
    for name in names:
        # The compressed file holds the same array as its plain twin (README of the fixtures).
        source = name.replace("_z.ra", ".ra")
        want = read_ra(os.path.join(ref, source))
        got = np.load(os.path.join(d, name[:-3] + ".npy"))
        assert same(got, want), (name, got, want)
        print("ok", name)


def write(d):
    os.makedirs(d, exist_ok=True)
    cases = [
        ("f4", [4, 3], "C", "<", (1, 0)),
        ("f4", [4, 3], "F", "<", (1, 0)),
        ("i2", [2, 3, 4], "F", ">", (1, 0)),
        ("u8", [3, 4], "C", ">", (2, 0)),
        ("c8", [3, 2], "F", "<", (3, 0)),
        ("c16", [5], "F", ">", (1, 0)),
        ("f2", [2, 3, 2], "C", "<", (2, 0)),
        ("f8", [], "C", "<", (1, 0)),
        ("u1", [7, 1, 3], "F", "|", (1, 0)),
        ("i8", [0, 3], "C", "<", (1, 0)),
    ]
    for dtype, dims, order, endian, version in cases:
        shape = tuple(reversed(dims))
        a = formula(dtype, int(np.prod(shape, dtype=np.int64))).reshape(shape)
        a = a.astype(endian + dtype if endian != "|" else dtype)
        a = a.copy(order=order)  # (np.ascontiguousarray would make a 0-d array 1-d)
        shape_name = "x".join(map(str, dims)) if dims else "scalar"
        tag = "be" if endian == ">" else "le"
        name = f"{dtype}_{shape_name}_{order}_{tag}_v{version[0]}.npy"
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            np.lib.format.write_array(f, a, version=version)
        raw = open(path, "rb").read(512)
        assert raw[6] == version[0], name
        assert (b"'fortran_order': True" in raw) == (not a.flags.c_contiguous), name
        assert np.array_equal(np.load(path), a), name
        print(name)


# One record: t <f8, xyz <f4 (3,), id <u2 (the Rust test's `Rec`, packed: 22 bytes).
REC = np.dtype([("t", "<f8"), ("xyz", "<f4", (3,)), ("id", "<u2")])


def rec_formula(n):
    k = np.arange(n, dtype=np.float64)
    a = np.zeros(n, dtype=REC)
    a["t"] = k * 0.5
    a["xyz"] = np.stack([k, k + 0.25, -k], axis=1).astype("<f4")
    a["id"] = (np.arange(n) * 7 + 1).astype("<u2")
    return a


def records(d):
    names = sorted(n for n in os.listdir(d) if n.startswith("rec_") and n.endswith(".npy"))
    assert names, "no rec_*.npy in " + d
    for name in names:
        _, dims, _ = parse_name(name)
        shape = tuple(reversed(dims))
        got = np.load(os.path.join(d, name))
        assert got.dtype == REC, (name, got.dtype)
        want = rec_formula(int(np.prod(shape, dtype=np.int64))).reshape(shape)
        assert got.shape == want.shape, (name, got.shape)
        for field in REC.names:
            assert np.array_equal(got[field], want[field]), (name, field, got[field], want[field])
        print("ok", name)


def write_records(d):
    os.makedirs(d, exist_ok=True)
    for dims, order in [([4], "C"), ([3, 2], "C"), ([3, 2], "F")]:
        shape = tuple(reversed(dims))
        a = rec_formula(int(np.prod(shape))).reshape(shape).copy(order=order)
        name = "rec_%s_%s.npy" % ("x".join(map(str, dims)), order)
        np.save(os.path.join(d, name), a)
        raw = open(os.path.join(d, name), "rb").read(256)
        assert (b"'fortran_order': True" in raw) == (order == "F"), name
        print(name)


def write_padded(d):
    """An aligned (C struct) dtype, which numpy saves with its gaps as unnamed void fields,
    and the same array repacked as the error message says."""
    from numpy.lib import recfunctions as rf

    aligned = np.dtype([("a", "u1"), ("b", "<f8"), ("c", "<u2")], align=True)
    assert aligned.itemsize == 24 and aligned.fields["b"][1] == 8
    a = np.zeros(3, aligned)
    a["a"] = [1, 2, 3]
    a["b"] = [1.5, 2.5, 3.5]
    a["c"] = [7, 8, 9]
    np.save(os.path.join(d, "padded.npy"), a)
    packed = rf.repack_fields(a)
    assert packed.dtype.itemsize == 11
    np.save(os.path.join(d, "packed.npy"), packed)


def ra_slice(src, out, ranges, squeeze):
    """RANGES in ra's dim order (first fastest), numpy's syntax in each item; numpy's index
    is the items reversed. A single index keeps its dim (length 1) unless SQUEEZE."""
    items = [r.strip() for r in ranges.split(",")] if ranges.strip() else []
    index = []
    for item in reversed(items):
        if ":" in item:
            index.append(slice(*[int(p) if p.strip() else None for p in item.split(":")]))
        else:
            index.append(int(item))
    want = read_ra(src)[tuple(index)]
    if not squeeze:
        kept = tuple(k for k, i in enumerate(index) if isinstance(i, int))
        want = np.expand_dims(want, kept) if kept else want
    got = read_ra(out)
    assert got.shape == want.shape, (ranges, got.shape, want.shape)
    assert same(got, np.ascontiguousarray(want)), (ranges, got, want)
    print("ok", ranges, got.shape)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "check":
        check(sys.argv[2])
    elif cmd == "reference":
        reference(sys.argv[2], sys.argv[3])
    elif cmd == "write":
        write(sys.argv[2])
    elif cmd == "records":
        records(sys.argv[2])
    elif cmd == "write_records":
        write_records(sys.argv[2])
    elif cmd == "write_padded":
        write_padded(sys.argv[2])
    elif cmd == "slice":
        ra_slice(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "1")
    else:
        sys.exit("unknown command " + cmd)
