"""The Parquet side of rawarray-sql's `cargo bench --bench query`: writes the bench's records as
Parquet with pyarrow's defaults, and runs its queries through DuckDB over that file.

    query_parquet.py write ARROW_FILE PARQUET_FILE
    query_parquet.py duckdb PARQUET_FILE RUNS QUERIES_JSON

`write` reads the Arrow IPC file the bench converted its `.ra` file to (memory-mapped) and
writes it with `pyarrow.parquet.write_table(table, path)` and no other argument: snappy,
dictionary encoding, row groups of at most 1 Mi rows, statistics per column chunk, no page
index. It prints one JSON line: rows, row groups, bytes.

`duckdb` runs each SQL statement of the JSON list QUERIES_JSON (each names the file itself)
once untimed (which also reads the file into the page cache), then RUNS times, each to a
fetched Arrow table, then once more with DuckDB's profiler on, for the bytes it read. It prints
one JSON line per statement: the best time in seconds, the bytes read and the result's summary
(`summary`, for the bench to check against the other engines').
"""
import json
import os
import struct
import sys
import tempfile
import time

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# Results of at most this many rows are returned row by row, for the bench to look up in the
# file (a LIMIT's rows, which any engine may choose).
SAMPLE_ROWS = 16


def write(ipc, parquet):
    with pa.memory_map(ipc) as source:
        table = pa.ipc.open_file(source).read_all()
        pq.write_table(table, parquet)
    meta = pq.ParquetFile(parquet).metadata
    print(json.dumps({
        "rows": meta.num_rows,
        "row_groups": meta.num_row_groups,
        "bytes": os.path.getsize(parquet),
    }))


def summary(table):
    """Rows; per column, the sum and the sum of magnitudes of its values as float64 (a
    fixed-size list's values flattened); and, for a small result, each row's step, id and the
    bits of its energy."""
    sums, mags = [], []
    for column in table.columns:
        if pa.types.is_fixed_size_list(column.type) or pa.types.is_list(column.type):
            column = pc.list_flatten(column)
        values = column.cast(pa.float64())
        sums.append(pc.sum(values).as_py() or 0.0)
        mags.append(pc.sum(pc.abs(values)).as_py() or 0.0)
    sample = []
    names = table.column_names
    if table.num_rows <= SAMPLE_ROWS and all(n in names for n in ("step", "id", "energy")):
        for row in table.select(["step", "id", "energy"]).to_pylist():
            bits = struct.unpack("<Q", struct.pack("<d", row["energy"]))[0]
            sample.append([row["step"], row["id"], bits])
    return {"rows": table.num_rows, "sums": sums, "magnitudes": mags, "sample": sample}


def bytes_read(con, sql):
    """The bytes DuckDB's profiler says the statement read (`io.total_bytes_read`)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "profile.json")
        con.execute("SET enable_profiling = 'json'")
        con.execute(f"SET profiling_output = '{out}'")
        con.sql(sql).to_arrow_table()
        con.execute("SET enable_profiling = 'no_output'")
        con.execute("RESET enable_profiling")
        with open(out) as f:
            profile = json.load(f)
    return profile.get("io", {}).get("total_bytes_read")


def run_duckdb(parquet, runs, queries):
    if not os.path.exists(parquet):
        raise SystemExit(f"no Parquet file at {parquet}")
    con = duckdb.connect()
    for sql in queries:
        result = con.sql(sql).to_arrow_table()
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            con.sql(sql).to_arrow_table()
            times.append(time.perf_counter() - t)
        print(json.dumps({
            "seconds": min(times),
            "bytes": bytes_read(con, sql),
            "summary": summary(result),
        }), flush=True)


def main():
    match sys.argv[1:]:
        case ["write", ipc, parquet]:
            write(ipc, parquet)
        case ["duckdb", parquet, runs, queries]:
            run_duckdb(parquet, int(runs), json.loads(queries))
        case _:
            raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
