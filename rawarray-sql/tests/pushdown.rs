//! Filters and limits pushed into the scan: a query reads only the chunks whose statistics
//! allow a row to match (counted by the table's I/O) and returns the same rows as a file
//! without statistics (every chunk read) and as a plain filter of the records written; a
//! `LIMIT` reads one chunk; random `WHERE` clauses over random values (NaN, -0.0, infinities
//! among them) agree pruned and unpruned.

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::UInt32Type;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use rawarray_serde::{Codec, RaRecord, RecordOptions, WriteOptions};
use rawarray_sql::RaTableProvider;

#[derive(RaRecord, Clone, Copy, Debug)]
struct Body {
    step: u32,
    body: u32,
    energy: f64,
    x: f32,
    alive: bool,
}

const BODIES: u32 = 16;

/// 16 bodies a step, chunks of 64 records (4 steps); `x` has the float specials.
fn bodies(steps: u32) -> Vec<Body> {
    let mut out = Vec::new();
    for step in 0..steps {
        for body in 0..BODIES {
            let k = step * BODIES + body;
            out.push(Body {
                step,
                body,
                energy: f64::from(step) + f64::from(body) / 100.0,
                x: match k % 37 {
                    5 => -0.0,
                    6 => 0.0,
                    11 if step > 50 => f32::NAN,
                    12 => f32::INFINITY,
                    _ => (k % 23) as f32 - 11.0 + f32::from(u16::try_from(step / 10).unwrap()),
                },
                alive: body % 3 != 0,
            });
        }
    }
    out
}

fn write(path: &Path, records: &[Body], statistics: bool) {
    let opts = RecordOptions::new().storage(
        WriteOptions::chunked()
            .codec(Codec::Zstd)
            .chunks(vec![64])
            .statistics(statistics),
    );
    let mut w = opts.create::<Body>(path).unwrap();
    for piece in records.chunks(100) {
        w.append_slice(piece).unwrap();
        w.flush().unwrap();
    }
    w.finish().unwrap();
}

/// Runs `sql` over `path` registered as `t`; returns the result and the chunks read.
fn run(path: &Path, sql: &str) -> (Vec<RecordBatch>, u64) {
    let provider = Arc::new(RaTableProvider::open(path).unwrap());
    let ctx = SessionContext::new();
    ctx.register_table("t", provider.clone()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let batches = rt
        .block_on(async { ctx.sql(sql).await?.collect().await })
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let reads = provider.table().io_stats().unwrap().reads;
    (batches, reads)
}

fn text(batches: &[RecordBatch]) -> String {
    pretty_format_batches(batches).unwrap().to_string()
}

/// (step, body) of the rows of a result whose first two columns are step and body.
fn keys(batches: &[RecordBatch]) -> Vec<(u32, u32)> {
    batches
        .iter()
        .flat_map(|b| {
            let s = b.column(0).as_primitive::<UInt32Type>().clone();
            let o = b.column(1).as_primitive::<UInt32Type>().clone();
            (0..b.num_rows()).map(move |i| (s.value(i), o.value(i)))
        })
        .collect()
}

#[test]
fn a_where_clause_reads_only_the_chunks_that_can_match() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.ra");
    let records = bodies(100); // 25 chunks
    write(&path, &records, true);
    type Keep = Box<dyn Fn(&Body) -> bool>;
    let cases: Vec<(&str, Keep, u64)> = vec![
        (
            "step BETWEEN 40 AND 43",
            Box::new(|b| (40..=43).contains(&b.step)),
            1,
        ),
        (
            "step >= 41 AND step <= 44",
            Box::new(|b| (41..=44).contains(&b.step)),
            2,
        ),
        (
            "step IN (3, 90)",
            Box::new(|b| b.step == 3 || b.step == 90),
            2,
        ),
        ("NOT (step < 96)", Box::new(|b| b.step >= 96), 1),
        ("96 <= step", Box::new(|b| b.step >= 96), 1),
        ("step NOT BETWEEN 4 AND 99", Box::new(|b| b.step < 4), 1),
        (
            "body = 3 AND step < 8",
            Box::new(|b| b.body == 3 && b.step < 8),
            2,
        ),
        (
            "energy > 97.5 OR energy <= 0.03",
            Box::new(|b| b.energy > 97.5 || b.energy <= 0.03),
            2,
        ),
        // A cast that keeps every value: still pruned.
        ("CAST(step AS BIGINT) = 17", Box::new(|b| b.step == 17), 1),
        // (Steps 16 to 19 are one chunk: 17.5 lies between its least and greatest.)
        ("step = 17.5", Box::new(|_| false), 1),
        ("step = 1000", Box::new(|_| false), 0),
        // Nothing to prune by: every chunk.
        ("step + 1 = 5", Box::new(|b| b.step == 4), 25),
        ("alive AND step < 4", Box::new(|b| b.alive && b.step < 4), 1),
        (
            "NOT alive AND step > 95",
            Box::new(|b| !b.alive && b.step > 95),
            1,
        ),
        ("body = 3", Box::new(|b| b.body == 3), 25),
    ];
    for (clause, keep, chunks) in cases {
        let sql = format!("SELECT step, body FROM t WHERE {clause} ORDER BY step, body");
        let (got, reads) = run(&path, &sql);
        let want: Vec<(u32, u32)> = records
            .iter()
            .filter(|b| keep(b))
            .map(|b| (b.step, b.body))
            .collect();
        assert_eq!(keys(&got), want, "{clause}");
        assert_eq!(reads, chunks, "{clause}: chunks read");
    }
}

