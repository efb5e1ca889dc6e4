"""Ragged arrays from Python (doc/format.md, section 10): rawarray.Ragged, rawarray.write of
unequal rows, str and bytes, rawarray.read (views of the map), rawarray.open (one row per
f[k]), rawarray.RaggedWriter, to_arrow. Files are checked against bytes built here by hand
from the format's layout and against files the Rust library wrote (tests/python_package.rs)."""

import signal
import struct
import subprocess
import sys
import time
import zlib

import numpy as np
import pytest

import rawarray
from conftest import MAGIC, shared_dir
from test_zero_copy import base_chain


def trailer_block(json_text: str, at: int) -> bytes:
    """A trailer block by hand (doc/format.md, section 6): tag, len, at, crc, JSON, and the
    same backwards."""
    body = json_text.encode()
    lens = struct.pack("<QQ", len(body), at)
    crc = struct.pack("<I", zlib.crc32(lens + body))
    return b"RATRAILR" + lens + crc + body + crc + struct.pack("<QQ", at, len(body)) + b"RATRAILR"


def ragged_by_hand(eltype, elbyte, value_dims, offsets, values: bytes, slots=None) -> bytes:
    """A ragged file's header and data section, by the layout of section 10."""
    slots = len(offsets) if slots is None else slots
    m, n = offsets[-1], len(offsets) - 1
    dims = list(value_dims) + [m, n]
    size = 8 * slots + len(values)
    head = struct.pack("<6Q", MAGIC, 8, eltype, elbyte, size, len(dims))
    head += struct.pack(f"<{len(dims)}Q", *dims)
    region = struct.pack(f"<{len(offsets)}Q", *offsets) + b"\0" * 8 * (slots - len(offsets))
    return head + region + values


def test_a_ragged_file_is_the_formats_bytes(tmp):
    rows = [np.array([1.5, 2.5], "<f4"), np.array([], "<f4"), np.array([-3.0], "<f4")]
    rawarray.write(tmp / "r.ra", rows)
    values = np.array([1.5, 2.5, -3.0], "<f4").tobytes()
    body = ragged_by_hand(3, 4, [], [0, 2, 2, 3], values)
    schema = ('{"version":1,"params":null,"schema":{"kind":"scalar","eltype":"float",'
              '"elbyte":4},"numpy_descr":"<f4"}')
    assert (tmp / "r.ra").read_bytes() == body + trailer_block(schema, len(body))


def test_text_is_utf8_rows_laid_out_as_the_spec_example(tmp):
    # doc/format.md 10.1: ["hé", "", "abc"], header and data section byte for byte.
    rawarray.write(tmp / "t.ra", ["hé", "", "abc"])
    raw = (tmp / "t.ra").read_bytes()
    assert raw[:0x66] == ragged_by_hand(2, 1, [], [0, 3, 3, 6], "hé".encode() + b"abc")
    assert raw[0x66:0x6e] == b"RATRAILR" and raw[-8:] == b"RATRAILR"
    r = rawarray.read(tmp / "t.ra")
    assert r.is_text and r.to_list() == ["hé", "", "abc"] and r[0] == "hé"
    with rawarray.open(tmp / "t.ra") as f:
        assert f.is_text and [f[k] for k in range(3)] == ["hé", "", "abc"] and f[-1] == "abc"
    # A 1-d numpy array of str is text too.
    rawarray.write(tmp / "u.ra", np.array(["hé", "", "abc"]))
    assert (tmp / "u.ra").read_bytes() == raw


def test_python_text_is_byte_for_byte_the_rust_librarys():
    d = shared_dir()
    if d is None:
        pytest.skip("run by tests/python_package.rs, which writes the Rust library's files")
    rust = (d / "rust_text.ra").read_bytes()
    rawarray.write(d / "python_text.ra", ["hé", "", "abc"])
    assert (d / "python_text.ra").read_bytes() == rust
    assert rawarray.read(d / "rust_text.ra").to_list() == ["hé", "", "abc"]


