//! Queries over record files against the same numbers computed by hand from the records that
//! were written, through the library and through the `ra-sql` binary; bad input is an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int64Type, UInt32Type};
use datafusion::catalog::TableProvider;
use datafusion::prelude::SessionContext;
use rawarray_serde::{Complex, RaRecord, RecordWriter};
use rawarray_sql::RaTableProvider;

#[derive(RaRecord, Clone)]
struct Body {
    id: u32,
    step: u32,
    energy: f64,
    pos: [f32; 3],
    alive: bool,
    spin: Complex<f64>,
}

/// Energies are multiples of 1/4, small enough that every sum (in any order) is exact.
fn bodies() -> Vec<Body> {
    let mut out = Vec::new();
    for step in 0..7u32 {
        for id in 0..5u32 {
            out.push(Body {
                id,
                step,
                energy: f64::from(id * 3 + step * step) * 0.25 - 2.0,
                pos: [id as f32, step as f32, 0.5],
                alive: (id + step) % 3 != 0,
                spin: Complex::new(f64::from(id), -f64::from(step)),
            });
        }
    }
    out
}

fn write(dir: &Path, records: &[Body]) -> PathBuf {
    let path = dir.join("run.ra");
    let mut w = RecordWriter::<Body>::create(&path, serde_json::json!({"dt": 0.5})).unwrap();
    for r in records {
        w.append(r).unwrap();
    }
    w.finish().unwrap();
    path
}

/// step -> (sum of energy, count, max id) over the records alive.
fn by_hand(records: &[Body]) -> BTreeMap<u32, (f64, i64, u32)> {
    let mut out = BTreeMap::new();
    for r in records.iter().filter(|r| r.alive) {
        let e = out.entry(r.step).or_insert((0.0, 0, 0));
        e.0 += r.energy;
        e.1 += 1;
        e.2 = e.2.max(r.id);
    }
    out
}

const GROUP_BY: &str = "SELECT step, avg(energy) AS e, count(*) AS n, max(id) AS top \
                        FROM 'PATH' WHERE alive GROUP BY step ORDER BY step";

#[test]
fn group_by_through_the_api_equals_the_hand_computation() {
    let dir = tempfile::tempdir().unwrap();
    let records = bodies();
    let path = write(dir.path(), &records);
    let sql = GROUP_BY.replace("PATH", &path.display().to_string());
    // Small batches, so that the query spans many of them.
    let ctx = SessionContext::new();
    let provider = RaTableProvider::open(&path).unwrap().with_batch_rows(4);
    ctx.register_table(path.display().to_string().as_str(), Arc::new(provider))
        .unwrap();
    rawarray_sql::register_files(&ctx, &sql).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let batches: Vec<RecordBatch> = rt
        .block_on(async { ctx.sql(&sql).await?.collect().await })
        .unwrap();

    let mut got = Vec::new();
    for b in &batches {
        for i in 0..b.num_rows() {
            got.push((
                b.column(0).as_primitive::<UInt32Type>().value(i),
                b.column(1).as_primitive::<Float64Type>().value(i),
                b.column(2).as_primitive::<Int64Type>().value(i),
                b.column(3).as_primitive::<UInt32Type>().value(i),
            ));
        }
    }
    let want: Vec<_> = by_hand(&records)
        .into_iter()
        .map(|(step, (sum, n, top))| (step, sum / n as f64, n, top))
        .collect();
    assert_eq!(got, want);
    // Through the one-call API too, with its default batch size.
    let again = rawarray_sql::query_blocking(&sql).unwrap();
    assert_eq!(
        datafusion::arrow::compute::concat_batches(&again[0].schema(), &again).unwrap(),
        datafusion::arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap()
    );
}

#[test]
fn fixed_arrays_and_parameters_are_columns_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let records = bodies();
    let path = write(dir.path(), &records);
    // SQL arrays count from 1; a complex field is a struct of `re` and `im`.
    let sql = format!(
        "SELECT sum(pos[1]) AS x, sum(pos[2]) AS y, sum(spin['im']) AS im FROM '{}'",
        path.display()
    );
    let b = &rawarray_sql::query_blocking(&sql).unwrap()[0];
    let x: f64 = records.iter().map(|r| f64::from(r.pos[0])).sum();
    let y: f64 = records.iter().map(|r| f64::from(r.pos[1])).sum();
    let im: f64 = records.iter().map(|r| r.spin.im).sum();
    assert_eq!(b.column(0).as_primitive::<Float64Type>().value(0), x);
    assert_eq!(b.column(1).as_primitive::<Float64Type>().value(0), y);
    assert_eq!(b.column(2).as_primitive::<Float64Type>().value(0), im);
    let provider = RaTableProvider::open(&path).unwrap();
    assert_eq!(
        provider.schema().metadata()["rawarray.params"],
        r#"{"dt":0.5}"#
    );
}

