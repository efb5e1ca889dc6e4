//! The SQL row of issue 26's benchmark: `SELECT step, avg(energy) FROM 'run.ra' GROUP BY step`
//! through DataFusion over the `.ra` record file (rawarray-sql), against DuckDB over the same
//! records converted to Parquet (snappy, row groups of 65536, by `rawarray_arrow::ra_to_parquet`),
//! queried from Python (`benches/duckdb_group_by.py`, in the root tests' Python environment,
//! which pins duckdb; `RAWARRAY_PYTHON` names another interpreter).
//!
//! The records are 80 bytes, `{ step: u32, body: u32, energy: f64, pos: [f64; 3], vel: [f64; 3],
//! mass: f64 }`, 3 Mi of them (1024 bodies x 3072 steps) unless `RA_BENCH_RECORDS` says
//! otherwise (rounded to whole steps). Best of 3 runs each after a warm-up; both engines use
//! every core. The two results are checked equal (within the rounding of a sum's order).
//!
//! Run: `cargo bench --bench group_by` (`RA_BENCH_RECORDS=100000` for a quick run).

#[path = "../../tests/common/python.rs"]
#[allow(dead_code)]
mod python;

use std::path::Path;
use std::time::{Duration, Instant};

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{Float64Type, UInt32Type};
use rawarray_arrow::ConvertOptions;
use rawarray_serde::{RaRecord, RecordWriter};

#[derive(RaRecord, Clone)]
struct Body {
    step: u32,
    body: u32,
    energy: f64,
    pos: [f64; 3],
    vel: [f64; 3],
    mass: f64,
}

const RUNS: usize = 3;
const BODIES: u64 = 1024;

fn main() {
    let records: u64 = std::env::var("RA_BENCH_RECORDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3 << 20);
    let steps = records.div_ceil(BODIES).max(1);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let ra = dir.path().join("run.ra");
    let mut w = RecordWriter::<Body>::create(&ra, ()).expect("create run.ra");
    for step in 0..steps {
        for body in 0..BODIES {
            let x = (step * 31 + body * 7) as f64;
            w.append(&Body {
                step: step as u32,
                body: body as u32,
                energy: (x * 0.001).sin() + step as f64 * 0.01,
                pos: [x, x + 1.0, x + 2.0],
                vel: [0.5; 3],
                mass: 1.0,
            })
            .expect("append");
        }
    }
    w.finish().expect("finish run.ra");
    let parquet = dir.path().join("run.parquet");
    rawarray_arrow::ra_to_parquet(&ra, &parquet, &ConvertOptions::new(), |_, _| {})
        .expect("to Parquet");
    println!(
        "{} records of 80 bytes ({} steps x {BODIES} bodies), best of {RUNS}:",
        steps * BODIES,
        steps
    );

    let sql = format!(
        "SELECT step, avg(energy) FROM '{}' GROUP BY step ORDER BY step",
        ra.display()
    );
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    let run = || {
        runtime
            .block_on(rawarray_sql::query(&sql))
            .expect("the query")
    };
    let ours = run();
    let t = best(|| {
        run();
    });
    println!("  GROUP BY step, DataFusion over .ra   {:>9.1} ms", ms(t));

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/duckdb_group_by.py");
    let out = python::run_script(&script, &[&parquet, &RUNS.to_string()]);
    let mut duck_rows = Vec::new();
    for line in out.lines() {
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("duckdb"), Some(s), None) => {
                let s: f64 = s.parse().expect("seconds");
                println!("  GROUP BY step, DuckDB over Parquet   {:>9.1} ms", s * 1e3);
            }
            (Some("row"), Some(step), Some(avg)) => duck_rows.push((
                step.parse::<u32>().expect("a step"),
                avg.parse::<f64>().expect("an average"),
            )),
            _ => {}
        }
    }
    let our_rows: Vec<(u32, f64)> = ours
        .iter()
        .flat_map(|b| {
            let steps = b.column(0).as_primitive::<UInt32Type>();
            let avgs = b.column(1).as_primitive::<Float64Type>();
            (0..b.num_rows()).map(move |i| (steps.value(i), avgs.value(i)))
        })
        .collect();
    assert_eq!(our_rows.len(), duck_rows.len(), "the two results' rows");
    for ((s1, a1), (s2, a2)) in our_rows.iter().zip(&duck_rows) {
        assert_eq!(s1, s2);
        assert!(
            (a1 - a2).abs() <= 1e-9 * a1.abs().max(1.0),
            "step {s1}: {a1} vs {a2}"
        );
    }
}

fn best(mut job: impl FnMut()) -> Duration {
    (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            job();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
