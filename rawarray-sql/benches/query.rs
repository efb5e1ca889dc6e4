//! Issue 35's benchmark: queries that read only what they need. The records of the main job
//! (`rawarray-demo`'s N-body `Body`, 76 bytes: step, time, id, position, velocity, energy) are
//! written by a `RecordWriter` with the chunked layout's defaults (zstd level 3, byte shuffle,
//! chunks of about 1 MiB, per-chunk statistics, layout version 2), and the same records as
//! Parquet by pyarrow with its defaults (`benches/query_parquet.py`: snappy, row groups of 1 Mi
//! rows, statistics per column chunk). Four queries:
//!
//! - a window of 10 steps in the middle of the run, every column;
//! - one body's trajectory (`WHERE id = 17 ORDER BY step`), which no statistics can narrow;
//! - a full scan, `GROUP BY step`;
//! - `SELECT * ... LIMIT 10`;
//!
//! each through `ra sql`'s engine (DataFusion with this crate's table provider, the file named
//! in the query as `ra sql` names it), through DataFusion over the Parquet file, and through
//! DuckDB over the Parquet file (in Python, timed inside it): best of `RA_BENCH_RUNS` (3) after
//! an untimed run, each to a collected result, with the bytes each read (ours: the provider's
//! I/O counters, the chunks' stored bytes; DataFusion: its Parquet scan's `bytes_scanned`;
//! DuckDB: its profiler's `total_bytes_read`). The answers are checked to agree: equal row
//! counts (and the count the run implies), equal sums of every column, and each row of a small
//! result looked up in the `.ra` file by its step and id. It prints one table, with whether
//! issue 35's targets are met: the window reads under 1% of the file and beats DuckDB, the
//! full scan is within 1.5x DuckDB's time, `LIMIT 10` reads one chunk.
//!
//! Environment: `RA_BENCH_RECORDS` (30 Mi, rounded down to whole steps), `RA_BENCH_BODIES`
//! (256), `RA_BENCH_RUNS` (3), `RA_BENCH_DIR` (the system's temp folder; the files are made in
//! a fresh folder inside it, removed at the end; about 2.2x the records' size at the peak).
//! Python is the root tests' environment (`tests/python/requirements.txt` pins pyarrow and
//! duckdb; `RAWARRAY_PYTHON` names another interpreter).
//!
//! Run: `cargo bench --manifest-path rawarray-sql/Cargo.toml --bench query`
//! (`RA_BENCH_RECORDS=100000` for a quick run).

#[path = "../../tests/common/python.rs"]
#[allow(dead_code)]
mod python;

#[path = "../../rawarray-demo/src/main.rs"]
#[allow(dead_code)]
mod simulation;

use std::path::Path;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, UInt32Type, UInt64Type};
use datafusion::common::TableReference;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use rawarray_serde::{Element, IoStats, RecordOptions, RecordReader, WriteOptions};
use rawarray_sql::RaTableProvider;
use serde_json::Value;
use simulation::{Body, Params, Simulation};

/// Results of at most this many rows are checked row by row against the file (as
/// `SAMPLE_ROWS` in `query_parquet.py`).
const SAMPLE_ROWS: u64 = 16;

/// The body whose trajectory is asked for.
const BODY: u32 = 17;

fn env(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("{name}={s:?}: expected a whole number")),
        Err(_) => default,
    }
}

/// One query of the table: its name, its SQL with `{t}` where the table goes, the rows it must
/// return, and the target it is held to.
struct Query {
    name: &'static str,
    sql: String,
    rows: u64,
    target: Target,
}

#[derive(Clone, Copy)]
enum Target {
    /// Reads under 1% of the file and is faster than DuckDB over Parquet.
    Window,
    /// None in issue 35.
    Nothing,
    /// Within 1.5x DuckDB's time.
    FullScan,
    /// Reads one chunk.
    OneChunk,
}

/// What one engine did with one query: its best time, the bytes (and, for ours, chunks) it
/// read, and a summary of its answer.
struct Measure {
    seconds: f64,
    bytes: Option<u64>,
    chunks: Option<u64>,
    summary: Summary,
}