def test_files_the_rust_library_wrote_read_as_their_rows():
    d = shared_dir()
    if d is None:
        pytest.skip("run by tests/python_package.rs, which writes the Rust library's files")
    f32 = rawarray.read(d / "rust_f32.ra")
    assert f32.dtype == np.dtype("<f4")
    assert [r.tolist() for r in f32] == [[1.5, 2.5], [], [-3.0]]
    # Ragged<[u16; 3]>: each value is 3 numbers (value dims [3]).
    u16x3 = rawarray.read(d / "rust_u16x3.ra")
    assert u16x3.values.shape == (3, 3) and u16x3.dtype == np.dtype("<u2")
    assert [r.tolist() for r in u16x3] == [[[1, 2, 3]], [], [[4, 5, 6], [7, 8, 9]]]
    # A RaggedWriter's file: more offset slots than rows; rows k = [k] * k.
    appended = rawarray.read(d / "rust_appended.ra")
    with rawarray.open(d / "rust_appended.ra") as f:
        assert f.header["slots"] > len(f) + 1 and len(f) == 10
        assert f[7].tolist() == [7] * 7
    assert [r.tolist() for r in appended] == [[k] * k for k in range(10)]
    assert appended.offsets.tolist() == [k * (k - 1) // 2 for k in range(11)]
    # Python's files for Rust to read (checked there).
    rawarray.write(d / "from_python_ragged.ra", [np.arange(k, dtype="<f8") for k in range(5)])
    with rawarray.RaggedWriter(d / "from_python_text.ra", str) as w:
        for s in ["", "ä", "ragged ✓"]:
            w.append(s)
            w.flush()


DTYPES = ["|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f2", "<f4", "<f8",
          "<c8", "<c16", "|b1", [("id", "<u4"), ("xyz", "<f8", (3,))]]


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_every_element_type_round_trips_with_rows_of_0_1_and_many(tmp, dt):
    dt = np.dtype(dt)
    rng = np.random.default_rng(7)
    rows = []
    for n in (0, 1, 37, 0, 2):
        raw = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8)
        row = np.frombuffer(raw.tobytes(), dt).copy() if dt != np.bool_ else raw[:n] % 2 == 1
        rows.append(row)
    rawarray.write(tmp / "r.ra", rawarray.Ragged(rows, dtype=dt))
    back = rawarray.read(tmp / "r.ra")
    assert back.dtype == dt and len(back) == 5
    assert back.offsets.tolist() == [0, 0, 1, 38, 38, 40]
    for got, want in zip(back, rows):
        assert got.tobytes() == np.asarray(want, dt).tobytes()
    with rawarray.open(tmp / "r.ra") as f:
        assert f.dtype == dt and f[2].tobytes() == np.asarray(rows[2], dt).tobytes()


def test_values_of_fixed_shape_round_trip(tmp):
    rows = [np.arange(6, dtype="<i4").reshape(2, 3), np.zeros((0, 3), "<i4"), np.ones((1, 3), "<i4")]
    rawarray.write(tmp / "r.ra", rows)
    raw = (tmp / "r.ra").read_bytes()
    values = np.concatenate(rows).tobytes()
    assert raw.startswith(ragged_by_hand(1, 4, [3], [0, 2, 2, 3], values))
    back = rawarray.read(tmp / "r.ra")
    assert back.values.shape == (3, 3)
    for got, want in zip(back, rows):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("rows", [[], [[], [], []]], ids=["no rows", "only empty rows"])
def test_no_rows_and_only_empty_rows(tmp, rows):
    r = rawarray.Ragged(rows, dtype="<u2")
    rawarray.write(tmp / "r.ra", r)
    offsets = [0] * (len(rows) + 1)
    assert (tmp / "r.ra").read_bytes().startswith(ragged_by_hand(2, 2, [], offsets, b""))
    back = rawarray.read(tmp / "r.ra")
    assert len(back) == len(rows) and back.offsets.tolist() == offsets
    assert [x.tolist() for x in back] == rows and back.values.shape == (0,)


def test_bytes_rows_are_uint8_rows(tmp):
    blobs = [b"\x00\xff", b"", bytes(range(256))]
    rawarray.write(tmp / "b.ra", blobs)
    back = rawarray.read(tmp / "b.ra")
    assert not back.is_text and back.dtype == np.uint8
    assert [bytes(x) for x in back] == blobs


