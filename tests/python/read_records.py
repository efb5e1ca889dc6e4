"""numpy's side of the record interop test (tests/derive_numpy.rs).

    read_records.py SPEC.json

SPEC names a .ra file of records Rust wrote, the numpy dtype Rust describes it with (as JSON,
`Layout::numpy_descr_json`, and as Python source, `Layout::numpy_descr`), and the values of its
records in file order (column-major). This script parses the header itself, builds the dtype
from the JSON, views the data with numpy and checks every field of every record.
"""
import ast
import json
import struct
import sys

import numpy as np

MAGIC = 0x7961727261776172


def dtype_from_json(d):
    """A dtype from its JSON form: a string, or a list of [name, dtype] / [name, dtype, shape]."""
    if isinstance(d, str):
        return np.dtype(d)
    fields = []
    for entry in d:
        name, base = entry[0], dtype_from_json(entry[1])
        if len(entry) == 3:
            fields.append((name, base, tuple(entry[2])))
        else:
            fields.append((name, base))
    return np.dtype(fields)


def read_ra(path):
    with open(path, "rb") as f:
        raw = f.read()
    magic, flags, eltype, elbyte, size, ndims = struct.unpack_from("<6Q", raw, 0)
    assert magic == MAGIC, f"bad magic {magic:#x}"
    assert flags == 0, f"flags {flags}"
    dims = list(struct.unpack_from(f"<{ndims}Q", raw, 48))
    start = 48 + 8 * ndims
    return eltype, elbyte, size, dims, raw[start:start + size]


def check(value, expected, where):
    if isinstance(expected, dict):
        assert set(expected) == set(value.dtype.names), f"{where}: fields {value.dtype.names}"
        for name, exp in expected.items():
            check(value[name], exp, f"{where}.{name}")
    elif isinstance(value, np.ndarray) and value.ndim > 0:
        assert value.shape[0] == len(expected), f"{where}: shape {value.shape}"
        for i, (v, e) in enumerate(zip(value, expected)):
            check(v, e, f"{where}[{i}]")
    elif value.dtype.kind == "c":
        assert complex(value) == complex(expected[0], expected[1]), f"{where}: {value} != {expected}"
    elif value.dtype.kind == "V" and value.dtype.itemsize == 2:
        # bfloat16, which numpy has no type for: the high half of a float32.
        bits = int.from_bytes(bytes(value), "little") << 16
        got = struct.unpack("<f", bits.to_bytes(4, "little"))[0]
        assert got == expected, f"{where}: bfloat16 {got} != {expected}"
    else:
        got = value.item()
        # A bool field is a u1 of 0 or 1 that the schema marks bool: numpy's `?`.
        assert type(got) is type(expected) and got == expected, f"{where}: {got!r} != {expected!r}"


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    eltype, elbyte, size, dims, data = read_ra(spec["file"])
    dt = dtype_from_json(spec["descr_json"])
    assert dt == np.dtype(ast.literal_eval(spec["descr"])), "the two descr forms disagree"
    assert eltype == 0, f"eltype {eltype}"
    assert dt.itemsize == elbyte, f"numpy itemsize {dt.itemsize}, elbyte {elbyte}"
    assert dims == spec["dims"], f"dims {dims}"
    arr = np.frombuffer(data, dtype=dt).reshape(dims, order="F")
    records = spec["records"]
    assert arr.size == len(records)
    for idx in np.ndindex(*dims):
        k, stride = 0, 1
        for i, d in zip(idx, dims):
            k += i * stride
            stride *= d
        check(arr[idx], records[k], f"record{list(idx)}")
    print(f"ok: {len(records)} records of {dt}")


if __name__ == "__main__":
    main()