/// An answer, reduced to what the three engines must agree on.
#[derive(Debug)]
struct Summary {
    rows: u64,
    /// Per column, the sum of its values as f64 (a fixed-size list's values flattened).
    sums: Vec<f64>,
    /// Per column, the sum of the values' magnitudes: the scale of a sum's rounding error.
    magnitudes: Vec<f64>,
    /// For a result of at most `SAMPLE_ROWS` rows with these columns: each row's step, id and
    /// the bits of its energy.
    sample: Vec<(u64, u32, u64)>,
}

fn main() {
    let bodies = env("RA_BENCH_BODIES", 256).max(1);
    let steps = (env("RA_BENCH_RECORDS", 30 << 20) / bodies).max(10);
    let records = steps * bodies;
    let runs = env("RA_BENCH_RUNS", 3).max(1) as usize;
    let base = std::env::var_os("RA_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let dir = tempfile::tempdir_in(&base)
        .unwrap_or_else(|e| panic!("a folder in {} (RA_BENCH_DIR): {e}", base.display()));
    let ra = dir.path().join("nbody.ra");
    let parquet = dir.path().join("nbody.parquet");

    let t = Instant::now();
    write_records(&ra, bodies, steps);
    let ra_bytes = std::fs::metadata(&ra).expect("nbody.ra").len();
    eprintln!(
        "wrote {records} records to {} ({ra_bytes} bytes) in {:.1} s",
        ra.display(),
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let (parquet_bytes, row_groups) = write_parquet(&ra, &parquet, dir.path());
    eprintln!(
        "wrote {} ({parquet_bytes} bytes, {row_groups} row groups) in {:.1} s",
        parquet.display(),
        t.elapsed().as_secs_f64()
    );

    let first = steps / 2;
    let queries = [
        Query {
            name: "window of 10 steps",
            sql: format!(
                "SELECT * FROM {{t}} WHERE step BETWEEN {first} AND {}",
                first + 9
            ),
            rows: 10 * bodies,
            target: Target::Window,
        },
        Query {
            name: "one body's trajectory",
            sql: format!(
                "SELECT step, position, velocity, energy FROM {{t}} WHERE id = {BODY} ORDER BY step"
            ),
            rows: if u64::from(BODY) < bodies { steps } else { 0 },
            target: Target::Nothing,
        },
        Query {
            name: "full scan, GROUP BY step",
            sql: "SELECT step, sum(energy) AS energy FROM {t} GROUP BY step ORDER BY step".into(),
            rows: steps,
            target: Target::FullScan,
        },
        Query {
            name: "LIMIT 10",
            sql: "SELECT * FROM {t} LIMIT 10".into(),
            rows: 10.min(records),
            target: Target::OneChunk,
        },
    ];

    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    let ra_name = ra.to_str().expect("a UTF-8 temp path").to_owned();
    let pq_name = parquet.to_str().expect("a UTF-8 temp path").to_owned();
    let mut ours = Vec::new();
    let mut fusion = Vec::new();
    for q in &queries {
        let sql = q.sql.replace("{t}", &format!("'{ra_name}'"));
        ours.push(best(runs, || runtime.block_on(run_ours(&sql, &ra_name))));
        let sql = q.sql.replace("{t}", "nbody");
        fusion.push(best(runs, || runtime.block_on(run_parquet(&sql, &pq_name))));
    }
    let duck = run_duckdb(&parquet, runs, &queries);

    let reader = RecordReader::<Body>::open(&ra).expect("nbody.ra");
    for (i, q) in queries.iter().enumerate() {
        check(q, &ours[i].summary, &fusion[i].summary, &duck[i].summary);
        for m in [&ours[i], &fusion[i], &duck[i]] {
            check_sample(q, &m.summary, &reader, bodies);
        }
    }

    println!(
        "{records} records of {} bytes ({steps} steps x {bodies} bodies); nbody.ra {:.1} MiB \
         (zstd, chunks of about 1 MiB, statistics), nbody.parquet {:.1} MiB (pyarrow's \
         defaults, {row_groups} row groups); best of {runs}:\n",
        <Body as Element>::ELBYTE,
        mib(ra_bytes),
        mib(parquet_bytes),
    );
    println!(
        "| query | ours (s) | ours read | of .ra | DataFusion/Parquet (s) | its read | DuckDB/Parquet (s) | its read | DuckDB/ours | DataFusion/ours | target |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for (i, q) in queries.iter().enumerate() {
        let (o, f, d) = (&ours[i], &fusion[i], &duck[i]);
        let read = o.bytes.unwrap_or(0);
        let share = read as f64 / ra_bytes as f64;
        println!(
            "| {} | {:.3} | {} ({} chunks) | {:.2}% | {:.3} | {} | {:.3} | {} | {:.2} | {:.2} | {} |",
            q.name,
            o.seconds,
            size(read),
            o.chunks.unwrap_or(0),
            share * 100.0,
            f.seconds,
            read_share(f.bytes, parquet_bytes),
            d.seconds,
            read_share(d.bytes, parquet_bytes),
            d.seconds / o.seconds,
            f.seconds / o.seconds,
            verdict(q.target, o, d, share),
        );
    }
}

/// The simulation's records, appended step by step to a new file with the chunked layout's
/// defaults; no flush before the end, so that every chunk is whole (a flush inside a chunk
/// leaves dead bytes, see `RecordOptions::chunk_records`).
fn write_records(path: &Path, bodies: u64, steps: u64) {
    let params = Params {
        particles: u32::try_from(bodies).expect("RA_BENCH_BODIES fits a u32"),
        steps: steps - 1,
        flush_every: steps,
        ..Params::default()
    };
    let mut w = RecordOptions::new()
        .params(&params)
        .storage(WriteOptions::chunked())
        .create::<Body>(path)
        .expect("create nbody.ra");
    let mut sim = Simulation::new(&params);
    for step in 0..steps {
        w.append_slice(&sim.records()).expect("append a step");
        if step + 1 < steps {
            sim.advance();
        }
    }
    w.finish().expect("finish nbody.ra");
}

/// The `.ra` file as Parquet written by pyarrow with its defaults (through an Arrow IPC file,
/// removed after): the Parquet file's bytes and row groups.
fn write_parquet(ra: &Path, parquet: &Path, dir: &Path) -> (u64, u64) {
    let ipc = dir.join("nbody.arrow");
    rawarray_arrow::ra_to_ipc(ra, &ipc, &rawarray_arrow::ConvertOptions::new(), |_, _| {})
        .expect("nbody.ra to Arrow IPC");
    let out = python::run_script(&script(), &[&"write", &ipc, &parquet]);
    std::fs::remove_file(&ipc).expect("remove nbody.arrow");
    let v: Value = serde_json::from_str(out.trim()).expect("query_parquet.py write's JSON");
    (
        v["bytes"].as_u64().expect("bytes"),
        v["row_groups"].as_u64().expect("row groups"),
    )
}

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/query_parquet.py")
}

/// `sql` as `ra sql` runs it (a new session, every `.ra` path in it registered), and the reads
/// of the file it made.
async fn run_ours(sql: &str, path: &str) -> (Vec<RecordBatch>, IoStats) {
    let ctx = SessionContext::new();
    rawarray_sql::register_files(&ctx, sql).expect("register nbody.ra");
    let provider = ctx
        .table_provider(TableReference::bare(path))
        .await
        .expect("the registered file");
    let provider = provider
        .downcast_ref::<RaTableProvider>()
        .expect("a RaTableProvider");
    let batches = ctx
        .sql(sql)
        .await
        .expect("plan")
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let stats = provider.table().io_stats().expect("a chunked file's I/O");
    (batches, stats)
}

/// `sql` over the Parquet file registered as `nbody` in a new session, and the bytes its scans
/// read (`bytes_scanned`).
async fn run_parquet(sql: &str, path: &str) -> (Vec<RecordBatch>, IoStats) {
    let ctx = SessionContext::new();
    ctx.register_parquet("nbody", path, ParquetReadOptions::default())
        .await
        .expect("register nbody.parquet");
    let plan = ctx
        .sql(sql)
        .await
        .expect("plan")
        .create_physical_plan()
        .await
        .expect("physical plan");
    let batches = datafusion::physical_plan::collect(plan.clone(), ctx.task_ctx())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let bytes = metric(&*plan, "bytes_scanned");
    (batches, IoStats { reads: 0, bytes })
}

/// The sum of a metric over a plan and its children.
fn metric(plan: &dyn ExecutionPlan, name: &str) -> u64 {
    let own = plan
        .metrics()
        .and_then(|m| m.sum_by_name(name))
        .map_or(0, |v| v.as_usize() as u64);
    own + plan
        .children()
        .into_iter()
        .map(|c| metric(&**c, name))
        .sum::<u64>()
}

/// The best time of `runs` runs after an untimed one, the untimed run's answer summarized and
/// the last run's reads.
fn best(runs: usize, mut job: impl FnMut() -> (Vec<RecordBatch>, IoStats)) -> Measure {
    let (batches, _) = job();
    let summary = summarize(&batches);
    drop(batches);
    let mut fastest = Duration::MAX;
    let mut io = IoStats::default();
    for _ in 0..runs {
        let t = Instant::now();
        let (batches, stats) = job();
        fastest = fastest.min(t.elapsed());
        drop(batches);
        io = stats;
    }
    Measure {
        seconds: fastest.as_secs_f64(),
        bytes: Some(io.bytes),
        chunks: (io.reads > 0).then_some(io.reads),
        summary,
    }
}

/// DuckDB's measures of the queries, from `query_parquet.py duckdb`.
fn run_duckdb(parquet: &Path, runs: usize, queries: &[Query]) -> Vec<Measure> {
    let sqls: Vec<String> = queries
        .iter()
        .map(|q| q.sql.replace("{t}", &format!("'{}'", parquet.display())))
        .collect();
    let sqls = serde_json::to_string(&sqls).expect("JSON of strings");
    let out = python::run_script(&script(), &[&"duckdb", &parquet, &runs.to_string(), &sqls]);
    let measures: Vec<Measure> = out
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("query_parquet.py duckdb's JSON");
            let s = &v["summary"];
            let floats = |key: &str| -> Vec<f64> {
                s[key]
                    .as_array()
                    .expect("a list")
                    .iter()
                    .map(|x| x.as_f64().expect("a number"))
                    .collect()
            };
            Measure {
                seconds: v["seconds"].as_f64().expect("seconds"),
                bytes: v["bytes"].as_u64(),
                chunks: None,
                summary: Summary {
                    rows: s["rows"].as_u64().expect("rows"),
                    sums: floats("sums"),
                    magnitudes: floats("magnitudes"),
                    sample: s["sample"]
                        .as_array()
                        .expect("a list")
                        .iter()
                        .map(|r| {
                            let n = |k: usize| r[k].as_u64().expect("a whole number");
                            (n(0), u32::try_from(n(1)).expect("an id"), n(2))
                        })
                        .collect(),
                },
            }
        })
        .collect();
    assert_eq!(measures.len(), queries.len(), "DuckDB's answers:\n{out}");
    measures
}

