//! Projected batches of a record file whose blocks are byte streams (the default for records
//! written with zstd) decode only the projected fields' streams: every projection, in any
//! order, equals the same columns of the whole rows, batch by batch, and equals what a file of
//! the same records in one stream a block gives.

use std::path::Path;

use arrow_array::RecordBatch;
use rawarray_arrow::RaTable;
use rawarray_serde::{ArrayReader, Codec, RaRecord, RecordOptions, WriteOptions};

#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Body {
    step: u64,
    time: f64,
    id: u32,
    position: [f64; 3],
    velocity: [f32; 3],
    energy: f64,
}

fn write(path: &Path, n: u64, opts: RecordOptions) {
    let mut w = opts.create::<Body>(path).unwrap();
    for k in 0..n {
        let t = k as f64 * 1e-3;
        w.append(&Body {
            step: k / 64,
            time: t,
            id: (k % 64) as u32,
            position: [t.cos(), t.sin(), -t],
            velocity: [t.sin() as f32, 1.5, (k % 7) as f32],
            energy: -0.5 + (k % 13) as f64 * 1e-6,
        })
        .unwrap();
        if k % 9000 == 4500 {
            w.flush().unwrap();
        }
    }
    w.finish().unwrap();
}

#[test]
fn projected_batches_equal_the_columns_of_whole_rows() {
    let dir = tempfile::tempdir().unwrap();
    let split = dir.path().join("split.ra");
    let one = dir.path().join("one.ra");
    let n = 40_000;
    write(&split, n, RecordOptions::new().codec(Codec::Zstd));
    write(
        &one,
        n,
        RecordOptions::new().storage(WriteOptions::chunked().codec(Codec::Zstd).split(false)),
    );
    // The default file decodes fields alone; the other does not.
    let fields = |p: &Path| {
        ArrayReader::open(p)
            .unwrap()
            .read_subset_fields(std::slice::from_ref(&(0..10)), &[(0, 8)])
            .unwrap()
    };
    assert!(
        fields(&split).is_some(),
        "records with zstd are byte streams by default"
    );
    assert!(fields(&one).is_none());

    let (ts, to) = (RaTable::open(&split).unwrap(), RaTable::open(&one).unwrap());
    let whole = ts.read_all().unwrap();
    assert_eq!(whole, to.read_all().unwrap());
    // The last projection is over half the row: read as whole rows.
    for columns in [
        vec![5, 0],
        vec![3],
        vec![4, 2, 1],
        vec![0, 0],
        vec![5],
        vec![3, 4, 5],
    ] {
        for batch_rows in [1000, 7777, 100_000] {
            let got: Vec<RecordBatch> = ts
                .batches_of(&columns, batch_rows)
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert_eq!(
                got.iter().map(RecordBatch::num_rows).sum::<usize>(),
                n as usize
            );
            let want = whole.project(&columns).unwrap();
            let mut at = 0;
            for b in &got {
                assert_eq!(
                    *b,
                    want.slice(at, b.num_rows()),
                    "columns {columns:?} rows {batch_rows} at {at}"
                );
                at += b.num_rows();
            }
            let other: Vec<RecordBatch> = to
                .batches_of(&columns, batch_rows)
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert_eq!(got, other, "columns {columns:?} rows {batch_rows}");
        }
    }
}
