//! A conversion of a file many times larger than its batch stays within memory bounded by the
//! batch, measured with a counting global allocator (this test binary only): `.ra` -> Parquet,
//! Parquet -> `.ra` and `.ra` -> Arrow IPC.

#[path = "../../rawarray-serde/tests/common/counting.rs"]
#[allow(dead_code)]
mod counting;

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

use rawarray_arrow::ConvertOptions;
use rawarray_serde::{RaRecord, RecordWriter};

/// 80 bytes, as the benchmark's records.
#[derive(RaRecord, Clone)]
struct Body {
    step: u64,
    id: u32,
    kind: u32,
    pos: [f64; 3],
    vel: [f64; 3],
    energy: f64,
    mass: f32,
    ok: bool,
    pad: [u8; 3],
}

#[test]
fn conversions_use_memory_bounded_by_the_batch() {
    const RECORDS: usize = 400_000; // 32 MB of records
    const BATCH: usize = 4096; // 320 KiB of records
    let dir = tempfile::tempdir().unwrap();
    let ra = dir.path().join("big.ra");
    let mut w = RecordWriter::<Body>::create(&ra, ()).unwrap();
    for i in 0..RECORDS {
        let x = i as f64;
        w.append(&Body {
            step: (i / 1000) as u64,
            id: (i % 1000) as u32,
            kind: 1,
            pos: [x, -x, 0.5],
            vel: [1.0, 2.0, x],
            energy: x * x,
            mass: 1.0,
            ok: i.is_multiple_of(2),
            pad: [0; 3],
        })
        .unwrap();
    }
    w.finish().unwrap();
    let file_bytes = std::fs::metadata(&ra).unwrap().len() as usize;
    let batch_bytes = BATCH * 80;
    let opts = ConvertOptions::new().batch_rows(BATCH);
    let pq = dir.path().join("big.parquet");
    let to_parquet =
        counting::peak(|| rawarray_arrow::ra_to_parquet(&ra, &pq, &opts, |_, _| {}).unwrap());
    let back = dir.path().join("back.ra");
    let from_parquet =
        counting::peak(|| rawarray_arrow::parquet_to_ra(&pq, &back, &opts, |_, _| {}).unwrap());
    let ipc = dir.path().join("big.arrow");
    let to_ipc = counting::peak(|| rawarray_arrow::ra_to_ipc(&ra, &ipc, &opts, |_, _| {}).unwrap());
    eprintln!("file {file_bytes}, batch {batch_bytes}: peaks {to_parquet} {from_parquet} {to_ipc}");
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&ra).unwrap());
    // A batch's columns, its encoded pages and the writers' buffers: a few batches, and far
    // below the file (whose size a whole-file conversion would need at least).
    let bound = 12 * batch_bytes + (2 << 20);
    for (what, peak) in [
        ("to parquet", to_parquet),
        ("from parquet", from_parquet),
        ("to ipc", to_ipc),
    ] {
        assert!(
            peak < bound,
            "{what}: peak {peak} bytes, bound {bound} (file {file_bytes})"
        );
        assert!(
            peak < file_bytes / 5,
            "{what}: peak {peak} of a {file_bytes}-byte file"
        );
    }
}