def test_equal_rows_stay_a_rectangular_array(tmp):
    rawarray.write(tmp / "a.ra", [np.arange(3), np.arange(3)])
    a = rawarray.read(tmp / "a.ra")
    assert isinstance(a, np.ndarray) and a.shape == (2, 3)
    rawarray.write(tmp / "b.ra", [[1, 2], [3]])
    assert isinstance(rawarray.read(tmp / "b.ra"), rawarray.Ragged)


def test_read_gives_views_of_the_map(tmp):
    rawarray.write(tmp / "r.ra", [np.arange(5, dtype="<i8"), np.arange(3, dtype="<i8")])
    r = rawarray.read(tmp / "r.ra")
    for arr in (r.offsets, r.values):
        assert not arr.flags.writeable
        chain = base_chain(arr)
        assert type(chain[-1]).__name__ == "Buffer" and chain[-1].is_mapped, chain
    assert np.shares_memory(r[1], r.values) and r[1].tolist() == [0, 1, 2]
    # The values follow the offsets in one map: 3 offsets, then the values.
    assert r.values.ctypes.data == r.offsets.ctypes.data + 8 * 3
    with rawarray.open(tmp / "r.ra") as f:
        row = f[0]
    assert base_chain(row)[-1].is_mapped and row.tolist() == [0, 1, 2, 3, 4]  # outlives the close
    assert len(f) == 2 and f.header["values"] == 8
    with pytest.raises(ValueError, match="closed"):
        f[0]


def test_a_row_of_a_large_file_costs_its_own_bytes(tmp):
    # 1 GiB of values, a hole on disk: opening, f[k] and even read() touch only the offsets
    # and the rows asked for (pages of the map), never the whole.
    import resource
    m = 2**30
    path = tmp / "big.ra"
    with path.open("wb") as out:
        out.write(struct.pack("<8Q", MAGIC, 8, 2, 1, 32 + m, 2, m, 3))
        out.write(struct.pack("<4Q", 0, 5, m - 3, m))
        out.truncate(64 + 32 + m)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with rawarray.open(path) as f:
        assert len(f) == 3 and f[0].tolist() == [0] * 5 and f[2].tolist() == [0] * 3
    r = rawarray.read(path)
    assert r.values.shape == (m,) and r[-1].tolist() == [0] * 3
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 64 * 1024, grown_kib


def hostile(tmp, offsets, values_count, slots=None, values=None):
    values = bytes(values_count) if values is None else values
    path = tmp / "h.ra"
    path.write_bytes(ragged_by_hand(2, 1, [], offsets, values, slots))
    return path


@pytest.mark.parametrize("offsets", [
    [0, 3, 2, 4],        # row 1 decreases
    [0, 2, 9, 4],        # row 1 ends past the 4 values
    [0, 2, 2**63, 4],    # row 1 ends at a huge offset
], ids=["decreasing", "past the end", "huge"])
def test_hostile_offsets_are_errors_naming_the_row_and_row_0_still_reads(tmp, offsets):
    path = hostile(tmp, offsets, 4)
    with pytest.raises(rawarray.RaError, match="row 1 "):
        rawarray.read(path)
    with rawarray.open(path) as f:
        assert len(f) == 3 and f[0].tolist() == [0] * offsets[1]
        with pytest.raises(rawarray.RaError, match="row 1 "):
            f[1]
        with pytest.raises(rawarray.RaError, match="row 1 "):
            f.ragged()


def test_hostile_headers_are_errors_before_any_allocation(tmp):
    # offsets[0] != 0
    with pytest.raises(rawarray.RaError, match="row 0"):
        rawarray.read(hostile(tmp, [1, 2], 2))
    # A header claiming 2**40 rows in a file of a few bytes: refused by its size, at open.
    path = tmp / "huge.ra"
    head = struct.pack("<6Q", MAGIC, 8, 2, 1, 16, 2) + struct.pack("<2Q", 0, 2**40)
    path.write_bytes(head + bytes(16))
    with pytest.raises(rawarray.RaError, match="offsets"):
        rawarray.open(path)
    # A header whose size passes the file's end.
    path.write_bytes(struct.pack("<6Q", MAGIC, 8, 2, 1, 2**50, 2) + struct.pack("<2Q", 0, 0))
    with pytest.raises(rawarray.RaError, match="truncated: expected 1125899906842624 data bytes"):
        rawarray.read(path)


