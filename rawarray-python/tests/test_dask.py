"""Dask over .ra files, on a real distributed cluster of two worker processes: lazy reads
(``from_array`` of a ``File``, ``rawarray.to_dask``) and parallel writes into one file
(``dask.array.store`` into a ``rawarray.ArrayWriter``), checked against numpy on the whole array
and against the bytes ``rawarray.write`` puts on disk."""

import pickle
import threading

import numpy as np
import pytest

import rawarray

da = pytest.importorskip("dask.array", reason="dask is not installed (tests/python/requirements.txt pins it)")
distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def field(shape=(24, 30, 20)):
    return (np.arange(np.prod(shape)) * 0.37 % 11 - 5).reshape(shape).astype("<f8")


@pytest.mark.parametrize("mmap", [True, False])
def test_a_mean_over_the_cluster_equals_numpys(tmp, client, mmap):
    a = field()
    path = tmp / "field.ra"
    rawarray.write(path, a)
    f = rawarray.open(path, mmap=mmap)
    x = da.from_array(f, chunks=(5, 16, 20))
    assert x.numblocks == (5, 2, 1)           # larger than one chunk in two axes
    assert f.io_stats["bytes"] == 0 or mmap   # building the graph read no data
    got = x.mean(axis=0).compute()
    np.testing.assert_allclose(got, a.mean(axis=0), rtol=1e-12)
    # The tasks ran in the workers: two processes, neither this one.
    pids = client.run(lambda: __import__("os").getpid())
    assert len(set(pids.values())) == 2
    y = rawarray.to_dask(path, chunks=(7, 30, 20))
    np.testing.assert_allclose(y.mean(axis=(0, 2)).compute(), a.mean(axis=(0, 2)), rtol=1e-12)
    np.testing.assert_array_equal(y[3:20:4, ::-2, 7].compute(), a[3:20:4, ::-2, 7])


def test_a_file_has_what_dask_asks_for(tmp):
    a = field((4, 5, 6))
    rawarray.write(tmp / "a.ra", a)
    with rawarray.open(tmp / "a.ra") as f:
        assert (f.shape, f.dtype, f.ndim, f.chunks) == (a.shape, a.dtype, 3, None)
        x = da.from_array(f)
        np.testing.assert_array_equal(x.compute(scheduler="threads"), a)
        # The same unchanged file, the same dask name.
        assert rawarray.to_dask(tmp / "a.ra").name == rawarray.to_dask(tmp / "a.ra").name


def test_store_from_the_cluster_writes_rawarray_writes_bytes(tmp, client):
    a = field((26, 18, 10))
    rawarray.write(tmp / "whole.ra", a)
    x = da.from_array(a, chunks=(7, 9, 10))
    with rawarray.ArrayWriter(tmp / "stored.ra", a.shape, a.dtype) as w:
        assert w.created
        da.store(x, w, lock=False)
    assert (tmp / "stored.ra").read_bytes() == (tmp / "whole.ra").read_bytes()
    # A big-endian integer array is stored little-endian, as rawarray.write stores it.
    b = np.arange(26 * 4, dtype=">i4").reshape(26, 4)
    rawarray.write(tmp / "b_whole.ra", b)
    with rawarray.ArrayWriter(tmp / "b.ra", b.shape, b.dtype) as w:
        da.store(da.from_array(b, chunks=(5, 3)), w, lock=False)
    assert (tmp / "b.ra").read_bytes() == (tmp / "b_whole.ra").read_bytes()


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_store_from_the_cluster_into_a_chunked_file_gives_the_same_values(tmp, client, codec):
    a = field((26, 18, 10))
    path = tmp / "z.ra"
    with rawarray.ArrayWriter(path, a.shape, a.dtype, chunks=(7, 9, 10), codec=codec,
                              shuffle="byte") as w:
        # Blocks off the file's chunks are refused in the workers, naming both.
        with pytest.raises(ValueError, match=r"chunks \(7, 9, 10\)"):
            da.store(da.from_array(a, chunks=(5, 18, 10)), w, lock=False)
        da.store(da.from_array(a, chunks=(5, 18, 10)).rechunk(w.chunks), w, lock=False)
    with rawarray.open(path) as f:
        assert (f.chunks, f.compression["codec"], f.compression["shuffle"]) == ((7, 9, 10), codec, "byte")
        np.testing.assert_array_equal(f[...], a)
        assert f.compression["ratio"] > 1
    # The same values as rawarray.write gives with the same settings (the chunks' order on
    # disk is the order the workers committed them).
    rawarray.write(tmp / "whole.ra", a, chunks=(7, 9, 10), codec=codec, shuffle="byte")
    with rawarray.open(tmp / "whole.ra") as whole, rawarray.open(path) as f:
        np.testing.assert_array_equal(f[...], whole[...])
        settings = ("codec", "level", "shuffle", "chunks")
        assert [f.compression[k] for k in settings] == [whole.compression[k] for k in settings]


def test_racing_writers_share_one_file(tmp):
    path = tmp / "r.ra"
    writers = [None] * 4

    def start(i):
        writers[i] = rawarray.ArrayWriter(path, (4, 8), "<u2")
        writers[i][i] = np.full(8, i + 1)

    threads = [threading.Thread(target=start, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(w.created for w in writers) == 1
    for w in writers:
        w.close()
    np.testing.assert_array_equal(rawarray.read(path), np.repeat(np.arange(1, 5), 8).reshape(4, 8))


def test_writer_keys_and_refusals(tmp):
    path = tmp / "w.ra"
    with rawarray.ArrayWriter(path, (3, 4), "f4") as w:
        w[1] = 2.0                     # broadcast, as numpy assigns
        w[-1, 1:3] = [5, 6]
        with pytest.raises(IndexError, match="step 2"):
            w[::2] = 0
        with pytest.raises(IndexError, match="axis 1 with size 4"):
            w[0, 4] = 0
        with pytest.raises(ValueError):
            w[0] = np.zeros(3)
        with pytest.raises(rawarray.RaError):
            rawarray.ArrayWriter(path, (3, 5), "f4")  # the file there holds another array
    want = np.zeros((3, 4), "f4")
    want[1] = 2
    want[-1, 1:3] = [5, 6]
    np.testing.assert_array_equal(rawarray.read(path), want)
    with rawarray.ArrayWriter(path) as w:
        assert (w.shape, w.dtype) == ((3, 4), np.dtype("<f4"))
        blob = pickle.dumps(w)
    rawarray.write(path, np.zeros((4, 4), "f4"))        # a new file at the path
    with pytest.raises(rawarray.RaError, match="changed since"):
        pickle.loads(blob)


def test_threads_share_one_file(tmp):
    a = field((12, 10, 8))
    rawarray.write(tmp / "t.ra", a)
    f = rawarray.open(tmp / "t.ra", mmap=False)
    x = da.from_array(f, chunks=(1, 5, 8))
    np.testing.assert_array_equal(x.compute(scheduler="threads", num_workers=4), a)
    # Every chunk read once, by the one File all threads shared: the whole array, no more.
    assert f.io_stats["bytes"] == a.nbytes
