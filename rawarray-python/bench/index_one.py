"""One element read from a file opened with positioned reads: ``rawarray.open(p, mmap=False)[i]``
against h5py's ``dataset[i]`` of the same contiguous float64 array, in one process, on files in
the page cache. Prints the time per read of each, the best of several rounds run alternately
(the other work of a shared machine falls on both alike, and the best round is the one it
disturbed least), and their ratio (ours / h5py).

    python rawarray-python/bench/index_one.py [--n 1000000] [--reads 20000]

The keys: one element of a 1-d array, one element and one row of a 2-d array, and open, read
one element, close (the cost of a fresh open each time). h5py is in bench/requirements.txt."""

import argparse
import os
import tempfile
import time

import numpy as np

import rawarray


def per_call(fn_a, fn_b, reads, rounds=15):
    """The best over ``rounds`` (run alternately) of the mean time of one call of ``fn_a`` and
    of ``fn_b``, in microseconds."""
    fn_a(), fn_b()
    times = ([], [])
    for _ in range(rounds):
        for fn, ts in zip((fn_a, fn_b), times):
            t = time.perf_counter()
            for _ in range(reads):
                fn()
            ts.append((time.perf_counter() - t) / reads * 1e6)
    return min(times[0]), min(times[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="elements of the 1-d array")
    ap.add_argument("--reads", type=int, default=20_000, help="reads per timed round")
    args = ap.parse_args()
    import h5py

    d = tempfile.mkdtemp()
    a1 = np.arange(args.n, dtype="<f8")
    a2 = a1.reshape(1000, -1)
    ra1, ra2, h5 = (os.path.join(d, n) for n in ("a1.ra", "a2.ra", "a.h5"))
    rawarray.write(ra1, a1)
    rawarray.write(ra2, a2)
    with h5py.File(h5, "w") as f:
        f.create_dataset("a1", data=a1)
        f.create_dataset("a2", data=a2)

    i, j = args.n // 3, a2.shape[1] // 2
    f1, f2 = rawarray.open(ra1, mmap=False), rawarray.open(ra2, mmap=False)
    hf = h5py.File(h5, "r")
    d1, d2 = hf["a1"], hf["a2"]
    # The same answers first: a benchmark of wrong reads measures nothing.
    assert f1[i] == d1[i] == a1[i] and f2[7, j] == d2[7, j] == a2[7, j]
    assert np.array_equal(f2[7], d2[7])

    def open_read_close():
        with rawarray.open(ra1, mmap=False) as f:
            return f[i]

    def h5_open_read_close():
        with h5py.File(h5, "r") as f:
            return f["a1"][i]

    cases = [
        ("1-d, f[i]", lambda: f1[i], lambda: d1[i]),
        ("2-d, f[i, j]", lambda: f2[7, j], lambda: d2[7, j]),
        (f"2-d, f[i] ({a2.shape[1]} elements)", lambda: f2[7], lambda: d2[7]),
        ("open, f[i], close", open_read_close, h5_open_read_close),
    ]
    print(f"{'key':<28} {'rawarray us':>12} {'h5py us':>10} {'ratio':>7}")
    for name, ours, theirs in cases:
        reads = args.reads if "open" not in name else max(args.reads // 10, 1)
        t_ours, t_theirs = per_call(ours, theirs, reads)
        print(f"{name:<28} {t_ours:>12.2f} {t_theirs:>10.2f} {t_ours / t_theirs:>7.2f}")
    hf.close()


if __name__ == "__main__":
    main()