HOSTILE_CHILD = """
import sys, rawarray
try:
    with rawarray.open(sys.argv[1]) as f:
        for k in range(min(len(f), 4)):
            f[k]
    rawarray.read(sys.argv[1]).to_list()
    print("READ")
except rawarray.RaError as e:
    print("RaError", e)
"""


def hostile_ragged_files():
    head = lambda eltype, elbyte, size, dims: (struct.pack("<6Q", MAGIC, 8, eltype, elbyte, size, len(dims))
                                               + struct.pack(f"<{len(dims)}Q", *dims))
    yield "decreasing", ragged_by_hand(2, 1, [], [0, 3, 2, 4], bytes(4)), "row 1"
    yield "past the end", ragged_by_hand(2, 1, [], [0, 2, 9, 4], bytes(4)), "row 1"
    yield "huge offset", ragged_by_hand(2, 1, [], [0, 2**64 - 1, 4], bytes(4)), "row 0"
    yield "first not 0", ragged_by_hand(2, 1, [], [5, 5], bytes(5)), "row 0"
    yield "last not m", head(2, 1, 8 * 3 + 3, [3, 2]) + struct.pack("<3Q", 0, 1, 2) + bytes(3), \
        "row 1 ends at value 2, but the file holds 3 values (offsets[2], the last offset"
    yield "lying rows", head(2, 1, 16, [0, 2**40]) + bytes(16), "offsets"
    yield "lying values", head(3, 8, 16, [2**61, 1]) + bytes(16), "overflow"
    yield "value dims overflow", head(3, 8, 16, [2**40, 2**40, 1, 1]) + bytes(16), ""
    yield "one dim", head(2, 1, 8, [0]) + bytes(8), "ndims = 1"
    yield "too many dims", struct.pack("<6Q", MAGIC, 8, 2, 1, 8, 2**40), ""
    yield "truncated", ragged_by_hand(2, 1, [], [0, 2], bytes(2))[:-1], "truncated"
    yield "big-endian ragged", struct.pack("<Q", MAGIC) + struct.pack("<Q", 9) + \
        ragged_by_hand(2, 1, [], [0, 1], b"x")[16:], "flags = 9"


@pytest.mark.parametrize("name,raw,why", list(hostile_ragged_files()),
                         ids=[n for n, _, _ in hostile_ragged_files()])
