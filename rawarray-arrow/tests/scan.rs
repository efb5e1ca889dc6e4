//! Scans with a filter and a limit (`RaTable::scan`): the rows kept equal a plain filter of
//! the whole table, only the chunks whose statistics allow a match are read (counted by the
//! table's I/O), a limit reads no further than it needs, and filters that cannot apply are
//! errors naming what is wrong.

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt32Type};
use arrow_array::RecordBatch;
use rawarray_arrow::{RaTable, ScanOptions};
use rawarray_serde::query::Predicate;
use rawarray_serde::{Codec, Flags, Header, RaRecord, RawArray, RecordOptions, WriteOptions};

#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Body {
    step: u32,
    body: u32,
    energy: f64,
}

const BODIES: u32 = 16;

/// 16 bodies a step for `steps` steps, in chunks of 64 records (4 steps).
fn write_run(path: &Path, steps: u32) -> Vec<Body> {
    let mut w = RecordOptions::new()
        .codec(Codec::Zstd)
        .chunk_records(64)
        .create::<Body>(path)
        .unwrap();
    let mut all = Vec::new();
    for step in 0..steps {
        for body in 0..BODIES {
            let b = Body {
                step,
                body,
                energy: f64::from(step) + f64::from(body) / 100.0,
            };
            w.append(&b).unwrap();
            all.push(b);
        }
        if step % 5 == 2 {
            w.flush().unwrap();
        }
    }
    w.finish().unwrap();
    all
}

/// (step, body) of every row of the batches, which must have the columns step and body first.
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

fn scan(table: &RaTable, opts: &ScanOptions) -> Vec<RecordBatch> {
    table.scan(opts).unwrap().map(Result::unwrap).collect()
}

/// Which rows a predicate keeps, as the test computes it itself.
type RowTest = Box<dyn Fn(&Body) -> bool>;

#[test]
fn a_filtered_scan_keeps_the_matching_rows_and_reads_their_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.ra");
    let all = write_run(&path, 100); // 25 chunks
    let cases: Vec<(Predicate, RowTest, u64)> = vec![
        (
            Predicate::between("step", 40, 43),
            Box::new(|b: &Body| (40..=43).contains(&b.step)),
            1,
        ),
        (
            Predicate::between("step", 41, 44),
            Box::new(|b: &Body| (41..=44).contains(&b.step)),
            2,
        ),
        (
            Predicate::eq("body", 3) & Predicate::lt("step", 8),
            Box::new(|b: &Body| b.body == 3 && b.step < 8),
            2,
        ),
        (
            Predicate::gt("energy", 97.5) | Predicate::le("energy", 0.03),
            Box::new(|b: &Body| b.energy > 97.5 || b.energy <= 0.03),
            2,
        ),
        (
            !Predicate::lt("step", 96),
            Box::new(|b: &Body| b.step >= 96),
            1,
        ),
        (Predicate::gt("step", 1000), Box::new(|_: &Body| false), 0),
        (
            Predicate::eq("body", 3),
            Box::new(|b: &Body| b.body == 3),
            25,
        ),
    ];
    for (p, keep, chunks) in cases {
        let table = RaTable::open(&path).unwrap();
        let got = keys(&scan(
            &table,
            &ScanOptions::new().filter(p.clone()).batch_rows(100),
        ));
        let want: Vec<(u32, u32)> = all
            .iter()
            .filter(|b| keep(b))
            .map(|b| (b.step, b.body))
            .collect();
        assert_eq!(got, want, "{p}");
        assert_eq!(table.io_stats().unwrap().reads, chunks, "{p}: chunks read");
    }
}

#[test]
fn an_inexact_scan_hands_out_whole_chunks_of_only_the_columns_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.ra");
    write_run(&path, 40);
    let table = RaTable::open(&path).unwrap();
    let opts = ScanOptions::new()
        .columns(vec![2, 0])
        .filter(Predicate::eq("step", 9))
        .exact(false);
    let batches = scan(&table, &opts);
    // Chunk 2 holds steps 8 to 11, whole.
    let steps: Vec<u32> = batches
        .iter()
        .flat_map(|b| b.column(1).as_primitive::<UInt32Type>().values().to_vec())
        .collect();
    assert_eq!(steps.len(), 64);
    assert!(steps.iter().all(|s| (8..12).contains(s)));
    assert_eq!(batches[0].schema().field(0).name(), "energy");
    let e = batches[0].column(0).as_primitive::<Float64Type>().value(0);
    assert_eq!(e, 8.0);
}

