"""rawarray.RecordWriter: the Rust record writer from Python. Its files are checked by hand
(header words, packed bytes, trailer tags), read back by the package, locked against a second
writer, and left valid by a writer killed mid-append."""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import rawarray
from conftest import parse_by_hand

REC = np.dtype([("t", "<f8"), ("xyz", "<f4", (3,)), ("id", "<u2")])


def recs(start, n):
    a = np.zeros(n, REC)
    k = np.arange(start, start + n)
    a["t"] = k * 0.5
    a["xyz"] = np.stack([k, -k, k * 2], axis=1)
    a["id"] = k
    return a


def test_appended_records_are_the_packed_bytes(tmp):
    path = tmp / "r.ra"
    with rawarray.RecordWriter(path, REC, params={"dt": 0.5}) as w:
        assert w.dtype == REC
        w.append(recs(0, 3))
        w.flush()
        assert (w.flushed_len, len(w)) == (3, 3)
        h, data, _ = parse_by_hand(path.read_bytes())
        assert (h["eltype"], h["elbyte"], h["dims"]) == (0, 22, [3])  # committed, readers see it
        w.append(recs(3, 4)[0])  # one record
        w.append(recs(4, 6))
        assert (w.flushed_len, len(w)) == (3, 10)
    assert w.closed
    raw = path.read_bytes()
    h, data, trailing = parse_by_hand(raw)
    assert h["dims"] == [10] and data == recs(0, 10).tobytes()
    assert trailing[:8] == b"RATRAILR" and trailing[-8:] == b"RATRAILR"
    with rawarray.open(path) as f:
        assert f.params == {"dt": 0.5} and f.dtype == REC
        np.testing.assert_array_equal(f.array(), recs(0, 10))


def test_append_mode_continues_and_a_second_writer_is_locked_out(tmp):
    path = tmp / "r.ra"
    w = rawarray.RecordWriter(path, REC)
    w.append(recs(0, 2))
    w.flush()
    with pytest.raises(rawarray.RaError, match="another writer"):
        rawarray.RecordWriter(path, REC, mode="a")
    w.close()
    with rawarray.RecordWriter(path, REC, mode="a") as w2:
        w2.append(recs(2, 3))
    np.testing.assert_array_equal(rawarray.read(path), recs(0, 5))
    with pytest.raises(rawarray.RaError):
        rawarray.RecordWriter(path, np.dtype("<f8"), mode="a")  # another element type


def test_snapshots_of_a_plain_dtype(tmp):
    path = tmp / "field.ra"
    with rawarray.RecordWriter(path, "<f4", shape=(2, 3)) as w:
        for step in range(4):
            w.append(np.full((2, 3), step, "<f4") + np.arange(6, dtype="<f4").reshape(2, 3))
            w.flush()
    h, _, _ = parse_by_hand(path.read_bytes())
    assert (h["eltype"], h["elbyte"], h["dims"]) == (3, 4, [3, 2, 4])
    a = rawarray.read(path)
    assert a.shape == (4, 2, 3)
    np.testing.assert_array_equal(a[3], np.arange(6).reshape(2, 3) + 3)
    with rawarray.RecordWriter(path, "<f4", shape=(2, 3), mode="a") as w:
        with pytest.raises(rawarray.RaError, match="shape"):
            w.append(np.zeros((3, 2), "<f4"))


CHILD = """
import sys, numpy as np, rawarray
rec = np.dtype([("t", "<f8"), ("xyz", "<f4", (3,)), ("id", "<u2")])
w = rawarray.RecordWriter(sys.argv[1], rec, params={"child": True})
k = 0
while True:
    a = np.zeros(7, rec)
    ks = np.arange(k, k + 7)
    a["t"] = ks * 0.5; a["xyz"] = np.stack([ks, -ks, ks * 2], axis=1); a["id"] = ks
    w.append(a)
    k += 7
    if k % 21 == 0:
        w.flush()
        print(k, flush=True)
"""


def test_a_writer_killed_mid_append_leaves_a_valid_file(tmp):
    path = tmp / "killed.ra"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True)
    committed = 0
    deadline = time.monotonic() + 60
    while committed < 2100 and time.monotonic() < deadline:
        committed = int(child.stdout.readline())
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert committed >= 2100
    h, data, _ = parse_by_hand(path.read_bytes())
    n = h["dims"][0]
    assert n >= committed and n % 21 == 0  # every flush it reported, and only whole flushes
    assert len(data) == n * 22
    a = rawarray.read(path)
    np.testing.assert_array_equal(a, recs(0, n))
    assert rawarray.open(path).params == {"child": True}
    # Appending goes on after the kill (the lock died with the process).
    with rawarray.RecordWriter(path, REC, mode="a") as w:
        w.append(recs(n, 1))
    assert rawarray.read(path).shape == (n + 1,)