def test_hostile_ragged_files_are_errors_not_crashes(tmp, name, raw, why):
    path = tmp / "h.ra"
    path.write_bytes(raw)
    out = subprocess.run([sys.executable, "-c", HOSTILE_CHILD, str(path)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, (name, out.returncode, out.stderr[-2000:])
    line = out.stdout.strip()
    assert line.startswith("RaError") and why in line, (name, line, out.stderr[-2000:])


def test_text_that_is_not_utf8_is_refused_naming_the_row(tmp):
    rawarray.write(tmp / "t.ra", ["ok", "zz", "fine"])
    raw = bytearray((tmp / "t.ra").read_bytes())
    at = raw.index(b"okzz") + 2
    raw[at] = 0xFF  # row 1's first byte
    (tmp / "t.ra").write_bytes(bytes(raw))
    with pytest.raises(rawarray.RaError, match="row 1 is not UTF-8"):
        rawarray.read(tmp / "t.ra")
    with rawarray.open(tmp / "t.ra") as f:
        assert f[0] == "ok" and f[2] == "fine"
        with pytest.raises(rawarray.RaError, match="row 1 is not UTF-8"):
            f[1]


def test_a_bool_byte_other_than_0_or_1_is_refused(tmp):
    rawarray.write(tmp / "b.ra", [np.array([True, False]), np.array([True])])
    raw = bytearray((tmp / "b.ra").read_bytes())
    assert raw[64 + 24:64 + 27] == b"\x01\x00\x01"  # 3 offsets, then the values
    raw[64 + 25] = 2
    (tmp / "b.ra").write_bytes(bytes(raw))
    with pytest.raises(rawarray.RaError, match="holds the byte 2"):
        rawarray.read(tmp / "b.ra")
    with rawarray.open(tmp / "b.ra") as f:
        assert f[1].tolist() == [True]
        with pytest.raises(rawarray.RaError, match="holds the byte 2"):
            f[0]


def test_ragged_files_keep_no_params_and_mixed_rows_are_refused(tmp):
    with pytest.raises(rawarray.RaError, match="params"):
        rawarray.write(tmp / "r.ra", [[1], [2, 3]], params={"a": 1})
    with pytest.raises(rawarray.RaError, match="row 1 is str"):
        rawarray.Ragged([[1, 2], "ab"])
    with pytest.raises(rawarray.RaError, match="row 1 holds values of shape"):
        rawarray.Ragged([np.zeros((2, 3)), np.zeros((1, 4))])
    assert not (tmp / "r.ra").exists()


@pytest.mark.parametrize("codec", [None, "zstd"])
def test_an_nd_reader_of_a_ragged_file_points_at_the_ragged_ones(tmp, codec):
    # Plain values (flags 8) and chunked ones (flags 12): both are what the library calls a
    # ragged file, and the message is a Python user's, naming no Rust type.
    rawarray.write(tmp / "r.ra", [[1.0], [2.0, 3.0]], **({"codec": codec} if codec else {}))
    flags = int.from_bytes((tmp / "r.ra").read_bytes()[8:16], "little")
    assert flags == (12 if codec else 8)
    with pytest.raises(rawarray.RaError, match="rawarray.open gives a rawarray.RaggedFile") as e:
        rawarray.File(tmp / "r.ra")
    assert str(tmp / "r.ra") in str(e.value)
    assert "Ragged" not in str(e.value).replace("rawarray.Ragged", ""), str(e.value)
    with pytest.raises(rawarray.RaError, match="ragged array"):
        rawarray.to_dask(tmp / "r.ra")
    # rawarray.read's filters= take records; a ragged file's rows have none.
    with pytest.raises(rawarray.RaError, match="filters= takes record files; this is a ragged"):
        rawarray.read(tmp / "r.ra", filters=[("x", ">", 0)])


def test_a_missing_file_is_the_n_d_readers_oserror(tmp):
    for reader in (rawarray.read, rawarray.open):
        with pytest.raises(FileNotFoundError, match="nope.ra"):
            reader(tmp / "nope.ra")


def test_ragged_rows_index_like_a_list():
    r = rawarray.Ragged(["a", "bc"])
    assert r[-1] == "bc" and len(r) == 2 and list(r) == ["a", "bc"]
    with pytest.raises(IndexError, match="row 2"):
        r[2]
    with pytest.raises(TypeError):
        r["a"]


def test_to_arrow_is_a_large_list_sharing_the_values():
    pa = pytest.importorskip("pyarrow")
    rows = [np.array([1.5, 2.5], "<f4"), np.array([], "<f4"), np.array([-3.0], "<f4")]
    r = rawarray.Ragged(rows)
    a = r.to_arrow()
    assert a.type == pa.large_list(pa.float32())
    assert a.to_pylist() == [[1.5, 2.5], [], [-3.0]]
    assert a.values.buffers()[1].address == r.values.ctypes.data  # no copy
    t = rawarray.Ragged(["hé", "", "abc"]).to_arrow()
    assert t.type == pa.large_string() and t.to_pylist() == ["hé", "", "abc"]
    rec = rawarray.Ragged([np.zeros(2, [("id", "<u4"), ("v", "<f8", (2,))]), np.zeros(0, [("id", "<u4"), ("v", "<f8", (2,))])])
    assert rec.to_arrow().to_pylist() == [[{"id": 0, "v": [0.0, 0.0]}] * 2, []]


def test_to_arrow_of_a_file_read_equals_its_rows(tmp):
    pa = pytest.importorskip("pyarrow")
    rows = [np.arange(k, dtype="<i2") for k in (3, 0, 1, 64)]
    rawarray.write(tmp / "r.ra", rows)
    r = rawarray.read(tmp / "r.ra")
    a = r.to_arrow()
    assert isinstance(a, pa.LargeListArray)
    assert a.to_pylist() == [x.tolist() for x in rows]
    assert a.offsets.to_pylist() == r.offsets.tolist()


def test_to_arrow_without_pyarrow_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match="pip install pyarrow"):
        rawarray.Ragged([[1]]).to_arrow()


def test_the_writer_appends_rows_readers_see_at_each_flush(tmp):
    path = tmp / "w.ra"
    with rawarray.RaggedWriter(path, "<f4") as w:
        w.append([1.0, 2.0])
        w.append([])
        w.flush()
        assert (w.flushed_len, len(w)) == (2, 2)
        with rawarray.open(path) as f:
            assert len(f) == 2 and f[0].tolist() == [1.0, 2.0]
        w.append(np.array([3.0], "<f8"))  # converted to the writer's dtype
        # Not flushed: a reader sees the rows of the last flush.
        assert len(rawarray.read(path)) == 2
        with pytest.raises(rawarray.RaError, match="another writer"):
            rawarray.RaggedWriter(path, "<f4", mode="a")
    assert w.closed
    raw = path.read_bytes()
    values = np.array([1, 2, 3], "<f4").tobytes()
    slots = (struct.unpack_from("<Q", raw, 32)[0] - len(values)) // 8  # the writer's free slots
    assert slots > 4
    assert raw.startswith(ragged_by_hand(3, 4, [], [0, 2, 2, 3], values, slots))
    with rawarray.RaggedWriter(path, "<f4", mode="a") as w:
        w.append([4.0, 5.0])
    assert [x.tolist() for x in rawarray.read(path)] == [[1, 2], [], [3], [4, 5]]
    with pytest.raises(rawarray.RaError, match="not text"):
        rawarray.RaggedWriter(path, str, mode="a")


def test_the_text_writer_writes_what_write_does(tmp):
    with rawarray.RaggedWriter(tmp / "w.ra", str) as w:
        for s in ["hé", "", "abc"]:
            w.append(s)
    rawarray.write(tmp / "t.ra", ["hé", "", "abc"])
    raw, whole = (tmp / "w.ra").read_bytes(), (tmp / "t.ra").read_bytes()
    slots = (struct.unpack_from("<Q", raw, 32)[0] - 6) // 8
    body = ragged_by_hand(2, 1, [], [0, 3, 3, 6], "hé".encode() + b"abc", slots)
    assert raw.startswith(body)
    # The same trailer JSON (the text marker) as rawarray.write's, after each data section.
    json_of = lambda b, at: b[at + 28:at + 28 + struct.unpack_from("<Q", b, at + 8)[0]]
    assert json_of(raw, len(body)) == json_of(whole, 0x66)
    assert rawarray.read(tmp / "w.ra").to_list() == ["hé", "", "abc"]
    with pytest.raises(rawarray.RaError, match="str rows"):
        with rawarray.RaggedWriter(tmp / "x.ra", str) as w:
            w.append(b"bytes")


CHILD = """
import sys, numpy as np, rawarray
with rawarray.RaggedWriter(sys.argv[1], "<i4") as w:
    k = 0
    while True:
        for _ in range(7):
            w.append(np.full(k % 50, k, "<i4"))
            k += 1
        w.flush()
        print(k, flush=True)
"""


def test_a_writer_killed_mid_append_loses_no_committed_row(tmp):
    path = tmp / "killed.ra"
    rng = np.random.default_rng(3)
    # Past 512 rows the writer grows its offsets region (a new file renamed over the path).
    for target in rng.integers(300, 3000, 4):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True)
        committed = 0
        deadline = time.monotonic() + 60
        while committed < target and time.monotonic() < deadline:
            committed = int(child.stdout.readline())
        # Readers opened during the appends see a whole prefix of the rows.
        r = rawarray.read(path)
        assert len(r) >= committed and len(r) % 7 == 0
        assert all(r[k].tolist() == [k] * (k % 50) for k in range(len(r)))
        time.sleep(rng.uniform(0, 0.02))  # a random moment of its loop
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert committed >= target
        r = rawarray.read(path)
        n = len(r)
        assert n >= committed and n % 7 == 0
        for k in range(n):
            assert r[k].tolist() == [k] * (k % 50), k
        # Appending goes on after the kill (the lock died with the process).
        with rawarray.RaggedWriter(path, "<i4", mode="a") as w:
            w.append([-1])
        assert rawarray.read(path)[-1].tolist() == [-1]