#[test]
fn a_scan_reads_only_the_projected_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), &bodies());
    let provider = RaTableProvider::open(&path).unwrap().with_batch_rows(8);
    let ctx = SessionContext::new();
    let state = ctx.state();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let plan = rt
        .block_on(provider.scan(&state, Some(&vec![2, 1]), &[], None))
        .unwrap();
    let names: Vec<_> = plan
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["energy", "step"]);
    // Partition by partition: `collect` merges them in arrival order, which varies.
    let batches: Vec<RecordBatch> = rt
        .block_on(datafusion::physical_plan::collect_partitioned(
            plan,
            ctx.task_ctx(),
        ))
        .unwrap()
        .into_iter()
        .flatten()
        .collect();
    // 35 rows in batches of at most 8, from as many partitions as the engine runs (each a
    // part of the file, in order).
    assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 35);
    for b in &batches {
        assert_eq!(b.num_columns(), 2);
        assert!(b.num_rows() <= 8);
    }
    let energies: Vec<f64> = batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Float64Type>().values().to_vec())
        .collect();
    let want: Vec<f64> = bodies().iter().map(|r| r.energy).collect();
    assert_eq!(energies, want);
    // count(*) reads no column at all, and still counts the rows.
    let plan = rt
        .block_on(provider.scan(&state, Some(&vec![]), &[], None))
        .unwrap();
    let batches = rt
        .block_on(datafusion::physical_plan::collect(plan, ctx.task_ctx()))
        .unwrap();
    assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 35);
}

#[test]
fn a_missing_file_or_bad_sql_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), &bodies());
    let missing = dir.path().join("nothing-here.ra");
    let err = rawarray_sql::query_blocking(&format!("SELECT * FROM '{}'", missing.display()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("nothing-here.ra"), "{err}");

    let garbage = dir.path().join("garbage.ra");
    std::fs::write(&garbage, b"not a rawarray file at all, just some text").unwrap();
    let err = rawarray_sql::query_blocking(&format!("SELECT * FROM '{}'", garbage.display()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("garbage.ra"), "{err}");

    let err = rawarray_sql::query_blocking("SELEKT step FROM 'run.ra'")
        .unwrap_err()
        .to_string();
    assert!(err.contains("SELEKT"), "{err}");

    let err = rawarray_sql::query_blocking(&format!("SELECT mass FROM '{}'", path.display()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("mass"), "{err}");
}

fn ra_sql(query: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ra-sql"))
        .arg(query)
        .output()
        .unwrap()
}

#[test]
fn group_by_through_the_binary_equals_the_hand_computation() {
    let dir = tempfile::tempdir().unwrap();
    let records = bodies();
    let path = write(dir.path(), &records);
    let out = ra_sql(&GROUP_BY.replace("PATH", &path.display().to_string()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    // The rows of the printed table: `| step | e | n | top |`, read back as numbers.
    let rows: Vec<(u32, f64, i64, u32)> = text
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            (
                cells[0].parse().unwrap(),
                cells[1].parse().unwrap(),
                cells[2].parse().unwrap(),
                cells[3].parse().unwrap(),
            )
        })
        .collect();
    let want: Vec<_> = by_hand(&records)
        .into_iter()
        .map(|(step, (sum, n, top))| (step, sum / n as f64, n, top))
        .collect();
    assert_eq!(rows, want, "{text}");
}

#[test]
fn the_binary_reports_a_missing_file_or_bad_sql_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here.ra");
    for (query, needle) in [
        (
            format!("SELECT * FROM '{}'", missing.display()),
            "nothing-here.ra",
        ),
        ("SELECT step FROM".to_string(), "ra sql: "),
    ] {
        let out = ra_sql(&query);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(needle), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty());
    }
    let out = Command::new(env!("CARGO_BIN_EXE_ra-sql")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The names of this process's threads.
#[cfg(target_os = "linux")]
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect()
}

#[test]
#[cfg(target_os = "linux")]
fn a_query_of_local_files_starts_no_object_store_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), &bodies());
    let batches =
        rawarray_sql::query_blocking(&format!("SELECT count(*) FROM '{}'", path.display()))
            .unwrap();
    assert_eq!(
        batches[0].column(0).as_primitive::<Int64Type>().value(0),
        35
    );
    // The stores' runtime names its threads ra-sql-store (src/url.rs); no test of this file
    // opens a URL, so none of them may be running.
    let names = thread_names();
    assert!(!names.is_empty());
    assert!(!names.iter().any(|n| n == "ra-sql-store"), "{names:?}");
}
