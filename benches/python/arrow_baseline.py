"""pyarrow's side of `cargo bench --bench arrow`: the same records, from numpy, to Parquet and to
Arrow in memory.

    arrow_baseline.py RA_FILE OUT_DIR RUNS

numpy maps the .ra file's records (its own header parse); each workload is timed RUNS times
after an untimed warm-up, and the best time printed as `NAME SECONDS`, one per line:
- `pyarrow_snappy`, `pyarrow_zstd`: the columns copied out of the structured array into a
  pyarrow table (FixedSizeBinary for the text, FixedSizeList for the vector) and written with
  `pq.write_table` (zstd at level 3, as `ra convert --zstd`), one row group per 65536 rows;
- `numpy_fields`: the per-field copy alone (what a user does to hand numpy records to Arrow).
"""
import struct
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DTYPE = np.dtype([("info", "u1", (12,)), ("index", "<u4"), ("v", "<f8", (8,))])


def records(path):
    with open(path, "rb") as f:
        head = f.read(48)
        *_, size, ndims = struct.unpack("<6Q", head)
    return np.memmap(path, dtype=DTYPE, mode="r", offset=48 + 8 * ndims, shape=(size // DTYPE.itemsize,))


def fields(a):
    return {name: np.ascontiguousarray(a[name]) for name in DTYPE.names}


def table(a):
    f = fields(a)
    n = len(a)
    return pa.table({
        "info": pa.FixedSizeBinaryArray.from_buffers(pa.binary(12), n, [None, pa.py_buffer(f["info"])]),
        "index": pa.array(f["index"]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(f["v"].reshape(-1)), 8),
    })


def best(runs, job):
    job()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        job()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    path, out, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    a = records(path)
    for codec, level in (("snappy", None), ("zstd", 3)):
        target = f"{out}/pyarrow_{codec}.parquet"
        t = best(runs, lambda: pq.write_table(table(a), target, compression=codec,
                                              compression_level=level, row_group_size=65536))
        print(f"pyarrow_{codec} {t}")
    print(f"numpy_fields {best(runs, lambda: fields(a))}")


if __name__ == "__main__":
    main()