def test_the_api_names_are_exported():
    for name in ("Ragged", "RaggedFile", "RaggedWriter"):
        assert name in rawarray.__all__ and repr(getattr(rawarray, name)).startswith(f"<class 'rawarray.{name}'")


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("codec, filt", [("zstd", "byte"), ("lz4", "bit"), ("none", "none")])
def test_compressed_values_keep_plain_offsets_and_round_trip(tmp, codec, filt, version):
    rng = np.random.default_rng(7)
    rows = [np.round(rng.standard_normal(int(k)), 1).astype("<f4") for k in rng.integers(0, 40, 300)]
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype("<u8")
    rawarray.write(tmp / "z.ra", rows, codec=codec, shuffle=filt, chunks=1000, threads=2,
                   layout_version=version)
    raw = (tmp / "z.ra").read_bytes()
    # doc/format.md 10.2, by hand: flags 12, dims [m, n], then slots, the plain offsets, and a
    # chunked section of the values (its config names the codec and filter).
    flags, eltype, elbyte, _, ndims = struct.unpack_from("<5Q", raw, 8)
    assert (flags, eltype, elbyte, ndims) == (12, 3, 4, 2)
    assert struct.unpack_from("<2Q", raw, 48) == (offsets[-1], len(rows))
    (slots,) = struct.unpack_from("<Q", raw, 64)
    assert slots == len(rows) + 1
    assert np.array_equal(np.frombuffer(raw, "<u8", len(offsets), 72), offsets)
    section = 72 + 8 * slots
    codec_id = {"none": 0, "lz4": 1, "zstd": 2}[codec]
    if version == 1:
        # doc/chunked.md 6.1: filter id, codec id, ..., the chunk shape at 48.
        assert raw[section:section + 8] == b"RACHUNK1"
        assert struct.unpack_from("<II", raw, section + 8) == (
            {"none": 0, "byte": 1, "bit": 2}[filt], codec_id)
        chunk_dims = struct.unpack_from("<Q", raw, section + 48)
    else:
        # doc/chunked.md 5.1: codec id, level, filter count, ..., the chunk shape at 40, the
        # block shape, then the filters (id, parameter).
        assert raw[section:section + 8] == b"RACHUNK2"
        (got_codec, _level, nf) = struct.unpack_from("<IiI", raw, section + 8)
        filters = [struct.unpack_from("<II", raw, section + 56 + 8 * i)[0] for i in range(nf)]
        assert (got_codec, filters) == (codec_id, {"none": [], "byte": [1], "bit": [2]}[filt])
        chunk_dims = struct.unpack_from("<Q", raw, section + 40)
    assert chunk_dims == (1000,)
    if codec != "none":
        assert len(raw) < 72 + offsets.nbytes + 4 * int(offsets[-1])   # smaller than plain values
    r = rawarray.read(tmp / "z.ra")
    assert len(r) == len(rows) and all(np.array_equal(a, b) for a, b in zip(r, rows))
    with rawarray.open(tmp / "z.ra") as f:
        for k in (0, 137, len(rows) - 1):
            assert np.array_equal(f[k], rows[k])


