//! Records to Parquet and to Arrow: 3 Mi records of `struct foo { char info[12]; uint32_t
//! index; double v[8]; }` (80 bytes each, 240 MiB) in a `.ra` record file, converted by
//! rawarray-arrow and, as the baseline, by pyarrow from numpy's view of the same file
//! (`benches/python/arrow_baseline.py`, in the tests' Python environment):
//!
//! - `ra -> parquet (snappy | zstd)`: `ra_to_parquet`, file to file, batches of 65536 rows
//!   (a row group each), against `pyarrow_snappy` / `pyarrow_zstd`: numpy's fields copied into a
//!   pyarrow table and written by `pq.write_table` with the same row groups. Target: at most
//!   1.2x pyarrow's time.
//! - `ra -> arrow (in memory)`: `RaTable::read_all`, the whole file as one record batch,
//!   against `numpy_fields`: the per-field copy out of numpy's structured view.
//!
//! Best of 3 runs each, after a warm-up run. The SQL row (`GROUP BY step` against DuckDB)
//! comes with the SQL crate.
//!
//! Run: `cargo bench --bench arrow` (`RA_BENCH_RECORDS=100000` for a quick run).

#[path = "../tests/common/python.rs"]
#[allow(dead_code)]
mod python;

use std::path::Path;
use std::time::{Duration, Instant};

use rawarray_arrow::{ConvertOptions, ParquetCompression, RaTable};
use rawarray_serde::{RaRecord, RecordWriter};

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

const RUNS: usize = 3;

fn best(mut job: impl FnMut()) -> Duration {
    job();
    (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            job();
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn main() {
    let n: usize = std::env::var("RA_BENCH_RECORDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3 << 20);
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ra = dir.path().join("foo.ra");
    let mut w = RecordWriter::<Foo>::create(&ra, ()).unwrap();
    for i in 0..n {
        w.append(&Foo {
            info: std::array::from_fn(|k| b'a' + ((i + k) % 26) as u8),
            index: i as u32,
            v: std::array::from_fn(|k| i as f64 * 0.5 + k as f64),
        })
        .unwrap();
    }
    w.finish().unwrap();
    let mib = (n * Foo::ELBYTE) as f64 / f64::from(1 << 20);

    let to_parquet = |c: ParquetCompression| {
        let out = dir.path().join("ours.parquet");
        let opts = ConvertOptions::new().compression(c);
        best(|| rawarray_arrow::ra_to_parquet(&ra, &out, &opts, |_, _| {}).unwrap())
    };
    let snappy = to_parquet(ParquetCompression::Snappy);
    let zstd = to_parquet(ParquetCompression::Zstd(3));
    let in_memory = best(|| {
        let batch = RaTable::open(&ra).unwrap().read_all().unwrap();
        assert_eq!(batch.num_rows(), n);
    });

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/python/arrow_baseline.py");
    let out = python::run_script(&script, &[&ra, &dir.path(), &RUNS.to_string()]);
    let baseline = |name: &str| -> Duration {
        let line = out.lines().find(|l| l.starts_with(name)).unwrap();
        Duration::from_secs_f64(line.split(' ').nth(1).unwrap().parse().unwrap())
    };

    println!(
        "{n} records of {} bytes ({mib:.0} MiB), best of {RUNS}",
        Foo::ELBYTE
    );
    println!(
        "{:<28} {:>10} {:>10} {:>10} {:>8}",
        "workload", "ours", "baseline", "MiB/s", "ratio"
    );
    for (name, ours, base) in [
        ("ra -> parquet (snappy)", snappy, baseline("pyarrow_snappy")),
        ("ra -> parquet (zstd)", zstd, baseline("pyarrow_zstd")),
        (
            "ra -> arrow (in memory)",
            in_memory,
            baseline("numpy_fields"),
        ),
    ] {
        println!(
            "{name:<28} {:>9.3}s {:>9.3}s {:>10.0} {:>7.2}x",
            ours.as_secs_f64(),
            base.as_secs_f64(),
            mib / ours.as_secs_f64(),
            ours.as_secs_f64() / base.as_secs_f64()
        );
    }
    println!("\ntarget: ra -> parquet at most 1.2x pyarrow's time (ratio column)");
}