@pytest.mark.parametrize("writer", ["records", "ragged", "array"])
def test_writers_refuse_values_their_dtype_would_change(tmp, writer):
    # numpy's astype would store 1 for 1.7, 44 for 300, 255 for -1 and True for 2.
    cases = [("<i4", [1.7], "1.7"), ("u1", [300], "300"), ("u1", [-1], "-1"), ("?", [2], "2"),
             ("<i4", [2**40], str(2**40)), ("<f8", [1 + 2j], "1+2j")]
    for dtype, bad, shown in cases:
        if writer == "array" and dtype == "?":
            continue                                     # ArrayWriter has no bool marker
        path = tmp / f"{writer}-{np.dtype(dtype).str}.ra"
        if writer == "records":
            w = rawarray.RecordWriter(path, dtype)
        elif writer == "ragged":
            w = rawarray.RaggedWriter(path, dtype)
        else:
            w = rawarray.ArrayWriter(path, (1,), dtype)
        with w:
            put = w.__setitem__ if writer == "array" else None
            with pytest.raises(rawarray.RaError, match=rf"value .*{re.escape(shown)}.* does not fit the writer's dtype"):
                put(slice(None), bad) if put else w.append(bad)
            # What fits exactly is stored: ints into floats, floats rounded to float32, 255 in u1.
            good = {"<i4": [7.0], "u1": [255], "?": [1], "<f8": [3]}[dtype]
            put(slice(None), good) if put else w.append(good)
        got = rawarray.read(path)
        got = got[0] if writer == "ragged" else got
        assert got.tolist() == np.asarray(good, dtype).tolist()
    with rawarray.RecordWriter(tmp / "f4.ra", "<f4") as w:
        w.append([0.1])                                  # rounds to float32, as the dtype does
    assert rawarray.read(tmp / "f4.ra").tobytes() == np.float32(0.1).tobytes()
    with rawarray.RecordWriter(tmp / "s.ra", "<f4") as w:
        with pytest.raises(rawarray.RaError, match="not of the writer's"):
            w.append(np.array(["1.5"]))                  # numpy would parse the text


def test_the_writers_rule_on_arrays_records_and_floats(tmp):
    from rawarray._core import _as_writer_dtype as conv
    ml_dtypes = pytest.importorskip("ml_dtypes")
    refused = [
        (np.array([-1], np.int8), "u1"), (np.array([-1], np.int32), "<u4"),     # sign changes
        (np.array([2**64 - 1], np.uint64), "<i8"),
        ([70000.0], "<f2"), ([1e300], "<f4"),                                   # overflow to inf
        ([(1, 2.5)], [("a", "<i4"), ("b", "<i4")]),                              # a record's field
        ([(1.5, [1, 2, 3.5])], [("t", "<f8"), ("p", "<i2", (3,))]),
    ]
    for values, dtype in refused:
        with pytest.raises(rawarray.RaError, match="does not fit|do not fit"):
            conv(values, np.dtype(dtype), "x")
    big = np.array([(7, -2.5)], [("a", ">i4"), ("b", ">f8")])
    kept = [  # (values, dtype, the values as stored)
        ([1.5, 2.0], ml_dtypes.bfloat16, [1.5, 2.0]),
        (np.array([1.5], ml_dtypes.bfloat16), "<f4", [1.5]),
        ([2**70], "<f8", [2.0**70]), ([complex(np.nan, 0)], "<f8", [np.nan]),
        (np.array([5], np.int64), "u1", [5]), ([(1, 2)], [("a", "<i4"), ("b", "<i4")], [(1, 2)]),
        (big, [("a", "<i4"), ("b", "<f8")], [(7, -2.5)]),
    ]
    for values, dtype, stored in kept:
        got = conv(values, np.dtype(dtype), "x")
        assert got.dtype == np.dtype(dtype)
        assert got.tobytes() == np.array(stored, dtype).tobytes(), (values, dtype)
    rec = np.dtype([("a", "<i4"), ("b", "<f8")])
    with rawarray.RecordWriter(tmp / "e.ra", rec) as w:
        w.append([])                                     # no record: no value to change
        w.append([(1, 0.5)])
    assert rawarray.read(tmp / "e.ra").tolist() == [(1, 0.5)]