def test_compressed_text_and_refused_codec_keywords(tmp):
    words = ["hé", "", "abc", "ünïcödé"] * 50
    rawarray.write(tmp / "t.ra", words, codec="zstd")
    r = rawarray.read(tmp / "t.ra")
    assert r.is_text and r.to_list() == words
    assert struct.unpack_from("<Q", (tmp / "t.ra").read_bytes(), 8) == (12,)
    for kw, why in [(dict(codec="lz4-whole"), "lz4-whole"), (dict(compress=True), "compress"),
                    (dict(chunks=(4,)), "values per chunk"), (dict(chunks=0), "values per chunk"),
                    (dict(codec="gzip"), "codec: expected")]:
        with pytest.raises(rawarray.RaError, match=why):
            rawarray.write(tmp / "bad.ra", words, **kw)
    assert not (tmp / "bad.ra").exists()


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("codec, filt", [("zstd", "byte"), ("lz4", "bit"), ("none", "none")])
def test_the_writer_compresses_rows_as_write_does(tmp, codec, filt, version):
    rng = np.random.default_rng(11)
    rows = [np.round(rng.standard_normal(int(k)), 1).astype("<f4") for k in rng.integers(0, 40, 900)]
    path = tmp / "w.ra"
    # Flushes of 1 to 49 rows into chunks of 100 values: most end inside a chunk.
    with rawarray.RaggedWriter(path, "<f4", codec=codec, shuffle=filt, chunks=100, threads=2,
                               layout_version=version) as w:
        k = 0
        while k < 600:
            for r in rows[k:k + 1 + k % 49]:
                w.append(r)
            w.flush()
            k = len(w)
            assert w.flushed_len == k
            # A reader between flushes sees exactly the rows flushed, against numpy's.
            got = rawarray.read(path)
            assert len(got) == k and all(np.array_equal(a, b) for a, b in zip(got, rows))
    with rawarray.RaggedWriter(path, "<f4", mode="a") as w:     # continues, as written
        assert len(w) == k
        for r in rows[k:]:
            w.append(r)
    raw = path.read_bytes()
    flags, eltype, elbyte = struct.unpack_from("<3Q", raw, 8)
    assert (flags, eltype, elbyte) == (12, 3, 4)                # compressed values (10.2)
    (slots,) = struct.unpack_from("<Q", raw, 64)
    section = 72 + 8 * slots
    assert raw[section:section + 8] == (b"RACHUNK1" if version == 1 else b"RACHUNK2")
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype("<u8")
    assert np.array_equal(np.frombuffer(raw, "<u8", len(offsets), 72), offsets)
    got = rawarray.read(path)
    assert len(got) == len(rows) and all(np.array_equal(a, b) for a, b in zip(got, rows))
    with rawarray.open(path) as f:
        assert f.compression["codec"] == codec
        assert f.compression["chunks"][0] == 100
        for j in (0, 1, k - 1, k, len(rows) - 1):
            assert np.array_equal(f[j], rows[j])


