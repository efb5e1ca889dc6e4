"""rawarray.RecordWriter with compression (``codec=``, issue 23 item 8): records stored a chunk
at a time in the chunked layout (doc/chunked.md, "A record file's last chunk"). Every read is
compared with the numpy records written (the truth), through ``rawarray.read``, ``open``'s
``array()`` and ``f[...]``; the header's flag bit 2 is read by hand; a reader during appends and
a writer killed by SIGKILL are separate processes."""

import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import rawarray
from conftest import parse_by_hand

REC = np.dtype([("t", "<f8"), ("xyz", "<f4", (3,)), ("id", "<u2")])
CHUNKED = 4  # the header's flag bit 2: a chunked data section


def recs(start, n):
    a = np.zeros(n, REC)
    k = np.arange(start, start + n)
    a["t"] = k * 0.5
    a["xyz"] = np.stack([k, -k, k * 2], axis=1)
    a["id"] = k
    return a


def check_reads(path, truth):
    """Every way to read the file gives ``truth``."""
    np.testing.assert_array_equal(rawarray.read(path), truth)
    for mmap in (True, False):
        with rawarray.open(path, mmap=mmap) as f:
            np.testing.assert_array_equal(f.array(), truth)
            for key in (0, -1, slice(3, len(truth) - 2, 5), slice(None, None, -7), [1, 0, 4]):
                np.testing.assert_array_equal(f[key], truth[key], err_msg=str(key))


@pytest.mark.parametrize("codec,shuffle", [("zstd", None), ("lz4", "bit"), ("none", "none"),
                                           ("zstd", "byte")])
def test_each_codec_round_trips_with_flushes_inside_chunks(tmp, codec, shuffle):
    path = tmp / "r.ra"
    with rawarray.RecordWriter(path, REC, params={"dt": 0.5}, codec=codec, shuffle=shuffle,
                               level=5 if codec == "zstd" else None, chunks=50, threads=2) as w:
        for batch in range(9):
            w.append(recs(17 * batch, 17))
            w.flush()  # 17 records a flush, 50 a chunk: most flushes end inside a chunk
            n = 17 * (batch + 1)
            assert w.flushed_len == n
            np.testing.assert_array_equal(rawarray.read(path), recs(0, n))
        w.append(recs(153, 40))  # left for close to commit
    h, _, _ = parse_by_hand(path.read_bytes())
    assert h["flags"] & CHUNKED and h["dims"] == [193]
    check_reads(path, recs(0, 193))
    with rawarray.open(path) as f:
        assert f.params == {"dt": 0.5} and f.dtype == REC
        assert f.chunks == (50,)
        c = f.compression
        assert (c["codec"], c["chunks"]) == (codec, (50,))
        assert c["shuffle"] == (shuffle or "byte")  # the library's default filter
        if codec == "zstd":
            assert c["level"] == 5


def test_snapshots_compress_in_chunks_of_whole_records(tmp):
    path = tmp / "field.ra"
    truth = (np.arange(30 * 4 * 6) % 13 * 0.25).astype("<f4").reshape(30, 4, 6)
    with rawarray.RecordWriter(path, "<f4", shape=(4, 6), codec="zstd", chunks=(8, 4, 6)) as w:
        for step in range(30):
            w.append(truth[step])
            if step % 3 == 0:
                w.flush()
    check_reads(path, truth)
    with rawarray.open(path) as f:
        assert f.chunks == (8, 4, 6) and f.compression["codec"] == "zstd"
        np.testing.assert_array_equal(f[5:19, 2, ::2], truth[5:19, 2, ::2])
    with pytest.raises(rawarray.RaError, match=r"chunks: expected records per chunk.*\(4, 6\)"):
        rawarray.RecordWriter(tmp / "x.ra", "<f4", shape=(4, 6), chunks=(8, 2, 6))


