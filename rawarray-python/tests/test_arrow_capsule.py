"""A ``File`` and a ``RaggedFile`` are Arrow streams themselves (the Arrow PyCapsule interface,
``__arrow_c_stream__`` and ``__arrow_c_schema__``): pyarrow, polars and DuckDB take them as they
are, with no call, and get numpy's values; the stream hands out batches, each read when asked
for."""

import numpy as np
import pytest

import rawarray

pa = pytest.importorskip("pyarrow")

REC = np.dtype([("step", "<u4"), ("e", "<f8"), ("pos", "<f4", (3,))])


def records(n):
    a = np.zeros(n, REC)
    a["step"] = np.arange(n)
    a["e"] = np.sin(np.arange(n)) * 10
    a["pos"] = np.arange(3 * n).reshape(n, 3) * 0.25
    return a


@pytest.fixture
def rec_file(tmp):
    a = records(1000)
    rawarray.write(tmp / "run.ra", a, params={"dt": 0.5})
    with rawarray.open(tmp / "run.ra") as f:
        yield f, a


def test_pyarrow_takes_a_record_file(rec_file):
    f, a = rec_file
    t = pa.table(f)
    assert t.column_names == ["step", "e", "pos"] and t.num_rows == len(a)
    assert t["step"].to_numpy().tolist() == a["step"].tolist()
    assert np.array_equal(t["e"].to_numpy(), a["e"])
    pos = np.array(t["pos"].to_pylist(), dtype="<f4")
    assert np.array_equal(pos, a["pos"])
    schema = pa.schema(f)                          # __arrow_c_schema__
    assert schema.names == ["step", "e", "pos"] and schema.field("step").type == pa.uint32()
    assert schema.metadata[b"rawarray.params"] == b'{"dt":0.5}'


def test_polars_takes_a_record_file(rec_file):
    pl = pytest.importorskip("polars")
    f, a = rec_file
    df = pl.DataFrame(f)
    assert df.columns == ["step", "e", "pos"] and df.height == len(a)
    assert np.array_equal(df["e"].to_numpy(), a["e"])
    assert df["step"].to_list() == a["step"].tolist()
    # pl.from_arrow of a stream is polars' Series of structs, one field per column.
    s = pl.from_arrow(f)
    assert np.array_equal(s.struct.unnest()["e"].to_numpy(), a["e"])


def test_duckdb_queries_a_file_variable_by_name(rec_file):
    duckdb = pytest.importorskip("duckdb")
    f, a = rec_file
    total, top, n = duckdb.sql("SELECT sum(e), max(step), count(*) FROM f WHERE e > 0").fetchall()[0]
    assert n == int((a["e"] > 0).sum()) and top == int(a["step"][a["e"] > 0].max())
    assert total == pytest.approx(float(a["e"][a["e"] > 0].sum()), rel=1e-12)


def test_a_plain_array_is_one_column_of_numpys_values_in_c_order(tmp):
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    a = np.arange(12 * 7, dtype="<i8").reshape(12, 7) * 3 - 50
    rawarray.write(tmp / "a.ra", a)
    with rawarray.open(tmp / "a.ra") as g:
        assert pa.table(g)["values"].to_numpy().tolist() == a.ravel().tolist()
        assert pl.DataFrame(g)["values"].to_list() == a.ravel().tolist()
        got = duckdb.sql('SELECT sum("values"), min("values") FROM g').fetchall()[0]
        assert got == (int(a.sum()), int(a.min()))
    # Chunked and compressed: the same values, decoded batch by batch.
    rawarray.write(tmp / "z.ra", a, chunks=(4, 7), codec="zstd")
    with rawarray.open(tmp / "z.ra") as z:
        assert pa.table(z)["values"].to_numpy().tolist() == a.ravel().tolist()


def test_a_ragged_file_is_a_table_of_list_rows(tmp):
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    rows = [np.arange(k, dtype="<f4") * 0.5 for k in (3, 0, 5, 1)]
    rawarray.write(tmp / "r.ra", rows)
    with rawarray.open(tmp / "r.ra") as h:
        t = pa.table(h)
        assert t.column_names == ["values"] and t.num_rows == 4
        assert t["values"].to_pylist() == [r.tolist() for r in rows]
        assert [r.to_list() for r in pl.DataFrame(h)["values"]] == [r.tolist() for r in rows]
        lengths = duckdb.sql('SELECT len("values") FROM h').fetchall()
        assert [n for (n,) in lengths] == [len(r) for r in rows]
    rawarray.write(tmp / "t.ra", ["hé", "", "abc"])
    with rawarray.open(tmp / "t.ra", mmap=False) as s:
        assert pa.table(s)["values"].to_pylist() == ["hé", "", "abc"]
        assert duckdb.sql('SELECT "values" FROM s WHERE len("values") = 3').fetchall() == [("abc",)]


def test_the_stream_hands_out_batches_each_read_when_asked(tmp):
    a = records(200_000)
    rawarray.write(tmp / "big.ra", a)
    with rawarray.open(tmp / "big.ra") as f:
        reader = pa.RecordBatchReader.from_stream(f)
        sizes = [b.num_rows for b in reader]
        assert sizes == [65536, 65536, 65536, 200_000 - 3 * 65536]
        # Each call is a new stream from the first row.
        first = next(iter(pa.RecordBatchReader.from_stream(f)))
        assert first["step"].to_numpy().tolist() == list(range(65536))


def test_a_stream_refuses_a_batch_of_a_file_rewritten_in_place(tmp):
    a = np.arange(200_000, dtype="<f8")
    path = tmp / "c.ra"
    rawarray.write(path, a, chunks=(50_000,), codec="zstd")
    rawarray.write(tmp / "other.ra", -a, chunks=(50_000,), codec="zstd")
    with rawarray.open(path) as f:
        reader = pa.RecordBatchReader.from_stream(f)
        assert reader.read_next_batch()["values"].to_numpy().tolist() == a[:65536].tolist()
        with open(path, "r+b") as out:             # cp other.ra c.ra
            out.truncate(0)
            out.write((tmp / "other.ra").read_bytes())
        with pytest.raises(Exception, match="the file changed"):
            reader.read_next_batch()
    # A file replaced by rename since the open: the File refuses to hand a stream of another.
    f = rawarray.open(path)
    rawarray.write(path, a)
    with pytest.raises(rawarray.RaError, match="changed since it was opened"):
        pa.table(f)


def test_an_opened_file_is_still_written_as_its_array(tmp):
    a = np.arange(6.0).reshape(2, 3)
    rawarray.write(tmp / "a.ra", a)
    with rawarray.open(tmp / "a.ra") as f:
        rawarray.write(tmp / "b.ra", f)
    back = rawarray.read(tmp / "b.ra")
    assert back.shape == (2, 3) and np.array_equal(back, a)
