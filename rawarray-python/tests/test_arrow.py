"""Record files as Arrow tables (doc/arrow.md): the Arrow the package hands pyarrow (through the
C stream interface) equals the structured array numpy holds, column by column; DuckDB and polars
query it and get numpy's answers; tables and DataFrames are written back as records; columns
without a fixed width are refused by name; batches keep memory bounded."""

import struct
import sys

import numpy as np
import pytest

import rawarray
from conftest import parse_by_hand

pa = pytest.importorskip("pyarrow")

# Every scalar type numpy has, complex, bool, fixed arrays (numbers, and bytes), a nested record.
EVERY = np.dtype([
    ("i1", "i1"), ("i2", "<i2"), ("i4", "<i4"), ("i8", "<i8"),
    ("u1", "u1"), ("u2", "<u2"), ("u4", "<u4"), ("u8", "<u8"),
    ("f2", "<f2"), ("f4", "<f4"), ("f8", "<f8"),
    ("c8", "<c8"), ("c16", "<c16"),
    ("ok", "?"),
    ("pos", "<f4", (3,)),
    ("grid", "<i2", (2, 3)),
    ("tag", "u1", (6,)),
    ("body", [("id", "<u4"), ("mass", "<f8"), ("spin", "<f4", (2,))]),
])


def every(n):
    """n records of EVERY with distinct values, extremes included."""
    rng = np.random.default_rng(26)
    a = np.zeros(n, EVERY)
    for name in ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"):
        info = np.iinfo(EVERY[name])
        a[name] = rng.integers(info.min, info.max, n, dtype=EVERY[name], endpoint=True)
        a[name][0], a[name][-1] = info.min, info.max
    for name in ("f2", "f4", "f8"):
        a[name] = rng.normal(size=n) * 100
    a["f8"][1] = np.inf
    a["c8"] = rng.normal(size=n) + 1j * rng.normal(size=n)
    a["c16"] = rng.normal(size=n) - 1j * rng.normal(size=n)
    a["ok"] = rng.integers(0, 2, n).astype(bool)
    a["pos"] = rng.normal(size=(n, 3))
    a["grid"] = rng.integers(-1000, 1000, (n, 2, 3))
    a["tag"] = rng.integers(0, 256, (n, 6))
    a["body"]["id"] = np.arange(n) * 3
    a["body"]["mass"] = rng.uniform(size=n)
    a["body"]["spin"] = rng.normal(size=(n, 2))
    return a


