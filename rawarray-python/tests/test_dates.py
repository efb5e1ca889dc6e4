"""Dates and times (issue 33, doc/format.md section 7): numpy's ``datetime64``/``timedelta64``
in s, ms, us and ns, pandas' datetime columns (with and without a time zone) and Arrow's
``date32`` are stored as their integers with a logical marker, and read back as what they were.

The truth is numpy's own bytes of the values written (the file's data section parsed by hand
must be the ``int64`` view of the ``datetime64`` array), the trailer's schema parsed by hand
against the spec's strings, and pyarrow's tables compared with ``Table.equals``."""

import datetime
import json

import numpy as np
import pytest

import rawarray
from conftest import parse_by_hand

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")


def trailer_schema(path):
    """The trailer's ``schema`` object, found in the bytes after the data section by hand."""
    _, _, trailing = parse_by_hand(path.read_bytes())
    text = trailing.decode("latin-1")
    obj, _ = json.JSONDecoder().raw_decode(text, text.index('{"version"'))
    return obj["schema"]


@pytest.mark.parametrize("dtype", ["M8[s]", "M8[ms]", "M8[us]", "M8[ns]", "m8[s]", "m8[ns]"])
def test_datetime64_and_timedelta64_round_trip_as_marked_int64(tmp_path, dtype):
    p = tmp_path / "t.ra"
    rng = np.random.default_rng(7)
    ints = rng.integers(-(2**62), 2**62, size=(3, 5), dtype=np.int64)
    arr = ints.view(dtype)
    rawarray.write(p, arr)
    back = rawarray.read(p)
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back.view(np.int64), ints)
    # The data section is numpy's int64 bytes; the header says int, 8 bytes.
    h, data, _ = parse_by_hand(p.read_bytes())
    assert (h["eltype"], h["elbyte"], h["dims"]) == (1, 8, [5, 3])
    assert data == ints.tobytes()
    kind = "timestamp" if dtype[0] == "M" else "duration"
    unit = dtype[3:-1]
    assert trailer_schema(p) == {"kind": "scalar", "eltype": "int", "elbyte": 8,
                                 "logical": f"{kind}[{unit}]"}
    # A mapped File views the same bytes as numpy's datetime64 (no copy).
    with rawarray.open(p) as f:
        assert f.dtype == np.dtype(dtype)
        assert f[1, 2] == arr[1, 2]


def test_a_record_field_of_datetime64_round_trips(tmp_path):
    p = tmp_path / "r.ra"
    dt = np.dtype([("t", "<M8[us]"), ("x", "<f4"), ("dt", "<m8[ms]")])
    rec = np.zeros(4, dt)
    rec["t"] = np.array(["2020-01-01T12:30:00.25", "1969-12-31T23:59:59", "2262-01-01",
                         "1677-09-22"], dtype="M8[us]")
    rec["x"] = [1, 2, 3, 4]
    rec["dt"] = np.array([-5000, 0, 1, 2**40], dtype="m8[ms]")
    rawarray.write(p, rec)
    back = rawarray.read(p)
    assert back.dtype == dt
    assert back.tobytes() == rec.tobytes()
    fields = trailer_schema(p)["fields"]
    assert [f["layout"].get("logical") for f in fields] == ["timestamp[us]", None, "duration[ms]"]


def test_units_numpy_has_and_arrow_lacks_are_refused_naming_the_conversion(tmp_path):
    for dtype in ["M8[D]", "M8[h]", "m8[ps]", "M8"]:
        with pytest.raises(rawarray.RaError, match=r"s, ms, us or ns.*astype"):
            rawarray.write(tmp_path / "x.ra", np.zeros(3, dtype))
    rec = np.zeros(2, [("day", "M8[D]")])
    with pytest.raises(rawarray.RaError, match="field 'day'"):
        rawarray.write(tmp_path / "y.ra", rec)
    assert not (tmp_path / "x.ra").exists()


def table():
    """A pyarrow table of every time type the format marks: timestamps with and without a
    zone, a duration and a date32, before and after 1970."""
    t = pa.array([1_577_881_800_250_000, -1, 0], pa.timestamp("us", tz="Europe/Paris"))
    tn = pa.array([0, -1_000_000_007, 2**62], pa.timestamp("ns"))
    dt = pa.array([-5000, 0, 250], pa.duration("ms"))
    d = pa.array([17_762, -1, 0], pa.date32())
    step = pa.array([0, 1, 2], pa.uint32())
    return pa.table({"step": step, "t": t, "tn": tn, "dt": dt, "d": d})