#[test]
fn a_limit_reads_one_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.ra");
    write(&path, &bodies(100), true);
    let (got, reads) = run(&path, "SELECT * FROM t LIMIT 10");
    assert_eq!(got.iter().map(RecordBatch::num_rows).sum::<usize>(), 10);
    assert_eq!(reads, 1);
    // A limit above a filter (not pushed into the scan): the scan reads a chunk at a time and
    // stops when the limit is met, a chunk or so per partition, not the ten chunks that match.
    let (got, reads) = run(
        &path,
        "SELECT step, body FROM t WHERE step >= 60 ORDER BY step, body LIMIT 3",
    );
    assert_eq!(keys(&got), [(60, 0), (60, 1), (60, 2)]);
    assert_eq!(reads, 10, "ORDER BY reads every chunk that can match");
    let (got, reads) = run(&path, "SELECT step, body FROM t WHERE step >= 60 LIMIT 3");
    assert_eq!(got.iter().map(RecordBatch::num_rows).sum::<usize>(), 3);
    assert!(reads < 10, "{reads} chunks read");
}

/// Chunks of 64 records whose `x` puts the float specials at the edges of the statistics:
/// all zeros of both signs; negatives up to -0.0; zeros and positives; a NaN among positives;
/// a NaN with its sign bit set among negatives; positives only.
fn specials() -> Vec<Body> {
    let chunk = |k: u32, i: u32| -> f32 {
        let v = (i % 5) as f32 + 1.0;
        match (k, i) {
            (0, 7) => -0.0,
            (0, _) => 0.0,
            (1, 9) => -0.0,
            (1, _) => -v,
            (2, 3) => -0.0,
            (2, 4) => 0.0,
            (2, _) => v,
            (3, 11) => f32::NAN,
            (3, _) => v,
            (4, 20) => -f32::NAN,
            (4, _) => -v,
            _ => v,
        }
    };
    (0..6 * 64)
        .map(|n| Body {
            step: n / 16,
            body: n % 16,
            energy: 0.0,
            x: chunk(n / 64, n % 64),
            alive: true,
        })
        .collect()
}