def test_the_writer_compresses_text_rows(tmp):
    words = [("hé" * (k % 5)) + str(k) + ("ünïcödé" if k % 3 else "") for k in range(500)]
    path = tmp / "t.ra"
    with rawarray.RaggedWriter(path, str, codec="zstd") as w:    # chunks: the first flush's
        for k, s in enumerate(words[:300]):
            w.append(s)
            if k % 17 == 3:
                w.flush()
    with rawarray.RaggedWriter(path, str, mode="a") as w:
        for s in words[300:]:
            w.append(s)
    r = rawarray.read(path)
    assert r.is_text and r.to_list() == words
    assert struct.unpack_from("<Q", path.read_bytes(), 8) == (12,)
    with rawarray.open(path) as f:
        assert f[321] == words[321] and f.compression["codec"] == "zstd"


def test_the_writers_refused_codec_keywords(tmp):
    for kw, why in [(dict(codec="lz4-whole"), "lz4-whole"), (dict(chunks=(4,)), "values per chunk"),
                    (dict(chunks=0), "values per chunk"), (dict(codec="gzip"), "codec: expected"),
                    (dict(blocks=-1), "values per block")]:
        with pytest.raises(rawarray.RaError, match=why):
            rawarray.RaggedWriter(tmp / "bad.ra", "<f8", **kw)
    assert not (tmp / "bad.ra").exists()
    # A file of plain values keeps them: compression keywords with mode="a" are refused.
    with rawarray.RaggedWriter(tmp / "p.ra", "<f8") as w:
        w.append([1.0, 2.0])
    with pytest.raises(rawarray.RaError, match="values are plain.*codec"):
        rawarray.RaggedWriter(tmp / "p.ra", "<f8", mode="a", codec="zstd")
    assert rawarray.read(tmp / "p.ra").to_list()[0].tolist() == [1.0, 2.0]
