//! The reference files (written by the C, Julia and Python implementations) read in blocks by
//! `ArrayReader`, positioned and mapped: every block of every file equals the same block cut
//! from the whole file read by `DynArray`, LZ4 files (`mnist_8_z.ra`) included.

mod common;

use std::ops::Range;

use common::reference;
use rawarray_serde::{ArrayReader, DynArray};

const NAMES: &[&str] = &[
    "test.ra",
    "mnist_8.ra",
    "mnist_8_z.ra",
    "rand100.ra",
    "randc32.ra",
    "randc64.ra",
    "randf16.ra",
    "randf32.ra",
    "randf64.ra",
    "randi32.ra",
    "randi8.ra",
    "randu32.ra",
    "randu8.ra",
];

/// The block `ranges` of a whole array's plain bytes, element by element.
fn cut(whole: &DynArray, ranges: &[Range<u64>]) -> Vec<u8> {
    let dims = &whole.header().dims;
    let elbyte = whole.header().elbyte as usize;
    let mut out = Vec::new();
    let n: u64 = ranges.iter().map(|r| r.end - r.start).product();
    for k in 0..n {
        // The block's k-th element (column-major), and its offset in the array.
        let (mut rest, mut off, mut stride) = (k, 0u64, 1u64);
        for (r, d) in ranges.iter().zip(dims) {
            let len = r.end - r.start;
            off += (r.start + rest % len) * stride;
            rest /= len;
            stride *= d;
        }
        let at = off as usize * elbyte;
        out.extend_from_slice(&whole.data()[at..at + elbyte]);
    }
    out
}

/// Ranges for each dim: the whole dim, its first element, its last two, and its middle.
fn choices(d: u64) -> Vec<Range<u64>> {
    vec![0..d, 0..d.min(1), d.saturating_sub(2)..d, d / 3..d - d / 3]
}

#[test]
fn every_block_of_every_reference_file() {
    let mut blocks = 0;
    for name in NAMES {
        let path = reference(name);
        let whole = DynArray::read_file(&path).unwrap();
        let dims = whole.header().dims.clone();
        for reader in [
            ArrayReader::open(&path).unwrap(),
            ArrayReader::open_mapped(&path).unwrap(),
        ] {
            assert_eq!(reader.header().dims, dims, "{name}");
            // Every combination of the choices, one per dim.
            let per_dim: Vec<Vec<Range<u64>>> = dims.iter().map(|&d| choices(d)).collect();
            let combos: usize = per_dim.iter().map(Vec::len).product();
            for mut c in 0..combos {
                let ranges: Vec<Range<u64>> = per_dim
                    .iter()
                    .map(|opts| {
                        let r = opts[c % opts.len()].clone();
                        c /= opts.len();
                        r
                    })
                    .collect();
                let (h, bytes) = reader.read_subset_bytes(&ranges).unwrap();
                assert_eq!(bytes, cut(&whole, &ranges), "{name} {ranges:?}");
                assert_eq!(h.eltype, whole.header().eltype);
                blocks += 1;
            }
        }
    }
    assert!(blocks > 400, "{blocks} blocks");
}
