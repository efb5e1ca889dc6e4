"""One element at a time, as a user reads it: ``f = rawarray.open(p, mmap=False)`` once, then
``f[i, j, k]`` at random ``(i, j, k)``, against h5py's ``ds[i, j, k]`` of the same data, in one
process, on files in the page cache. Prints a table of the time per read of each, the best of
several rounds run alternately (the other work of a shared machine falls on both alike, and
the best round is the one it disturbed least), and their ratio (ours / h5py).

    python rawarray-python/bench/index_one.py [--side 256] [--reads 20000] [--rounds 15]

The array is float32 of numpy shape ``(side, side, side)`` (64 MiB at 256). Rows: a plain file
with ``mmap=False`` and with the default map, against a contiguous HDF5 dataset; a chunked zstd
file (``chunks=(32, 32, 32)``, the library's default level and blocks) against an HDF5
dataset of the same chunks compressed with hdf5plugin's zstd (gzip when hdf5plugin is not
installed: the row says which), each with its default caches; one row ``f[i, j]`` of ``side``
elements; and open, one element, close. h5py and hdf5plugin are in bench/requirements.txt."""

import argparse
import os
import tempfile
import time

import numpy as np

import rawarray

CHUNKS = (32, 32, 32)


def per_call(fn_a, fn_b, keys, rounds):
    """The best over ``rounds`` (run alternately) of the mean time of one call of ``fn_a`` and
    of ``fn_b`` over ``keys``, in microseconds."""
    for k in keys[:100]:
        fn_a(k), fn_b(k)
    times = ([], [])
    for _ in range(rounds):
        for fn, ts in zip((fn_a, fn_b), times):
            t = time.perf_counter()
            for k in keys:
                fn(k)
            ts.append((time.perf_counter() - t) / len(keys) * 1e6)
    return min(times[0]), min(times[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", type=int, default=256, help="the array's side (numpy shape side^3)")
    ap.add_argument("--reads", type=int, default=20_000, help="reads per timed round")
    ap.add_argument("--rounds", type=int, default=15, help="timed rounds, the best kept")
    args = ap.parse_args()
    import h5py

    try:
        import hdf5plugin

        h5_codec, h5_opts = "zstd", dict(hdf5plugin.Zstd())
    except ImportError:
        h5_codec, h5_opts = "gzip", {"compression": "gzip"}

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as d:
        run(args, d, h5py, h5_codec, h5_opts)


def run(args, d, h5py, h5_codec, h5_opts):
    """Writes the files into folder ``d``, checks that every reader agrees, prints the table."""
    n = args.side
    a = np.random.default_rng(1).random((n, n, n), dtype=np.float32)
    plain, chunked, h5 = (os.path.join(d, x) for x in ("plain.ra", "chunked.ra", "a.h5"))
    rawarray.write(plain, a)
    rawarray.write(chunked, a, chunks=CHUNKS, codec="zstd")
    with h5py.File(h5, "w") as hf:
        hf.create_dataset("contiguous", data=a)
        hf.create_dataset("chunked", data=a, chunks=CHUNKS, **h5_opts)

    rng = np.random.default_rng(2)
    keys = [tuple(int(x) for x in rng.integers(n, size=3)) for _ in range(args.reads)]
    rows = [(int(i), int(j)) for i, j in rng.integers(n, size=(args.reads // 10, 2))]
    fp, fm, fc = (rawarray.open(plain, mmap=False), rawarray.open(plain),
                  rawarray.open(chunked, mmap=False))
    hf = h5py.File(h5, "r")
    dc, dz = hf["contiguous"], hf["chunked"]
    # The same answers first: a benchmark of wrong reads measures nothing.
    for k in keys[:1000]:
        want = a[k]
        assert fp[k] == fm[k] == fc[k] == dc[k] == dz[k] == want, k
        assert type(fp[k]) is type(fc[k]) is type(dc[k]) is np.float32
    for r in rows[:100]:
        assert np.array_equal(fp[r], a[r]) and np.array_equal(dc[r], a[r])

    def open_read_close(k):
        with rawarray.open(plain, mmap=False) as f:
            return f[k]

    def h5_open_read_close(k):
        with h5py.File(h5, "r") as f:
            return f["contiguous"][k]

    cases = [
        ("plain, mmap=False", "contiguous", fp.__getitem__, dc.__getitem__, keys),
        ("plain, mmap=True (default)", "contiguous", fm.__getitem__, dc.__getitem__, keys),
        ("chunked zstd 32^3", f"chunked {h5_codec} 32^3", fc.__getitem__, dz.__getitem__, keys),
        (f"plain, mmap=False, f[i, j] ({n})", "contiguous", fp.__getitem__, dc.__getitem__, rows),
        ("open, f[i, j, k], close", "contiguous", open_read_close, h5_open_read_close,
         keys[: max(len(keys) // 10, 1)]),
    ]
    print(f"f32 {n}x{n}x{n}, {len(keys)} random keys a round, best of {args.rounds} rounds\n")
    print("| rawarray | h5py dataset | rawarray (us) | h5py (us) | ratio |")
    print("|---|---|---:|---:|---:|")
    for ours_name, theirs_name, ours, theirs, ks in cases:
        t_ours, t_theirs = per_call(ours, theirs, ks, args.rounds)
        print(f"| {ours_name} | {theirs_name} | {t_ours:.2f} | {t_theirs:.2f} | "
              f"{t_ours / t_theirs:.2f} |")
    hf.close()
    for f in (fp, fm, fc):
        f.close()


if __name__ == "__main__":
    main()