fn summarize(batches: &[RecordBatch]) -> Summary {
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let columns = batches.first().map_or(0, RecordBatch::num_columns);
    let (mut sums, mut magnitudes) = (vec![0.0; columns], vec![0.0; columns]);
    let mut sample = Vec::new();
    for b in batches {
        for (c, column) in b.columns().iter().enumerate() {
            let values = cast(&flat(column), &DataType::Float64).expect("a numeric column");
            for x in values.as_primitive::<Float64Type>().iter().flatten() {
                sums[c] += x;
                magnitudes[c] += x.abs();
            }
        }
        let named = |n: &str| b.column_by_name(n);
        if rows as u64 <= SAMPLE_ROWS {
            if let (Some(step), Some(id), Some(energy)) =
                (named("step"), named("id"), named("energy"))
            {
                // As the engine typed them (Parquet may not say u64), then as the file does.
                let step = cast(step, &DataType::UInt64).expect("a step");
                let id = cast(id, &DataType::UInt32).expect("an id");
                let energy = cast(energy, &DataType::Float64).expect("an energy");
                let step = step.as_primitive::<UInt64Type>();
                let id = id.as_primitive::<UInt32Type>();
                let energy = energy.as_primitive::<Float64Type>();
                for r in 0..b.num_rows() {
                    sample.push((step.value(r), id.value(r), energy.value(r).to_bits()));
                }
            }
        }
    }
    Summary {
        rows: rows as u64,
        sums,
        magnitudes,
        sample,
    }
}

