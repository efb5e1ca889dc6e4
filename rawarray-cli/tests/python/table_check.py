"""pyarrow's and DuckDB's side of the Parquet and Arrow tests (rawarray-cli/tests/tables.rs).

    table_check.py SPEC.json

SPEC lists cases: a .ra file of records `ra` wrote, the numpy dtype of one record as JSON
(`Layout::numpy_descr_json`), the record schema (the trailer's `schema`, for the meanings numpy
has no dtype for: bool, bfloat16, complex32, 128-bit integers), whether the file is big-endian,
and the Parquet (and Arrow IPC) files `ra convert` made of it. numpy reads the .ra file (its
own header parse, no Rust); pyarrow reads the Parquet and Arrow files and DuckDB the Parquet
file, each by itself; every column must hold the values numpy read, by the documented mapping
(doc/arrow.md).
"""
import json
import struct
import sys

import duckdb
import numpy as np
import pyarrow.feather as feather
import pyarrow.parquet as pq

MAGIC = 0x7961727261776172


def dtype_from_json(d):
    if isinstance(d, str):
        return np.dtype(d)
    if len(d) == 2 and isinstance(d[0], str) and isinstance(d[1], list):
        return np.dtype((np.dtype(d[0]), tuple(d[1])))  # a sub-array: [base, shape]
    fields = []
    for entry in d:
        name, base = entry[0], dtype_from_json(entry[1])
        fields.append((name, base, tuple(entry[2])) if len(entry) == 3 else (name, base))
    return np.dtype(fields)


def read_ra(path, dtype, big_endian):
    with open(path, "rb") as f:
        raw = f.read()
    magic, flags, _eltype, _elbyte, size, ndims = struct.unpack_from("<6Q", raw, 0)
    assert magic == MAGIC, f"{path}: bad magic {magic:#x}"
    assert bool(flags & 1) == big_endian, f"{path}: flags {flags}"
    start = 48 + 8 * ndims
    if big_endian:
        dtype = dtype.newbyteorder(">")
    return np.frombuffer(raw[start:start + size], dtype=dtype)


def expected(layout, v, be):
    """The Python value a column holds for numpy's value `v` laid out as `layout`."""
    kind = layout["kind"]
    if kind == "record":
        return {f["name"]: expected(f["layout"], v[f["name"]], be) for f in layout["fields"]}
    if kind == "array":
        item = layout["item"]
        if item == {"kind": "scalar", "eltype": "uint", "elbyte": 1}:
            return bytes(np.ascontiguousarray(v, dtype="u1").tobytes())
        return [expected(item, v[i], be) for i in range(layout["len"])]
    eltype, elbyte = layout["eltype"], layout["elbyte"]
    if layout.get("logical") == "bool":
        return bool(v)
    # numpy's own types read either byte order.
    if v.dtype.kind == "c":
        return {"re": v.real.item(), "im": v.imag.item()}
    if v.dtype.kind != "V":
        return v.item()
    raw = np.ascontiguousarray(v).tobytes()
    if be:
        # Big-endian input: the raw bytes of each scalar (numpy has no type for some) are
        # swapped here, complex numbers part by part.
        w = elbyte // 2 if eltype == "complex" else elbyte
        raw = b"".join(raw[i:i + w][::-1] for i in range(0, len(raw), w))
    if eltype in ("int", "uint", "float") and elbyte == 16:
        return raw  # FixedSizeBinary(16), little-endian
    if eltype == "bfloat16":
        return struct.unpack("<f", (int.from_bytes(raw, "little") << 16).to_bytes(4, "little"))[0]
    if eltype == "complex":
        part = elbyte // 2
        fmt = {2: "<e", 4: "<f", 8: "<d"}[part]
        return {"re": struct.unpack(fmt, raw[:part])[0], "im": struct.unpack(fmt, raw[part:])[0]}
    return v.item()


def same(got, want, where):
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), f"{where}: {got!r} != {want!r}"
        for k in want:
            same(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            same(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert float(got) == want, f"{where}: {got!r} != {want!r}"
    else:
        assert got == want, f"{where}: {got!r} ({type(got)}) != {want!r} ({type(want)})"


def check_table(table, arr, layout, who, be):
    fields = layout["fields"] if layout["kind"] == "record" else [{"name": "values", "layout": layout}]
    names = [f["name"] for f in fields]
    assert table.column_names == names, f"{who}: columns {table.column_names} != {names}"
    assert table.num_rows == len(arr), f"{who}: {table.num_rows} rows != {len(arr)}"
    for f in fields:
        col = table.column(f["name"]).to_pylist()
        values = arr[f["name"]] if layout["kind"] == "record" else arr
        for r in range(len(arr)):
            same(col[r], expected(f["layout"], values[r], be), f"{who}: row {r} column {f['name']}")


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    checked = 0
    for case in spec:
        arr = read_ra(case["ra"], dtype_from_json(case["descr"]), case["big_endian"])
        layout, be = case["layout"], case["big_endian"]
        check_table(pq.read_table(case["parquet"]), arr, layout, f"pyarrow {case['parquet']}", be)
        con = duckdb.connect()
        duck = con.sql(f"SELECT * FROM read_parquet('{case['parquet']}')").to_arrow_table()
        check_table(duck, arr, layout, f"duckdb {case['parquet']}", be)
        # The parameters, as every Parquet reader sees them: key-value metadata.
        kv = pq.read_metadata(case["parquet"]).metadata or {}
        if case.get("params") is not None:
            assert json.loads(kv[b"rawarray.params"]) == case["params"], kv
        if case.get("arrow"):
            check_table(feather.read_table(case["arrow"]), arr, layout, f"pyarrow {case['arrow']}", be)
        checked += 1
    print(f"checked {checked}")


if __name__ == "__main__":
    main()
