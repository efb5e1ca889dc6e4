"""The Python package against numpy's own readers and writers, in one process, on files in the
page cache; prints a table of medians and ratios (ours / baseline, time: lower is better).

    python rawarray-python/bench/bench.py [--mib 256] [--runs 7]

safetensors is compared when it is installed (pip install safetensors)."""

import argparse
import os
import statistics
import struct
import tempfile
import time

import numpy as np

import rawarray


def median_time(fn, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def paired_times(fn_a, fn_b, runs):
    """Medians of `fn_a` and `fn_b`, run alternately so that the machine's drift (other work,
    the disk's sync times) falls on both alike."""
    ta, tb = [], []
    for _ in range(runs):
        for fn, ts in ((fn_a, ta), (fn_b, tb)):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
    return statistics.median(ta), statistics.median(tb)


def fsync_tofile(arr, path):
    with open(path, "wb") as f:
        arr.tofile(f)
        f.flush()
        os.fsync(f.fileno())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as d:
        n = args.mib * (1 << 20) // 4
        arr = np.random.default_rng(1).random(n, dtype=np.float32)
        ra, raw, npy = (os.path.join(d, x) for x in ("a.ra", "a.bin", "a.npy"))
        rawarray.write(ra, arr)
        arr.tofile(raw)
        np.save(npy, arr)

        # Reads: each reader's array, summed so that every byte is read (a map reads on touch).
        t_ours, t_base = paired_times(lambda: rawarray.read(ra).sum(), lambda: np.fromfile(raw, dtype="<f4").sum(), args.runs)
        rows.append((f"read {args.mib} MiB f32 + sum", "rawarray.read", "np.fromfile", t_ours, t_base))
        t_npy = median_time(lambda: np.load(npy).sum(), args.runs)
        rows.append((f"read {args.mib} MiB f32 + sum", "rawarray.read", "np.load(.npy)", t_ours, t_npy))
        t_mem, t_from = paired_times(lambda: rawarray.read(ra, mmap=False), lambda: np.fromfile(raw, dtype="<f4"), args.runs)
        rows.append((f"read {args.mib} MiB f32 into memory", "rawarray.read(p, mmap=False)", "np.fromfile", t_mem, t_from))
        try:
            from safetensors.numpy import load_file, save_file
            st = os.path.join(d, "a.safetensors")
            save_file({"a": arr}, st)
            t_st = median_time(lambda: load_file(st)["a"].sum(), args.runs)
            rows.append((f"read {args.mib} MiB f32 + sum", "rawarray.read", "safetensors load_file", t_ours, t_st))
        except ImportError:
            print("safetensors is not installed: its row is left out")

        # Writes, synced in both.
        t_w, t_t = paired_times(lambda: rawarray.write(ra, arr), lambda: fsync_tofile(arr, raw), args.runs)
        rows.append((f"write {args.mib} MiB f32, synced", "rawarray.write", "tofile + fsync", t_w, t_t))

        # Opening: header and trailer only, O(1) in the file's size.
        for mib in (16, 1024):
            big = os.path.join(d, f"big{mib}.ra")
            # A sparse file of `mib` MiB: the header of a float32 vector, then a hole.
            count = mib * (1 << 20) // 4
            with open(big, "wb") as f:
                f.write(struct.pack("<7Q", 0x7961727261776172, 0, 3, 4, count * 4, 1, count))
                f.truncate(56 + count * 4)
            t_open = median_time(lambda: rawarray.open(big).array(), 51)
            rows.append((f"open(p).array(), {mib} MiB file", "rawarray.open(p).array()", "", t_open, None))

        # 3 Mi records of 80 bytes into a structured array.
        foo = np.dtype([("info", "u1", (12,)), ("index", "<u4"), ("v", "<f8", (8,))])
        recs = np.zeros(3 << 20, foo)
        recs["index"] = np.arange(len(recs))
        recs["v"] = np.random.default_rng(2).random((len(recs), 8))
        rp = os.path.join(d, "foo.ra")
        rawarray.write(rp, recs)
        roff = rawarray.open(rp).header["header_len"]
        t_r, t_f = paired_times(lambda: rawarray.read(rp, mmap=False), lambda: np.fromfile(rp, dtype=foo, offset=roff, count=len(recs)), args.runs)
        rows.append(("3 Mi 80-byte records into memory", "rawarray.read(p, mmap=False)", "np.fromfile(dtype)", t_r, t_f))
        t_rs, t_fs = paired_times(lambda: rawarray.read(rp)["v"].sum(), lambda: np.fromfile(rp, dtype=foo, offset=roff, count=len(recs))["v"].sum(), args.runs)
        rows.append(("3 Mi 80-byte records, sum of a field", "rawarray.read", "np.fromfile(dtype)", t_rs, t_fs))

    print("| operation | ours | baseline | ours (ms) | baseline (ms) | ratio (time) |")
    print("|---|---|---|---:|---:|---:|")
    for op, ours, base, t1, t2 in rows:
        if t2 is None:
            print(f"| {op} | `{ours}` | | {t1 * 1e6:.0f} us | | |")
        else:
            print(f"| {op} | `{ours}` | `{base}` | {t1 * 1e3:.1f} | {t2 * 1e3:.1f} | {t1 / t2:.2f} |")


if __name__ == "__main__":
    main()