def test_an_arrow_table_of_time_columns_round_trips(tmp_path):
    p = tmp_path / "a.ra"
    tbl = table()
    rawarray.write(p, tbl)
    with rawarray.open(p) as f:
        back = f.to_arrow()
        # numpy sees the timestamps and the duration as datetime64/timedelta64, the date as
        # its day count (numpy has no 4-byte date).
        arr = f[:]
    assert back.column_names == tbl.column_names
    for name in tbl.column_names:  # types (the zone too) and values; .ra fields are not null
        assert back.column(name).type == tbl.column(name).type, name
        assert back.column(name).equals(tbl.column(name)), name
    assert arr.dtype == np.dtype([("step", "<u4"), ("t", "<M8[us]"), ("tn", "<M8[ns]"),
                                  ("dt", "<m8[ms]"), ("d", "<i4")])
    assert arr["t"][0] == np.datetime64("2020-01-01T12:30:00.250", "us")
    np.testing.assert_array_equal(arr["d"].astype("M8[D]"),
                                  np.array(["2018-08-19", "1969-12-31", "1970-01-01"], "M8[D]"))
    assert [f["layout"].get("logical") for f in trailer_schema(p)["fields"]] == [
        None, "timestamp[us, tz=Europe/Paris]", "timestamp[ns]", "duration[ms]", "date"]


def test_a_pandas_frame_with_naive_and_zoned_datetimes_round_trips(tmp_path):
    p = tmp_path / "df.ra"
    df = pd.DataFrame({
        "when": pd.Series([pd.Timestamp("2020-01-01 00:00:00.5"),
                           pd.Timestamp("1999-12-31 23:59:59")]).astype("M8[ns]"),
        "zoned": pd.to_datetime(["2020-06-01 12:00", "2021-01-01 00:00"]).tz_localize("UTC")
                   .tz_convert("America/New_York"),
        "x": [1.5, 2.5],
    })
    rawarray.write(p, df)
    with rawarray.open(p) as f:
        back = f.to_pandas()
    pd.testing.assert_frame_equal(back, df)
    assert str(back["zoned"].dtype).endswith("America/New_York]")


def test_filters_on_time_fields_take_dates_and_times(tmp_path):
    p = tmp_path / "q.ra"
    n = 10_000
    dt = np.dtype([("t", "<M8[ms]"), ("v", "<f8")])
    rec = np.zeros(n, dt)
    start = np.datetime64("2024-03-01T00:00:00", "ms")
    rec["t"] = start + np.arange(n) * np.timedelta64(1, "s")
    rec["v"] = np.arange(n)
    rawarray.write(p, rec, codec="zstd", chunks=(1000,), statistics=True)
    lo = datetime.datetime(2024, 3, 1, 1, 0, 0)  # 3600 s in
    hi = pd.Timestamp("2024-03-01T01:00:09.5")
    want = rec[(rec["t"] >= np.datetime64(lo, "ms")) & (rec["t"] < np.datetime64(hi, "ms"))]
    assert len(want) == 10
    with rawarray.open(p) as f:
        got = f.to_arrow(filters=[("t", ">=", lo), ("t", "<", hi)])
        assert got.column("v").to_pylist() == list(want["v"])
        # A zoned datetime is its UTC instant; an ISO string is what numpy reads; an int is
        # the stored count itself.
        zoned = datetime.datetime(2024, 3, 1, 2, 0, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))
        assert f.to_arrow(filters=[("t", "==", zoned)]).column("v").to_pylist() == [3600.0]
        assert f.to_arrow(filters=[("t", "==", "2024-03-01T00:00:05")]).column("v").to_pylist() == [5.0]
        as_int = int(rec["t"][7].astype(np.int64))
        assert f.to_arrow(filters=[("t", "==", as_int)]).column("v").to_pylist() == [7.0]
        with pytest.raises(rawarray.RaError, match=r"column 't'.*not a timestamp"):
            f.to_arrow(filters=[("t", ">", "yesterday")])
    np.testing.assert_array_equal(rawarray.read(p, filters=[("t", ">=", lo), ("t", "<", hi)]), want)


def test_nat_is_refused_naming_the_field_and_nothing_is_written(tmp_path):
    # NaT is numpy's missing time (int64's minimum): a .ra file has no missing values, and any
    # other reader would take that minimum for a real time.
    p = tmp_path / "n.ra"
    rec = np.zeros(3, [("x", "<f4"), ("t", "<M8[s]")])
    rec["t"][1] = np.datetime64("NaT")
    with pytest.raises(rawarray.RaError, match=r"field 't' holds 1 NaT"):
        rawarray.write(p, rec)
    with pytest.raises(rawarray.RaError, match=r"the array holds 2 NaT"):
        rawarray.write(p, np.array(["NaT", "NaT", "2020-01-01"], "M8[ms]"))
    assert not p.exists()
    with rawarray.RecordWriter(tmp_path / "w.ra", rec.dtype) as w:
        w.append(rec[:1])
        with pytest.raises(rawarray.RaError, match="NaT"):
            w.append(rec[1:])
    assert len(rawarray.read(tmp_path / "w.ra")) == 1