def column_values(col, dtype):
    """An Arrow column as numpy values of `dtype` (a field's), read the way doc/arrow.md maps
    them, from the Arrow data alone."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    n = len(col)
    if dtype.names:
        out = np.zeros(n, dtype)
        for name in dtype.names:
            out[name] = column_values(col.field(name), dtype[name])
        return out
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        if base == np.uint8 and len(shape) == 1:
            # [u8; N]: FixedSizeBinary(N), the bytes as stored.
            assert pa.types.is_fixed_size_binary(col.type), col.type
            return np.frombuffer(b"".join(v.as_py() for v in col), "u1").reshape(n, *shape)
        for _ in shape:
            assert pa.types.is_fixed_size_list(col.type), col.type
            col = col.flatten()
        return column_values(col, base).reshape(n, *shape)
    if dtype.kind == "c":
        assert pa.types.is_struct(col.type), col.type
        re = column_values(col.field("re"), np.dtype(f"f{dtype.itemsize // 2}"))
        im = column_values(col.field("im"), np.dtype(f"f{dtype.itemsize // 2}"))
        return re + 1j * im
    values = col.to_numpy(zero_copy_only=False)
    assert values.dtype == dtype, (values.dtype, dtype)
    return values


def assert_table_is(table, a):
    """The table's columns are the structured array's fields: names, order, values."""
    assert table.column_names == list(a.dtype.names)
    assert table.num_rows == len(a)
    for name in a.dtype.names:
        got = column_values(table.column(name), a.dtype[name])
        np.testing.assert_array_equal(got, a[name], err_msg=name)


def big_endian_copy(src, dst, dtype):
    """`src` (a little-endian record file) rewritten by hand as a big-endian one: flag bit 0 set,
    every field of every record byte-swapped; the trailer as it was."""
    raw = src.read_bytes()
    h, data, trailing = parse_by_hand(raw)
    assert h["flags"] & 1 == 0
    start = len(raw) - len(data) - len(trailing)
    swapped = np.frombuffer(data, dtype).astype(dtype.newbyteorder(">")).tobytes()
    assert swapped != data
    dst.write_bytes(struct.pack("<Q", 0x7961727261776172) + struct.pack("<Q", h["flags"] | 1)
                    + raw[16:start] + swapped + trailing)


def test_arrow_columns_equal_numpy_fields_for_every_type(tmp):
    a = every(300)
    rawarray.write(tmp / "every.ra", a, params={"dt": 0.5})
    with rawarray.open(tmp / "every.ra") as f:
        table = f.to_arrow()
        numpy_view = f.array()
    assert isinstance(table, pa.Table)
    assert_table_is(table, a)
    assert_table_is(table, numpy_view)
    t = table.schema
    assert t.field("ok").type == pa.bool_()
    assert t.field("f2").type == pa.float16()
    c8 = t.field("c8").type
    assert [(c8.field(i).name, c8.field(i).type) for i in range(2)] == [
        ("re", pa.float32()), ("im", pa.float32())]
    grid = t.field("grid").type
    assert (grid.list_size, grid.value_type.list_size, grid.value_type.value_type) == (
        2, 3, pa.int16())
    # A .ra value is always there.
    assert not any(field.nullable for field in t)
    assert t.field("tag").type == pa.binary(6)
    assert t.metadata[b"rawarray.params"] == b'{"dt":0.5}'


def test_big_endian_records_become_the_same_columns(tmp):
    a = every(50)
    rawarray.write(tmp / "le.ra", a)
    big_endian_copy(tmp / "le.ra", tmp / "be.ra", EVERY)
    with rawarray.open(tmp / "be.ra") as f:
        table = f.to_arrow()
        np.testing.assert_array_equal(f.array(), a)
    assert_table_is(table, a)


def test_a_plain_array_is_one_values_column(tmp):
    a = np.arange(24, dtype="<f8").reshape(4, 6) * 0.25
    rawarray.write(tmp / "plain.ra", a)
    table = rawarray.open(tmp / "plain.ra").to_arrow()
    assert table.column_names == ["values"]
    # The file's order: numpy's C order is the file's column-major one.
    np.testing.assert_array_equal(table.column("values").to_numpy(), a.reshape(-1))


def test_bfloat16_is_its_float32_value_marked(tmp):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.array([1.5, -2.0, 3.140625, 1e30, -np.inf], ml_dtypes.bfloat16)
    rawarray.write(tmp / "bf.ra", a)
    table = rawarray.open(tmp / "bf.ra").to_arrow()
    field = table.schema.field("values")
    assert field.type == pa.float32() and field.metadata == {b"rawarray.eltype": b"bfloat16"}
    np.testing.assert_array_equal(table.column("values").to_numpy(), a.astype(np.float32))
    rawarray.write(tmp / "back.ra", table)
    # Back through the table's rawarray.schema: a bfloat16 array again (with a scalar schema in
    # its trailer, which numpy's side once read as void bytes).
    back = rawarray.read(tmp / "back.ra")
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)
    assert parse_by_hand((tmp / "back.ra").read_bytes())[1] == a.tobytes()


BODY = np.dtype([("step", "<u4"), ("id", "<u4"), ("energy", "<f8"), ("pos", "<f4", (3,))])


def simulation(steps, bodies):
    a = np.zeros(steps * bodies, BODY)
    a["step"] = np.repeat(np.arange(steps), bodies)
    a["id"] = np.tile(np.arange(bodies), steps)
    a["energy"] = np.sin(np.arange(len(a)) * 0.37) * 10 + a["step"]
    a["pos"] = np.arange(len(a) * 3).reshape(-1, 3) * 0.5
    return a


def numpy_group_means(a):
    steps = np.unique(a["step"])
    return steps, np.array([a["energy"][a["step"] == s].mean() for s in steps])


def test_duckdb_queries_the_arrow_table(tmp):
    duckdb = pytest.importorskip("duckdb")
    a = simulation(17, 9)
    rawarray.write(tmp / "run.ra", a)
    tbl = rawarray.open(tmp / "run.ra").to_arrow()  # noqa: F841 (DuckDB finds it by name)
    rows = duckdb.sql("SELECT step, avg(energy) FROM tbl GROUP BY step ORDER BY step").fetchall()
    steps, means = numpy_group_means(a)
    assert [r[0] for r in rows] == steps.tolist()
    np.testing.assert_allclose([r[1] for r in rows], means, rtol=1e-12)
    # And through the stream itself, batch by batch.
    batches = rawarray.open(tmp / "run.ra").to_arrow_batches(20)  # noqa: F841
    (count, total), = duckdb.sql("SELECT count(*), sum(id) FROM batches").fetchall()
    assert (count, total) == (len(a), int(a["id"].sum()))


def test_polars_groups_the_records(tmp):
    pl = pytest.importorskip("polars")
    a = simulation(11, 7)
    rawarray.write(tmp / "run.ra", a)
    df = rawarray.open(tmp / "run.ra").to_polars()
    assert isinstance(df, pl.DataFrame)
    assert df.columns == list(BODY.names)
    out = df.group_by("step").agg(pl.col("energy").mean()).sort("step")
    steps, means = numpy_group_means(a)
    assert out["step"].to_list() == steps.tolist()
    np.testing.assert_allclose(out["energy"].to_numpy(), means, rtol=1e-12)
    np.testing.assert_array_equal(np.stack(df["pos"].to_numpy()), a["pos"])


def test_to_pandas_has_the_fields_as_columns(tmp):
    pd = pytest.importorskip("pandas")
    a = simulation(5, 4)
    rawarray.write(tmp / "run.ra", a)
    df = rawarray.open(tmp / "run.ra").to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == list(BODY.names)
    for name in ("step", "id", "energy"):
        np.testing.assert_array_equal(df[name].to_numpy(), a[name])
        assert df[name].dtype == a[name].dtype
    np.testing.assert_array_equal(np.stack(df["pos"].to_numpy()), a["pos"])


@pytest.mark.parametrize("method, package", [("to_polars", "polars"), ("to_pandas", "pandas")])
def test_a_missing_optional_package_is_named(tmp, monkeypatch, method, package):
    rawarray.write(tmp / "run.ra", simulation(2, 2))
    monkeypatch.setitem(sys.modules, package, None)  # `import package` now raises ImportError
    with pytest.raises(ImportError, match=f"'{package}'"):
        getattr(rawarray.open(tmp / "run.ra"), method)()


def test_write_a_pyarrow_table_as_records(tmp):
    table = pa.table({
        "step": pa.array([0, 0, 1, 1], pa.uint32()),
        "energy": pa.array([1.5, -2.0, 3.25, 0.0], pa.float64()),
        "alive": pa.array([True, False, True, True]),
        "pos": pa.array([[1, 2, 3], [4, 5, 6], [7, 8, 9], [0, 0, 1]], pa.list_(pa.float32(), 3)),
        "spin": pa.array([{"re": 1.0, "im": -1}] * 4,
                         pa.struct([("re", pa.float64()), ("im", pa.int8())])),
    })
    rawarray.write(tmp / "t.ra", table, params={"source": "pyarrow"})
    got = rawarray.read(tmp / "t.ra")
    assert got.dtype.names == ("step", "energy", "alive", "pos", "spin")
    assert got.dtype["step"] == np.dtype("<u4") and got.dtype["alive"] == np.dtype("?")
    assert got.dtype["pos"] == np.dtype(("<f4", (3,)))
    np.testing.assert_array_equal(got["step"], [0, 0, 1, 1])
    np.testing.assert_array_equal(got["energy"], [1.5, -2.0, 3.25, 0.0])
    np.testing.assert_array_equal(got["alive"], [True, False, True, True])
    np.testing.assert_array_equal(got["pos"][1], [4, 5, 6])
    np.testing.assert_array_equal(got["spin"]["im"], [-1] * 4)
    assert rawarray.open(tmp / "t.ra").params == {"source": "pyarrow"}


def test_a_record_file_through_arrow_comes_back_byte_for_byte(tmp):
    a = every(40).reshape(8, 5)
    rawarray.write(tmp / "a.ra", a, params={"run": 7})
    rawarray.write(tmp / "b.ra", rawarray.open(tmp / "a.ra").to_arrow())
    assert (tmp / "b.ra").read_bytes() == (tmp / "a.ra").read_bytes()


def test_a_numeric_dataframe_is_written_as_records(tmp):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"x": np.arange(5, dtype="<i8"), "y": np.linspace(0, 1, 5)},
                      index=np.arange(10, 15))
    rawarray.write(tmp / "df.ra", df)
    got = rawarray.read(tmp / "df.ra")
    # Not a 5 x 2 array of floats, as before: one record per row, one field per column.
    assert got.shape == (5,)
    assert got.dtype == np.dtype([("x", "<i8"), ("y", "<f8")])
    np.testing.assert_array_equal(got["x"], df["x"].to_numpy())
    np.testing.assert_array_equal(got["y"], df["y"].to_numpy())
    pd.testing.assert_frame_equal(rawarray.open(tmp / "df.ra").to_pandas(),
                                  df.reset_index(drop=True))


def test_a_dataframe_nan_is_a_value_and_a_nullable_missing_value_is_refused(tmp):
    pd = pytest.importorskip("pandas")
    # pyarrow's from_pandas would make these NaNs nulls: a float column's NaN is stored.
    df = pd.DataFrame({"x": [1.0, np.nan, -np.inf], "z": np.array([np.nan, 2, 3], "<f4")})
    rawarray.write(tmp / "nan.ra", df)
    got = rawarray.read(tmp / "nan.ra")
    assert got.dtype == np.dtype([("x", "<f8"), ("z", "<f4")])
    for name in ("x", "z"):
        assert got[name].tobytes() == df[name].to_numpy().tobytes(), name
    # A pandas nullable column's missing value is missing, not NaN: refused by name.
    df = pd.DataFrame({"x": [1.0, 2.0], "gap": pd.array([1.5, None], dtype="Float64")})
    with pytest.raises(rawarray.RaError, match="'gap'.*null"):
        rawarray.write(tmp / "gap.ra", df)


@pytest.mark.parametrize("column, values, what", [
    ("name", pa.array(["a", "b"]), "utf8"),
    ("hits", pa.array([[1], [2, 3]]), "list"),
    # Timestamps, durations and date32 are stored (test_dates.py); a time of day is not.
    ("when", pa.array([1, 2], pa.time64("us")), "time64"),
    ("gap", pa.array([1, None], pa.int32()), "null"),
])
def test_columns_without_a_fixed_width_are_refused_by_name(tmp, column, values, what):
    (tmp / "keep.ra").write_bytes(b"not touched")
    table = pa.table({"id": pa.array([1, 2], pa.int32()), column: values})
    with pytest.raises(rawarray.RaError, match=f"(?i)'{column}'.*{what}"):
        rawarray.write(tmp / "keep.ra", table)
    assert (tmp / "keep.ra").read_bytes() == b"not touched"
    assert sorted(p.name for p in tmp.iterdir()) == ["keep.ra"]


def test_a_dataframe_text_column_is_refused_by_name(tmp):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"x": [1.0, 2.0], "label": ["a", "b"]})
    with pytest.raises(rawarray.RaError, match="'label'"):
        rawarray.write(tmp / "df.ra", df)
    assert not (tmp / "df.ra").exists()


def test_a_column_is_still_written_as_an_array(tmp):
    pl = pytest.importorskip("polars")
    for column in (pa.chunked_array([[1.5, 2.5], [3.5]]), pl.Series([1.5, 2.5, 3.5])):
        rawarray.write(tmp / "c.ra", column)
        got = rawarray.read(tmp / "c.ra")
        assert got.dtype == np.float64 and got.tolist() == [1.5, 2.5, 3.5]


def test_array_options_do_not_apply_to_tables(tmp):
    with pytest.raises(ValueError, match="chunks"):
        rawarray.write(tmp / "t.ra", pa.table({"x": [1]}), chunks=(4,))


def rss_anon():
    """Anonymous resident memory (not the file pages a map brings in), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    pytest.skip("no RssAnon in /proc/self/status")