/// A column's values, a list column's flattened (a fixed-size list is sliced with its values).
fn flat(column: &ArrayRef) -> ArrayRef {
    if let Some(list) = column.as_fixed_size_list_opt() {
        list.values().clone()
    } else if let Some(list) = column.as_list_opt::<i32>() {
        let offsets = list.value_offsets();
        let first = offsets[0] as usize;
        let last = offsets[offsets.len() - 1] as usize;
        list.values().slice(first, last - first)
    } else {
        column.clone()
    }
}

/// The three answers agree with each other and with the rows the run implies.
fn check(q: &Query, ours: &Summary, fusion: &Summary, duck: &Summary) {
    assert_eq!(ours.rows, q.rows, "{}: our rows", q.name);
    for (engine, other) in [("DataFusion/Parquet", fusion), ("DuckDB/Parquet", duck)] {
        assert_eq!(other.rows, q.rows, "{}: {engine}'s rows", q.name);
        // A LIMIT without ORDER BY may return any rows: those are checked one by one.
        if matches!(q.target, Target::OneChunk) {
            continue;
        }
        assert_eq!(
            other.sums.len(),
            ours.sums.len(),
            "{}: {engine}'s columns",
            q.name
        );
        for (c, (a, b)) in ours.sums.iter().zip(&other.sums).enumerate() {
            let scale = ours.magnitudes[c].max(1.0);
            assert!(
                (a - b).abs() <= 1e-9 * scale,
                "{}: column {c}'s sum is {a} here and {b} in {engine}",
                q.name
            );
        }
    }
}

