"""Reading parts of a large file, and a Dask reduction over it, against numpy's memory map, h5py
and zarr on the same data (files in the page cache); prints a table of medians and ratios
(ours / baseline, time: lower is better).

    pip install -r rawarray-python/bench/requirements.txt    # h5py, zarr, dask[distributed]
    python rawarray-python/bench/dist.py [--mib 1024] [--runs 21]

The array is float32 of numpy shape (planes, 512, 512), ``--mib`` MiB in all (1 GiB: 1024
planes). Part 1, ``File[key]`` for a plane ``a[k]``, a column ``a[:, i, j]`` and an element
``a[k, i, j]`` (indices drawn afresh each run, the result copied into memory: numpy's map
gives views) against ``np.load(mmap_mode="r")[key]`` and h5py's ``Dataset[key]`` (contiguous
layout). Part 2, ``x.mean(axis=0)`` on a ``distributed.LocalCluster`` of 2 worker processes
(one thread each), in chunks of 64 planes: ``rawarray.to_dask`` against ``da.from_array`` of
an HDF5 dataset (opened in each task: h5py objects do not pickle) and ``da.from_zarr`` of an
uncompressed zarr array of the same chunks."""

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

import rawarray

SIDE = 512


def median_time(fn, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


class H5Array:
    """An HDF5 dataset for dask: a path and a name, opened by the task that reads a block
    (h5py's own objects cannot be sent to another process)."""

    def __init__(self, path, name):
        import h5py

        self.path, self.name = path, name
        with h5py.File(path, "r") as f:
            d = f[name]
            self.shape, self.dtype = d.shape, d.dtype
        self.ndim = len(self.shape)

    def __getitem__(self, key):
        import h5py

        with h5py.File(self.path, "r") as f:
            return f[self.name][key]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--dask-runs", type=int, default=3)
    args = ap.parse_args()
    import dask.array as da
    import distributed
    import h5py
    import zarr

    planes = args.mib * (1 << 20) // (SIDE * SIDE * 4)
    shape = (planes, SIDE, SIDE)
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as d:
        ra, npy, h5, zr = (os.path.join(d, x) for x in ("a.ra", "a.npy", "a.h5", "a.zarr"))
        # Written plane by plane, so that only one plane is ever in memory besides the files.
        with rawarray.ArrayWriter(ra, shape, "<f4") as w:
            npm = np.lib.format.open_memmap(npy, mode="w+", dtype="<f4", shape=shape)
            with h5py.File(h5, "w") as hf:
                hd = hf.create_dataset("a", shape=shape, dtype="<f4")
                z = zarr.create_array(zr, shape=shape, chunks=(64, SIDE, SIDE), dtype="<f4",
                                      compressors=None)
                for k in range(0, planes, 64):
                    block = (np.arange(k, min(k + 64, planes), dtype="<f4")[:, None, None]
                             + np.linspace(0, 1, SIDE * SIDE, dtype="<f4").reshape(SIDE, SIDE))
                    w[k:k + len(block)] = block
                    npm[k:k + len(block)] = block
                    hd[k:k + len(block)] = block
                    z[k:k + len(block)] = block
            npm.flush()
            del npm
        f = rawarray.open(ra)
        fr = rawarray.open(ra, mmap=False)
        m = np.load(npy, mmap_mode="r")
        hf = h5py.File(h5, "r")
        hd = hf["a"]
        # Every file read once whole: the runs measure the page cache, not the disk.
        for whole in (f.array(), m):
            float(whole.sum(dtype=np.float64))
        hd[...]

        rng = np.random.default_rng(1)
        keys = {
            "a plane a[k]": lambda: (int(rng.integers(planes)),),
            "a column a[:, i, j]": lambda: (slice(None), int(rng.integers(SIDE)), int(rng.integers(SIDE))),
            "an element a[k, i, j]": lambda: tuple(int(rng.integers(n)) for n in shape),
        }
        for what, key in keys.items():
            check = key()
            want = np.array(m[check])
            for got in (f[check], fr[check], hd[check]):
                assert np.array_equal(np.asarray(got), want), what
            t_ours = median_time(lambda: np.array(f[key()]), args.runs)
            t_pread = median_time(lambda: np.array(fr[key()]), args.runs)
            t_npy = median_time(lambda: np.array(m[key()]), args.runs)
            t_h5 = median_time(lambda: hd[key()], args.runs)
            rows.append((what, "rawarray.open(p)[key]", "np.load(mmap_mode='r')[key]", t_ours, t_npy))
            rows.append((what, "rawarray.open(p)[key]", "h5py Dataset[key]", t_ours, t_h5))
            rows.append((what, "rawarray.open(p, mmap=False)[key]", "h5py Dataset[key]", t_pread, t_h5))
        hf.close()

        want = m.mean(axis=0, dtype=np.float64)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster):
            chunks = (64, SIDE, SIDE)
            lazies = {
                "rawarray.to_dask": lambda: rawarray.to_dask(ra, chunks=chunks),
                "h5py, da.from_array": lambda: da.from_array(H5Array(h5, "a"), chunks=chunks, lock=False),
                "zarr, da.from_zarr": lambda: da.from_zarr(zr),
            }
            times = {}
            for name, lazy in lazies.items():
                got = lazy().mean(axis=0, dtype=np.float64).compute()
                np.testing.assert_allclose(got, want, rtol=1e-6)
                times[name] = median_time(lambda: lazy().mean(axis=0, dtype=np.float64).compute(),
                                          args.dask_runs)
            for base in ("h5py, da.from_array", "zarr, da.from_zarr"):
                rows.append((f"Dask mean(axis=0) of {args.mib} MiB, 2 workers", "rawarray.to_dask", base,
                             times["rawarray.to_dask"], times[base]))
        del m

    print("| operation | ours | baseline | ours (ms) | baseline (ms) | ratio (time) |")
    print("|---|---|---|---:|---:|---:|")
    for op, ours, base, t1, t2 in rows:
        print(f"| {op} | `{ours}` | `{base}` | {t1 * 1e3:.3f} | {t2 * 1e3:.3f} | {t1 / t2:.2f} |")


if __name__ == "__main__":
    main()