def test_batches_keep_memory_bounded_by_the_batch(tmp):
    # A compressed file is decoded into the batches, so every batch is new memory: 128 MiB of
    # records read 8192 rows (256 KiB) at a time. The allocator keeps some freed batches (glibc
    # raises its map threshold up to 32 MiB), so the bound is well under the file, not a batch.
    n = 4 << 20
    a = np.zeros(n, [("step", "<u8"), ("energy", "<f8"), ("id", "<u8"), ("pad", "<u8")])
    a["step"] = np.arange(n) // 1000
    a["energy"] = np.arange(n) * 0.5
    rawarray.write(tmp / "big.ra", a, codec="zstd")
    del a
    reader = rawarray.open(tmp / "big.ra").to_arrow_batches(8192)
    assert isinstance(reader, pa.RecordBatchReader)
    before = rss_anon()
    peak, rows, energy = before, 0, 0.0
    for batch in reader:
        assert 0 < batch.num_rows <= 8192
        rows += batch.num_rows
        energy += float(np.sum(batch.column("energy").to_numpy()))
        peak = max(peak, rss_anon())
        del batch
    assert rows == n
    assert energy == pytest.approx(0.5 * n * (n - 1) / 2, rel=1e-12)
    assert peak - before < 48 << 20, f"{(peak - before) >> 20} MiB for 128 MiB of records"
    # Reading it whole does hold it all: the measure can see the difference.
    whole = rawarray.open(tmp / "big.ra").to_arrow()
    assert rss_anon() - before > 112 << 20
    assert whole.num_rows == n


def test_batch_rows_must_be_positive(tmp):
    rawarray.write(tmp / "run.ra", simulation(2, 2))
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError):
            rawarray.open(tmp / "run.ra").to_arrow_batches(bad)


def test_a_file_replaced_since_open_is_not_read_as_arrow(tmp):
    rawarray.write(tmp / "run.ra", simulation(2, 2))
    f = rawarray.open(tmp / "run.ra")
    rawarray.write(tmp / "run.ra", simulation(3, 2))
    with pytest.raises(rawarray.RaError, match="changed since it was opened"):
        f.to_arrow()