/// Each row of a small answer is the record at its step and id in the file.
fn check_sample(q: &Query, s: &Summary, reader: &RecordReader<Body>, bodies: u64) {
    if matches!(q.target, Target::OneChunk) {
        assert_eq!(s.sample.len() as u64, q.rows, "{}: rows looked up", q.name);
    }
    for &(step, id, energy) in &s.sample {
        let index = usize::try_from(step * bodies + u64::from(id)).expect("an index");
        let record = reader
            .get(index)
            .expect("read a record")
            .unwrap_or_else(|| panic!("{}: no record at step {step}, id {id}", q.name));
        assert_eq!(
            (record.step, record.id, record.energy.to_bits()),
            (step, id, energy),
            "{}: the row of step {step}, id {id}",
            q.name
        );
    }
}

/// Whether issue 35's target for the query is met, with the figure it is judged by.
fn verdict(target: Target, ours: &Measure, duck: &Measure, share: f64) -> String {
    let yes = |ok: bool| if ok { "met" } else { "NOT met" };
    match target {
        Target::Window => format!(
            "< 1% of the file: {} ({:.3}%); faster than DuckDB: {} ({:.2}x)",
            yes(share < 0.01),
            share * 100.0,
            yes(ours.seconds < duck.seconds),
            duck.seconds / ours.seconds
        ),
        Target::FullScan => format!(
            "within 1.5x DuckDB: {} ({:.2}x its time)",
            yes(ours.seconds <= 1.5 * duck.seconds),
            ours.seconds / duck.seconds
        ),
        Target::OneChunk => format!(
            "one chunk: {} ({} read)",
            yes(ours.chunks == Some(1)),
            ours.chunks.unwrap_or(0)
        ),
        Target::Nothing => "-".into(),
    }
}

fn read_share(bytes: Option<u64>, of: u64) -> String {
    match bytes {
        Some(b) => format!("{} ({:.2}%)", size(b), b as f64 * 100.0 / of as f64),
        None => "?".into(),
    }
}

fn size(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.2} GiB", bytes as f64 / f64::from(1u32 << 30))
    } else {
        format!("{:.1} MiB", mib(bytes))
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 20)
}