def test_whole_section_lz4_and_unknown_codecs_are_refused(tmp):
    with pytest.raises(rawarray.RaError, match="cannot write \"lz4-whole\".*cannot be appended"):
        rawarray.RecordWriter(tmp / "a.ra", REC, codec="lz4-whole")
    with pytest.raises(rawarray.RaError) as e:
        rawarray.RecordWriter(tmp / "b.ra", REC, codec="gzip")
    assert "expected one of none, lz4, zstd, pco, huffman, found \"gzip\"" in str(e.value)
    assert "lz4-whole" not in str(e.value)  # not a codec a record writer can take
    with pytest.raises(rawarray.RaError, match="shuffle"):
        rawarray.RecordWriter(tmp / "c.ra", REC, shuffle="delta")
    assert not (tmp / "a.ra").exists() and not (tmp / "b.ra").exists()


def test_reopening_a_compressed_file_appends_compressed(tmp):
    path = tmp / "r.ra"
    with rawarray.RecordWriter(path, REC, codec="lz4", chunks=16) as w:
        w.append(recs(0, 21))
    with rawarray.RecordWriter(path, REC, mode="a") as w:
        assert w.flushed_len == 21
        w.append(recs(21, 30))
        w.flush()
        np.testing.assert_array_equal(rawarray.read(path), recs(0, 51))
        w.append(recs(51, 2))
    check_reads(path, recs(0, 53))
    with rawarray.open(path) as f:
        assert f.compression["codec"] == "lz4" and f.chunks == (16,)
    # A plain file that holds records keeps its layout: compression options are refused.
    plain = tmp / "plain.ra"
    with rawarray.RecordWriter(plain, REC) as w:
        w.append(recs(0, 3))
    with pytest.raises(rawarray.RaError, match="not compressed"):
        rawarray.RecordWriter(plain, REC, mode="a", codec="zstd")
    np.testing.assert_array_equal(rawarray.read(plain), recs(0, 3))


# A writer process: 7 records an append, a flush every 21 (chunks of 50, so most flushes end
# inside a chunk), each flush reported on stdout once it returned.
CHILD = """
import sys, numpy as np, rawarray
rec = np.dtype([("t", "<f8"), ("xyz", "<f4", (3,)), ("id", "<u2")])
w = rawarray.RecordWriter(sys.argv[1], rec, codec=sys.argv[2], chunks=50, params={"child": True})
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


def writer(path, codec):
    return subprocess.Popen([sys.executable, "-c", CHILD, str(path), codec],
                            stdout=subprocess.PIPE, text=True)


def test_a_reader_during_appends_sees_a_prefix_of_the_records(tmp):
    path = tmp / "live.ra"
    child = writer(path, "zstd")
    try:
        assert int(child.stdout.readline()) >= 21  # the file exists, one flush committed
        seen, reads, lengths = 0, 0, set()
        deadline = time.monotonic() + 60
        while (reads < 100 or seen < 3000) and time.monotonic() < deadline:
            with rawarray.open(path) as f:
                a = f.array()
                n = len(a)
                assert n >= seen and n % 21 == 0  # whole flushes, never fewer than before
                np.testing.assert_array_equal(a, recs(0, n))
                if n:
                    np.testing.assert_array_equal(f[n // 2:], recs(n // 2, n - n // 2))
                assert f.compression["codec"] == "zstd"
            seen, reads = n, reads + 1
            lengths.add(n)
        assert seen >= 3000, f"the writer committed {seen} records in 60 s"
        assert reads >= 100 and len(lengths) > 10  # reads of many states as the file grew
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_a_compressed_writer_killed_mid_append_loses_nothing_flushed(tmp, codec):
    path = tmp / "killed.ra"
    child = writer(path, codec)
    committed = 0
    deadline = time.monotonic() + 60
    while committed < 2100 and time.monotonic() < deadline:
        committed = int(child.stdout.readline())
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert committed >= 2100
    h, _, _ = parse_by_hand(path.read_bytes())
    n = h["dims"][0]
    assert h["flags"] & CHUNKED
    assert n >= committed and n % 21 == 0  # every flush it reported, and only whole flushes
    check_reads(path, recs(0, n))
    with rawarray.open(path) as f:
        assert f.params == {"child": True} and f.compression["codec"] == codec
    # Appending goes on after the kill (the lock died with the process), still compressed.
    with rawarray.RecordWriter(path, REC, mode="a") as w:
        w.append(recs(n, 5))
    check_reads(path, recs(0, n + 5))
    assert rawarray.open(path).compression["codec"] == codec
