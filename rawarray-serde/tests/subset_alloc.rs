//! A block costs its own bytes, not the file's: a counting global allocator (this test binary
//! only) records the peak of live heap bytes on the thread while one read or write runs, the
//! value it returns included.
//!
//! | call | peak allowed |
//! |---|---|
//! | `ArrayReader::read_subset`, `read_subset_bytes` (positioned or mapped), plain-old-data elements | the block + 64 KiB |
//! | the same for elements decoded one by one (records, `bool`) | 2 x the block + 64 KiB |
//! | `ArrayWriter::write_subset` of plain-old-data elements | 64 KiB |
//! | `SubsetPlan` and walking its runs, whatever the block | 64 KiB |
//!
//! The maps are the file itself, not heap, and are not counted.
// The old names (ChunkOptions, SectionReader, the ArrayWriter constructors) are kept
// one release as deprecated re-exports; these tests still use them.
#![allow(deprecated)]
// A block of a 1-D array is a slice of one range: what this lint takes for a typo.
#![allow(clippy::single_range_in_vec_init)]

use rawarray_serde::{ArrayReader, ArrayWriter, RaRecord, SubsetPlan};

mod common;

#[global_allocator]
static ALLOC: common::counting::Counting = common::counting::Counting;

use common::counting::peak;

const SLACK: usize = 64 << 10;

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Rec {
    a: u16,
    b: [f32; 2],
    ok: bool,
}

#[test]
fn a_block_costs_its_own_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.ra");
    // f32 [256, 128, 64]: 8 MiB of data.
    let dims = [256u64, 128, 64];
    let w = ArrayWriter::create::<f32>(&path, &dims).unwrap();
    let plane: Vec<f32> = (0..256 * 128).map(|i| i as f32).collect();
    for z in 0..64 {
        let p = peak(|| w.write_subset(&[0..256, 0..128, z..z + 1], &plane).unwrap());
        assert!(p <= SLACK, "a plane written: {p} bytes of heap");
    }
    w.finish().unwrap();
    let readers = [
        ArrayReader::open(&path).unwrap(),
        ArrayReader::open_mapped(&path).unwrap(),
    ];
    let blocks: [&[std::ops::Range<u64>]; 4] = [
        &[7..8, 3..4, 9..10],
        &[0..256, 0..128, 5..6],
        &[100..101, 0..128, 0..64],
        &[10..20, 30..40, 50..60],
    ];
    for r in &readers {
        for b in blocks {
            let bytes = r.plan(b).unwrap().bytes() as usize;
            let p = peak(|| r.read_subset::<f32>(b).unwrap());
            assert!(
                p <= bytes + SLACK,
                "{b:?}: {p} bytes of heap for a {bytes}-byte block"
            );
            let p = peak(|| r.read_subset_bytes(b).unwrap());
            assert!(
                p <= bytes + SLACK,
                "{b:?}: {p} bytes of heap for a {bytes}-byte block"
            );
        }
    }

    // Elements decoded one by one: the block's bytes, then its values.
    let recs = dir.path().join("recs.ra");
    let n = 100_000u64;
    let w = ArrayWriter::create::<Rec>(&recs, &[n]).unwrap();
    w.write_subset(
        &[0..n],
        &vec![
            Rec {
                a: 1,
                b: [2.0, 3.0],
                ok: true
            };
            n as usize
        ],
    )
    .unwrap();
    w.finish().unwrap();
    let r = ArrayReader::open(&recs).unwrap();
    let block = 1000..1100u64;
    let bytes = (block.end - block.start) as usize * std::mem::size_of::<Rec>();
    let p = peak(|| r.read_subset::<Rec>(std::slice::from_ref(&block)).unwrap());
    assert!(p <= 2 * bytes + SLACK, "{p} bytes of heap for 100 records");
}

#[test]
fn a_plan_costs_its_dims_whatever_the_block() {
    let dims = [1u64 << 20, 1 << 20, 1 << 10, 4];
    let p = peak(|| {
        let plan = SubsetPlan::new(&dims, 1, &[0..1, 0..1 << 20, 0..1 << 10, 0..4]).unwrap();
        assert_eq!(plan.run_count(), (1 << 30) * 4);
        plan.runs().take(100_000).map(|r| r.start).sum::<u64>()
    });
    assert!(p <= SLACK, "{p} bytes of heap");
}