/// The float specials as DataFusion orders them (NaN above every number, and below every
/// number with its sign bit set; -0.0 equal to 0.0): the statistics never skip a chunk whose
/// rows DataFusion's filter keeps, and skip the others.
#[test]
fn float_specials_are_never_pruned_away() {
    let dir = tempfile::tempdir().unwrap();
    let (with, without) = (dir.path().join("with.ra"), dir.path().join("without.ra"));
    let records = specials();
    write(&with, &records, true);
    write(&without, &records, false);
    // Chunks 3 and 4 hold a NaN: always read. The others by their least and greatest value,
    // a zero at either end standing for both zeros.
    for (clause, chunks) in [
        ("x < 0.0", 5),
        ("x <= -0.0", 5),
        ("x > -0.0", 6),
        ("x = 0.0", 5),
        ("x = -0.0", 5),
        ("x != 0.0", 6),
        ("x != 1.0", 6),
        ("x > 100", 2),
        ("x < -100", 2),
        ("x >= 'NaN'::float", 6),
        ("x = 'NaN'::float", 6),
        ("NOT (x < 5)", 4),
        ("x = 'inf'::float", 2),
        ("x IN (0.0, -1.0)", 5),
        ("x BETWEEN 0.5 AND 0.75", 3),
    ] {
        let sql = format!("SELECT step, body, x FROM t WHERE {clause} ORDER BY step, body");
        let (a, reads) = run(&with, &sql);
        let (b, all) = run(&without, &sql);
        assert_eq!(text(&a), text(&b), "{clause}");
        assert_eq!(all, 6);
        assert_eq!(reads, chunks, "{clause}: chunks read");
    }
    // Why a chunk holding a NaN is read whatever its least and greatest values: DataFusion
    // orders NaN above every number, and below every number with its sign bit set.
    for c in ["x > 100", "x < -100"] {
        let (a, _) = run(&with, &format!("SELECT count(*) AS n FROM t WHERE {c}"));
        let n = a[0]
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
            .value(0);
        assert_eq!(n, 1, "{c}");
    }
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// A random `WHERE` clause over the columns, of depth at most `depth`.
fn clause(s: &mut u64, depth: u32) -> String {
    let pick = |s: &mut u64, n: u64| xorshift(s) % n;
    if depth == 0 || pick(s, 3) == 0 {
        let (col, lit) = match pick(s, 4) {
            0 => ("step", format!("{}", pick(s, 110))),
            1 => ("body", format!("{}", pick(s, 18))),
            2 => ("energy", format!("{}.{}", pick(s, 105), pick(s, 20))),
            _ => (
                "x",
                [
                    "0.0",
                    "-0.0",
                    "'NaN'::float",
                    "'inf'::float",
                    "-3.5",
                    "4",
                    "11",
                ][pick(s, 7) as usize]
                    .to_string(),
            ),
        };
        return match pick(s, 9) {
            0 => format!("{col} = {lit}"),
            1 => format!("{col} != {lit}"),
            2 => format!("{col} < {lit}"),
            3 => format!("{col} <= {lit}"),
            4 => format!("{col} > {lit}"),
            5 => format!("{lit} >= {col}"),
            6 => format!("{col} BETWEEN {lit} AND {lit} + 10"),
            7 => format!("{col} IN ({lit}, 7)"),
            _ => format!("{col} NOT IN ({lit})"),
        };
    }
    match pick(s, 3) {
        0 => format!("({}) AND ({})", clause(s, depth - 1), clause(s, depth - 1)),
        1 => format!("({}) OR ({})", clause(s, depth - 1), clause(s, depth - 1)),
        _ => format!("NOT ({})", clause(s, depth - 1)),
    }
}

#[test]
fn random_where_clauses_agree_pruned_and_unpruned() {
    let dir = tempfile::tempdir().unwrap();
    let (with, without) = (dir.path().join("with.ra"), dir.path().join("without.ra"));
    let records = bodies(100);
    write(&with, &records, true);
    write(&without, &records, false);
    let mut s = 0x2545_f491_4f6c_dd1d_u64;
    let (mut read, mut total) = (0, 0);
    for _ in 0..60 {
        let c = clause(&mut s, 3);
        let sql = format!("SELECT step, body, x FROM t WHERE {c} ORDER BY step, body");
        let (a, reads) = run(&with, &sql);
        let (b, all) = run(&without, &sql);
        assert_eq!(text(&a), text(&b), "{c}");
        read += reads;
        total += all;
    }
    // The statistics skip chunks of some of them.
    assert!(read < total, "{read} of {total} chunks read");
}