def test_filters_round_each_comparison_exactly_and_never_wrap(tmp_path):
    # Values finer than the field's unit, and values outside int64 nanoseconds: numpy's own
    # comparison of the stored datetime64 is the truth (no rounding to the field's unit first).
    p = tmp_path / "f.ra"
    rec = np.zeros(3, [("t", "<M8[s]"), ("ns", "<M8[ns]"), ("d", "<m8[s]"), ("k", "<i4")])
    rec["t"] = np.array(["2021-05-01T00:00:00", "2021-05-01T00:00:01", "2021-05-01T00:00:02"], "M8[s]")
    rec["ns"] = np.array(["2000-01-01", "2010-01-01", "2022-01-01"], "M8[ns]")
    rec["d"] = np.array([1, 2, 3], "m8[s]")
    rec["k"] = [0, 1, 2]
    rawarray.write(p, rec)
    half = np.datetime64("2021-05-01T00:00:00.500", "ms")
    cases = [
        ("t", ">=", half, rec["t"] >= half),
        ("t", ">", half, rec["t"] > half),
        ("t", "<", half, rec["t"] < half),
        ("t", "<=", half, rec["t"] <= half),
        ("t", "==", half, rec["t"] == half),
        ("t", "!=", half, rec["t"] != half),
        ("t", ">=", datetime.datetime(2021, 5, 1, 0, 0, 0, 500000), rec["t"] >= half),
        ("d", ">=", np.timedelta64(1500, "ms"), rec["d"] >= np.timedelta64(1500, "ms")),
        ("d", "<", datetime.timedelta(seconds=2.5), rec["d"] < np.timedelta64(2500, "ms")),
        ("ns", "<", datetime.datetime(2300, 1, 1), np.ones(3, bool)),
        ("ns", ">", datetime.datetime(1500, 1, 1), np.ones(3, bool)),
        ("ns", ">", "2300-01-01", np.zeros(3, bool)),
    ]
    for column, op, value, mask in cases:
        got = rawarray.read(p, filters=[(column, op, value)])
        assert list(got["k"]) == list(rec["k"][mask]), (column, op, value)
    got = rawarray.read(p, filters=[("t", "in", [half, np.datetime64("2021-05-01T00:00:02")])])
    assert list(got["k"]) == [2]
    for bad in [True, np.datetime64("NaT"), "yesterday"]:
        with pytest.raises(rawarray.RaError, match="column 't'"):
            rawarray.read(p, filters=[("t", ">", bad)])


def test_an_array_writer_writes_datetime64_blocks(tmp_path):
    p = tmp_path / "aw.ra"
    a = np.arange(12, dtype=np.int64).reshape(3, 4).view("M8[ms]")
    with rawarray.ArrayWriter(p, a.shape, a.dtype) as w:
        w[0:2] = a[0:2]
        w[2:3] = a[2:3]
    back = rawarray.read(p)
    assert back.dtype == np.dtype("M8[ms]")
    np.testing.assert_array_equal(back, a)
    assert trailer_schema(p)["logical"] == "timestamp[ms]"
    with pytest.raises(rawarray.RaError, match=r"compressed \(chunked\) array of timestamp\[ms\]"):
        rawarray.ArrayWriter(tmp_path / "c.ra", a.shape, a.dtype, codec="zstd", chunks=(1, 4))


@pytest.mark.parametrize("dtype", ["M8[ns]", "m8[s]"])
def test_big_endian_datetime64_and_timedelta64_are_written_as_the_same_values(tmp_path, dtype):
    """A big-endian datetime64/timedelta64 array (``np.save`` of ``a.astype('>M8[ns]')``,
    loaded back) is written, appended and written in blocks as the same instants: the file's
    data section is the little-endian int64 bytes of the values, marked as for ``<``."""
    ints = np.array([1_577_881_800_250_000_123, -1, 0, 86_400], dtype="<i8")
    little = ints.view("<" + dtype)
    npy = tmp_path / "big.npy"
    np.save(npy, little.astype(">" + dtype))
    big = np.load(npy)
    assert big.dtype == np.dtype(">" + dtype) and big.tobytes() == ints.byteswap().tobytes()
    kind = "timestamp" if dtype[0] == "M" else "duration"
    schema = {"kind": "scalar", "eltype": "int", "elbyte": 8, "logical": f"{kind}[{dtype[3:-1]}]"}

    p = tmp_path / "w.ra"
    rawarray.write(p, big)
    h, data, _ = parse_by_hand(p.read_bytes())
    assert (h["eltype"], h["elbyte"], h["dims"], data) == (1, 8, [4], ints.tobytes())
    assert trailer_schema(p) == schema
    np.testing.assert_array_equal(rawarray.read(p), little)

    # A record writer of either byte order's dtype takes the big-endian values.
    for writer_dtype in (">" + dtype, "<" + dtype):
        r = tmp_path / "r.ra"
        with rawarray.RecordWriter(r, writer_dtype) as w:
            w.append(big[:2])
            w.append(big[2:])
        h, data, _ = parse_by_hand(r.read_bytes())
        assert data == ints.tobytes(), writer_dtype
        assert trailer_schema(r) == schema

    # And an array writer's block.
    a = tmp_path / "a.ra"
    with rawarray.ArrayWriter(a, (4,), "<" + dtype) as w:
        w[:] = big
    _, data, _ = parse_by_hand(a.read_bytes())
    assert data == ints.tobytes()