#[test]
fn a_limit_reads_only_what_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.ra");
    let all = write_run(&path, 100);
    let table = RaTable::open(&path).unwrap();
    let got = keys(&scan(&table, &ScanOptions::new().limit(10)));
    assert_eq!(got.len(), 10);
    assert_eq!(table.io_stats().unwrap().reads, 1, "one chunk");
    // A limit with a filter: the first matching rows, from the chunks that hold them.
    let table = RaTable::open(&path).unwrap();
    let opts = ScanOptions::new()
        .filter(Predicate::ge("step", 50) & Predicate::eq("body", 7))
        .limit(3)
        .batch_rows(64);
    let got = keys(&scan(&table, &opts));
    assert_eq!(got, [(50, 7), (51, 7), (52, 7)]);
    assert_eq!(
        table.io_stats().unwrap().reads,
        2,
        "the chunks of steps 48 to 55"
    );
    let none = keys(&scan(&table, &ScanOptions::new().limit(0)));
    assert!(none.is_empty());
    assert_eq!(all.len(), 1600);
}

#[test]
fn plain_and_big_endian_files_are_filtered_by_their_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.ra");
    let mut w = RecordOptions::new().create::<Body>(&path).unwrap();
    let all: Vec<Body> = (0..50)
        .map(|i| Body {
            step: i,
            body: i % 7,
            energy: -f64::from(i),
        })
        .collect();
    w.append_slice(&all).unwrap();
    w.finish().unwrap();
    let want: Vec<(u32, u32)> = all
        .iter()
        .filter(|b| b.body == 2 && b.energy > -30.0)
        .map(|b| (b.step, b.body))
        .collect();
    let p = Predicate::eq("body", 2) & Predicate::gt("energy", -30.0);
    let table = RaTable::open(&path).unwrap();
    assert_eq!(
        keys(&scan(&table, &ScanOptions::new().filter(p.clone()))),
        want
    );
    assert_eq!(table.io_stats(), None, "a plain file is mapped");

    // The same records big-endian: the header flagged, every scalar swapped.
    let bytes = std::fs::read(&path).unwrap();
    let h = Header::decode(&bytes).unwrap();
    let mut be = bytes.clone();
    let mut hb = h.clone();
    hb.flags = hb.flags.with(Flags::BIG_ENDIAN, true);
    be[..h.encoded_len()].copy_from_slice(&hb.encode());
    for rec in be[h.encoded_len()..h.encoded_len() + h.size as usize].chunks_exact_mut(16) {
        rec[0..4].reverse();
        rec[4..8].reverse();
        rec[8..16].reverse();
    }
    let be_path = dir.path().join("be.ra");
    std::fs::write(&be_path, be).unwrap();
    let table = RaTable::open(&be_path).unwrap();
    assert_eq!(keys(&scan(&table, &ScanOptions::new().filter(p))), want);
}

#[test]
fn filters_that_cannot_apply_are_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.ra");
    write_run(&path, 4);
    let table = RaTable::open(&path).unwrap();
    let err = |p: Predicate| {
        table
            .scan(&ScanOptions::new().filter(p))
            .err()
            .unwrap()
            .to_string()
    };
    let e = err(Predicate::eq("mass", 1));
    assert!(
        e.contains("no column 'mass': the columns are step, body, energy"),
        "{e}"
    );
    assert!(e.contains("run.ra"), "{e}");
    // A plain array's one column is `values`.
    let a = dir.path().join("a.ra");
    RawArray::from_shape_vec(vec![3, 2], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])
        .unwrap()
        .write_file_with(&a, &WriteOptions::new().codec(Codec::Zstd))
        .unwrap();
    let t = RaTable::open(&a).unwrap();
    let rows: usize = t
        .scan(&ScanOptions::new().filter(Predicate::gt("values", 2.5)))
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(rows, 4);
    // A ragged file's rows have no fields.
    let r = dir.path().join("r.ra");
    rawarray_serde::to_file(&r, &vec![vec![1u8], vec![2, 3]]).unwrap();
    let t = RaTable::open(&r).unwrap();
    let e = t
        .scan(&ScanOptions::new().filter(Predicate::eq("values", 1)))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("ragged"), "{e}");
}
