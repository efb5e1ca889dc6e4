"""DuckDB's side of rawarray-sql's `cargo bench --bench group_by`: the same query over the same
records in Parquet.

    duckdb_group_by.py PARQUET_FILE RUNS

The query is timed RUNS times after an untimed warm-up (which also reads the file into the page
cache), each run to a fetched result; the best time is printed as `duckdb SECONDS`, and the
result's rows as `row STEP AVG`, for the bench to check against its own.
"""
import sys
import time

import duckdb


def main():
    path, runs = sys.argv[1], int(sys.argv[2])
    con = duckdb.connect()
    sql = f"SELECT step, avg(energy) FROM '{path}' GROUP BY step ORDER BY step"
    rows = con.execute(sql).fetchall()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        con.execute(sql).fetchall()
        times.append(time.perf_counter() - t)
    print(f"duckdb {min(times)}")
    for step, avg in rows:
        print(f"row {step} {avg!r}")


if __name__ == "__main__":
    main()
