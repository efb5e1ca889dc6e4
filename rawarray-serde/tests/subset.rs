//! Blocks of arrays: `ArrayReader` (positioned reads, the map), `StoreArrayReader` (object
//! storage) and `ArrayWriter` (threads and processes writing disjoint blocks).
//!
//! Every read is checked against the same block cut from a whole `RawArray::read_file` by a
//! naive loop written here, independent of the library's run computation, and the bytes read
//! are counted against the block's own.
// The old names (ChunkOptions, SectionReader, the ArrayWriter constructors) are kept
// one release as deprecated re-exports; these tests still use them.
#![allow(deprecated)]
// A block of a 1-D array is a slice of one range: what this lint takes for a typo.
#![allow(clippy::single_range_in_vec_init)]

use std::fmt::Debug;
use std::ops::Range;
use std::path::Path;

use num_complex::Complex;
use proptest::prelude::*;
use rawarray_serde::{
    ArrayReader, ArrayWriter, DynArray, ElType, Element, ErrorKind, Header, RaRecord, RawArray,
    SubsetPlan, WriteOptions,
};

/// A record with fields of several sizes: no one-copy path, so the decoding path is tested.
#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Rec {
    a: u16,
    b: [f32; 2],
    c: i8,
}

/// Values of each element type made from an index, all different for small indices.
trait Make: Element + Clone + PartialEq + Debug + Send + Sync + 'static {
    fn make(i: u64) -> Self;
}

impl Make for u8 {
    fn make(i: u64) -> u8 {
        (i * 7 + 3) as u8
    }
}
impl Make for i16 {
    fn make(i: u64) -> i16 {
        (i as i16).wrapping_mul(-31).wrapping_add(5)
    }
}
impl Make for f32 {
    fn make(i: u64) -> f32 {
        i as f32 * 0.5 - 3.25
    }
}
impl Make for f64 {
    fn make(i: u64) -> f64 {
        -(i as f64) * 1.5e-3 + 7.0
    }
}
impl Make for Complex<f32> {
    fn make(i: u64) -> Complex<f32> {
        Complex::new(i as f32, -(i as f32) * 0.25)
    }
}
impl Make for Rec {
    fn make(i: u64) -> Rec {
        Rec {
            a: (i * 3) as u16,
            b: [i as f32, -(i as f32)],
            c: (i % 100) as i8 - 50,
        }
    }
}

/// The block `ranges` of a column-major array, cut by walking every index of the block.
fn cut<T: Clone>(dims: &[u64], data: &[T], ranges: &[Range<u64>]) -> Vec<T> {
    let mut out = Vec::new();
    if ranges.iter().any(|r| r.start == r.end) {
        return out;
    }
    let mut idx: Vec<u64> = ranges.iter().map(|r| r.start).collect();
    loop {
        let (mut off, mut stride) = (0u64, 1u64);
        for (i, d) in idx.iter().zip(dims) {
            off += i * stride;
            stride *= d;
        }
        out.push(data[off as usize].clone());
        let mut k = 0;
        loop {
            if k == dims.len() {
                return out;
            }
            idx[k] += 1;
            if idx[k] < ranges[k].end {
                break;
            }
            idx[k] = ranges[k].start;
            k += 1;
        }
    }
}

fn options(which: u8) -> WriteOptions {
    WriteOptions::new()
        .big_endian(which & 1 != 0)
        .compress(which & 2 != 0)
}

/// Dims (1 to 6 of them, a few zeros) and subsets within them.
fn dims_and_subsets() -> impl Strategy<Value = (Vec<u64>, Vec<Vec<Range<u64>>>)> {
    prop::collection::vec(prop_oneof![12 => 1u64..5, 1 => Just(0u64)], 1..=6).prop_flat_map(
        |dims| {
            let one = dims
                .iter()
                .map(|&d| (0..=d, 0..=d).prop_map(|(a, b)| a.min(b)..a.max(b)))
                .collect::<Vec<_>>();
            (Just(dims), prop::collection::vec(one, 1..4))
        },
    )
}

/// The uncompressed reader's bytes are the block's: one read per run, nothing else.
fn check_counts(r: &ArrayReader, before: rawarray_serde::IoStats, plan: &SubsetPlan) {
    let after = r.io_stats();
    if r.header().is_compressed() {
        return;
    }
    assert_eq!(after.bytes - before.bytes, plan.bytes(), "bytes read");
    assert_eq!(after.reads - before.reads, plan.run_count(), "reads");
}

fn check_type<T: Make>(dims: &[u64], subsets: &[Vec<Range<u64>>], which: u8) {
    let n: u64 = dims.iter().product();
    let data: Vec<T> = (0..n).map(T::make).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.ra");
    RawArray::from_shape_vec(dims.to_vec(), data)
        .unwrap()
        .write_file_with(&path, &options(which))
        .unwrap();
    let whole: RawArray<T> = RawArray::read_file(&path).unwrap();
    let positioned = ArrayReader::open(&path).unwrap();
    let mapped = ArrayReader::open_mapped(&path).unwrap();
    assert_eq!(mapped.is_mapped(), which & 2 == 0 && n > 0);
    #[cfg(feature = "object_store")]
    let store = store::InMemoryFile::new(&std::fs::read(&path).unwrap());
    for ranges in subsets {
        let want = cut(dims, whole.as_slice(), ranges);
        let want_dims: Vec<u64> = ranges.iter().map(|r| r.end - r.start).collect();
        let plan = positioned.plan(ranges).unwrap();
        for r in [&positioned, &mapped] {
            let before = r.io_stats();
            let got: RawArray<T> = r.read_subset(ranges).unwrap();
            assert_eq!(got.dims(), &want_dims[..]);
            assert_eq!(got.as_slice(), &want[..], "{ranges:?} of {dims:?}");
            check_counts(r, before, &plan);
            // Into a caller's buffer: the same values.
            let mut buf: Vec<T> = (0..want.len() as u64).map(|i| T::make(i + 1000)).collect();
            r.read_subset_into(ranges, &mut buf).unwrap();
            assert_eq!(buf, want);
            // Untyped: the same bytes as the typed block written little-endian (user-defined
            // elements of a big-endian file stay big-endian, and the header says so).
            let (h, bytes) = r.read_subset_bytes(ranges).unwrap();
            assert_eq!(h.dims, want_dims);
            assert_eq!(
                h.is_big_endian(),
                which & 1 != 0 && T::ELTYPE == ElType::User
            );
            let typed = RawArray::from_shape_vec(want_dims.clone(), want.clone()).unwrap();
            let mut expected = Vec::new();
            typed
                .write_to_with(
                    &mut expected,
                    &WriteOptions::new().big_endian(h.is_big_endian()),
                )
                .unwrap();
            assert_eq!(bytes, expected[h.encoded_len()..]);
        }
        #[cfg(feature = "object_store")]
        store.check::<T>(ranges, &want, &plan);
    }
}

macro_rules! property {
    ($name:ident, $t:ty) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]
            #[test]
            fn $name((dims, subsets) in dims_and_subsets(), which in 0u8..4) {
                check_type::<$t>(&dims, &subsets, which);
            }
        }
    };
}

property!(u8_blocks_equal_the_cut, u8);
property!(i16_blocks_equal_the_cut, i16);
property!(f32_blocks_equal_the_cut, f32);
property!(f64_blocks_equal_the_cut, f64);
property!(complex_blocks_equal_the_cut, Complex<f32>);
property!(record_blocks_equal_the_cut, Rec);

#[test]
fn readers_and_writers_are_shared_between_threads() {
    fn sync<T: Send + Sync>() {}
    sync::<ArrayReader>();
    sync::<ArrayWriter>();
    sync::<SubsetPlan>();
    #[cfg(feature = "object_store")]
    sync::<rawarray_serde::StoreArrayReader>();
}

#[test]
fn a_plane_and_a_slab_read_their_own_bytes() {
    let dims = [16u64, 8, 32];
    let n: u64 = dims.iter().product();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cube.ra");
    RawArray::from_shape_vec(dims.to_vec(), (0..n).map(|i| i as f32).collect())
        .unwrap()
        .write_file(&path)
        .unwrap();
    let r = ArrayReader::open(&path).unwrap();
    // A plane of the last dim: one run.
    let plane = r.plan(&[0..16, 0..8, 5..6]).unwrap();
    assert_eq!((plane.run_count(), plane.run_len()), (1, 16 * 8 * 4));
    let got: RawArray<f32> = r.read_subset(&[0..16, 0..8, 5..6]).unwrap();
    assert_eq!(got.as_slice()[0], (5 * 16 * 8) as f32);
    assert_eq!(r.io_stats().reads, 1);
    assert_eq!(r.io_stats().bytes, 16 * 8 * 4);
    // Several whole planes merge into one run too.
    assert_eq!(r.plan(&[0..16, 0..8, 3..9]).unwrap().run_count(), 1);
    // A slab of the first dim: one element per run.
    let slab = r.plan(&[3..4, 0..8, 0..32]).unwrap();
    assert_eq!((slab.run_count(), slab.run_len()), (8 * 32, 4));
    // Whole first dims, partial second: runs of whole columns, merged across dim 0.
    let cols = r.plan(&[0..16, 2..5, 0..32]).unwrap();
    assert_eq!((cols.run_count(), cols.run_len()), (32, 16 * 3 * 4));
    // The whole array is one run.
    assert_eq!(r.plan(&[0..16, 0..8, 0..32]).unwrap().run_count(), 1);
}

#[test]
fn fixed_array_elements_take_ranges_over_the_outer_dims() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pts.ra");
    let pts: Vec<[f64; 3]> = (0..10)
        .map(|i| [f64::from(i), -f64::from(i), 0.5])
        .collect();
    RawArray::from_vec(pts.clone()).write_file(&path).unwrap();
    let r = ArrayReader::open(&path).unwrap();
    assert_eq!(r.header().dims, [3, 10]);
    let got: RawArray<[f64; 3]> = r.read_subset(&[2..5]).unwrap();
    assert_eq!(got.as_slice(), &pts[2..5]);
    // As scalars, the file's own two dims.
    let xs: RawArray<f64> = r.read_subset(&[0..1, 0..10]).unwrap();
    assert_eq!(xs.as_slice(), pts.iter().map(|p| p[0]).collect::<Vec<_>>());
}

#[test]
fn the_trailer_is_found_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ra");
    let t = rawarray_serde::Trailer::new(serde_json::json!({"units": "K"})).unwrap();
    let mut a = DynArray::from_typed(&RawArray::from_vec(vec![1.5f32, 2.5, 3.5]));
    a.set_trailer(&t);
    a.write_file(&path).unwrap();
    for r in [
        ArrayReader::open(&path).unwrap(),
        ArrayReader::open_mapped(&path).unwrap(),
    ] {
        assert_eq!(r.trailer(), Some(&t));
        assert_eq!(r.trailer_error(), None);
        let got: RawArray<f32> = r.read_subset(&[1..3]).unwrap();
        assert_eq!(got.as_slice(), &[2.5, 3.5]);
    }
    // A damaged trailer is reported, and the data is still read.
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 40] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let r = ArrayReader::open(&path).unwrap();
    assert!(r.trailer().is_none());
    assert!(
        r.trailer_error().unwrap().contains("CRC"),
        "{:?}",
        r.trailer_error()
    );
    assert_eq!(r.read_all::<f32>().unwrap().as_slice(), &[1.5, 2.5, 3.5]);
}

/// Bad subsets of a `[4, 3, 2]` array and the dim each error must name.
fn bad_subsets() -> Vec<(Vec<Range<u64>>, Option<usize>)> {
    #[allow(clippy::reversed_empty_ranges)]
    let v = vec![
        (vec![0..4, 0..3], None),
        (vec![0..4, 0..3, 0..2, 0..1], None),
        (vec![], None),
        (vec![0..4, 2..1, 0..2], Some(1)),
        (vec![0..5, 0..3, 0..2], Some(0)),
        (vec![0..4, 0..3, 0..u64::MAX], Some(2)),
        (vec![u64::MAX..u64::MAX, 0..3, 0..2], Some(0)),
        (vec![0..4, u64::MAX - 1..u64::MAX, 0..2], Some(1)),
        (vec![0..4, 0..3, 3..3], Some(2)),
    ];
    v
}

fn check_bad(err: rawarray_serde::Error, dim: Option<usize>, what: &str) {
    match (err.kind(), dim) {
        (ErrorKind::SubsetRank { expected: 3, .. }, None) => {}
        (ErrorKind::SubsetOutOfBounds { dim: d, len, .. }, Some(want)) => {
            assert_eq!(*d, want, "{what}: {err}");
            assert_eq!(*len, [4, 3, 2][want], "{what}: {err}");
            assert!(err.to_string().contains(&format!("dim {want}")), "{err}");
        }
        _ => panic!("{what}: unexpected error {err} for dim {dim:?}"),
    }
}

#[test]
fn bad_subsets_are_errors_naming_the_dim_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.ra");
    RawArray::from_shape_vec(vec![4, 3, 2], (0..24u32).collect())
        .unwrap()
        .write_file(&path)
        .unwrap();
    let z = dir.path().join("z.ra");
    RawArray::from_shape_vec(vec![4, 3, 2], (0..24u32).collect())
        .unwrap()
        .write_file_with(&z, &options(3))
        .unwrap();
    let readers = [
        ArrayReader::open(&path).unwrap(),
        ArrayReader::open_mapped(&path).unwrap(),
        ArrayReader::open(&z).unwrap(),
    ];
    let w = ArrayWriter::open(&path).unwrap();
    for (ranges, dim) in bad_subsets() {
        for r in &readers {
            check_bad(
                r.read_subset::<u32>(&ranges).unwrap_err(),
                dim,
                "read_subset",
            );
            check_bad(r.read_subset_bytes(&ranges).unwrap_err(), dim, "bytes");
            let mut buf = [0u32; 24];
            check_bad(
                r.read_subset_into(&ranges, &mut buf).unwrap_err(),
                dim,
                "into",
            );
        }
        check_bad(
            w.write_subset::<u32>(&ranges, &[]).unwrap_err(),
            dim,
            "write",
        );
    }
    // A buffer of the wrong length, a type that is not the file's.
    let r = &readers[0];
    let mut small = [0u32; 3];
    let err = r
        .read_subset_into(&[0..4, 0..1, 0..1], &mut small)
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ShapeMismatch { .. }),
        "{err}"
    );
    let err = r.read_subset::<f32>(&[0..1, 0..1, 0..1]).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::TypeMismatch { .. }),
        "{err}"
    );
    let err = w.write_subset(&[0..1, 0..1, 0..1], &[1.0f32]).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::TypeMismatch { .. }),
        "{err}"
    );
    let err = w.write_subset(&[0..2, 0..1, 0..1], &[1u32]).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ShapeMismatch { .. }),
        "{err}"
    );
}

/// Headers with every field wrong in turn, and files cut short: every entry point errors or
/// reads what the header says, never panics, never allocates past the file.
fn hostile_files() -> Vec<Vec<u8>> {
    let good = RawArray::from_shape_vec(vec![4, 3, 2], (0..24u32).collect())
        .unwrap()
        .to_bytes();
    let z = {
        let mut v = Vec::new();
        RawArray::from_shape_vec(vec![4, 3, 2], (0..24u32).collect())
            .unwrap()
            .write_to_with(&mut v, &options(2))
            .unwrap();
        v
    };
    let mut files = Vec::new();
    for base in [&good, &z] {
        for cut in [0, 7, 47, 48, 55, 71, base.len() - 1] {
            files.push(base[..cut.min(base.len())].to_vec());
        }
        for word in 1..9 {
            for value in [0, 1, 2, 3, 5, 6, 255, 1 << 20, u64::MAX / 8, u64::MAX] {
                let mut f = base.clone();
                if word * 8 + 8 <= f.len() {
                    f[word * 8..word * 8 + 8].copy_from_slice(&u64::to_le_bytes(value));
                }
                files.push(f);
            }
        }
    }
    // Huge dims whose product is within u64 but far beyond the file.
    let h = Header {
        flags: rawarray_serde::Flags::NONE,
        eltype: rawarray_serde::ElType::Uint,
        elbyte: 1,
        size: 1 << 40,
        dims: vec![1 << 20, 1 << 20],
    };
    files.push(h.encode());
    // A compressed file claiming 255 x its size.
    let mut h2 = h.clone();
    h2.flags = rawarray_serde::Flags::COMPRESSED;
    h2.size = 16;
    h2.dims = vec![16 * 255];
    let mut f = h2.encode();
    f.extend_from_slice(&[0u8; 16]);
    files.push(f);
    files
}

fn full(h: &Header) -> Vec<Range<u64>> {
    h.dims.iter().map(|&d| 0..d).collect()
}

#[test]
fn hostile_headers_through_every_entry_point() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.ra");
    for (i, bytes) in hostile_files().iter().enumerate() {
        std::fs::write(&path, bytes).unwrap();
        for opener in [ArrayReader::open, ArrayReader::open_mapped] {
            if let Ok(r) = opener(&path) {
                let ranges = full(r.header());
                let _ = r.read_subset::<u32>(&ranges);
                let _ = r.read_subset_bytes(&ranges);
                let _ = r.read_subset::<u8>(&ranges);
                if let Some(first) = ranges.first() {
                    let mut one = ranges.clone();
                    one[0] = first.start..first.end.min(1);
                    let _ = r.read_subset_bytes(&one);
                }
            }
        }
        if let Ok(w) = ArrayWriter::open(&path) {
            let ranges = full(w.header());
            let n = w.header().num_elements().min(24) as usize;
            let _ = w.write_subset_bytes(&ranges, &vec![0u8; n]);
        }
        #[cfg(feature = "object_store")]
        store::hostile(bytes, i);
        let _ = i;
    }
}

#[test]
fn the_writer_makes_a_valid_sparse_file_and_refuses_what_it_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.ra");
    let w = ArrayWriter::create::<i16>(&path, &[5, 4, 3]).unwrap();
    // Valid at once: the whole array reads as zeros.
    let zeros: RawArray<i16> = RawArray::read_file(&path).unwrap();
    assert_eq!(zeros.dims(), &[5, 4, 3]);
    assert!(zeros.as_slice().iter().all(|&v| v == 0));
    w.write_subset(&[1..3, 1..2, 2..3], &[7i16, 8]).unwrap();
    // Valid in the middle, read by another reader while the writer is open.
    let mid = ArrayReader::open(&path).unwrap();
    assert_eq!(
        mid.read_subset::<i16>(&[0..5, 1..2, 2..3])
            .unwrap()
            .as_slice(),
        &[0, 7, 8, 0, 0]
    );
    w.finish().unwrap();
    // Other processes' writers open it; other kinds of files are refused.
    let w2 = ArrayWriter::open(&path).unwrap();
    assert_eq!(w2.header().dims, [5, 4, 3]);
    for which in 1..4 {
        let p = dir.path().join(format!("o{which}.ra"));
        RawArray::from_vec(vec![1u32, 2])
            .write_file_with(&p, &options(which))
            .unwrap();
        let err = ArrayWriter::open(&p).unwrap_err();
        assert!(
            err.to_string().contains("little-endian plain or chunked"),
            "{err}"
        );
    }
    // Records and fixed arrays: the element's own dims come first in the file.
    let p = dir.path().join("v.ra");
    let w = ArrayWriter::create::<[f32; 3]>(&p, &[4]).unwrap();
    w.write_subset(&[1..3], &[[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]])
        .unwrap();
    w.finish().unwrap();
    let a: RawArray<[f32; 3]> = RawArray::read_file(&p).unwrap();
    assert_eq!(a.as_slice()[2], [4.0, 5.0, 6.0]);
    let p = dir.path().join("r.ra");
    let w = ArrayWriter::create::<Rec>(&p, &[3]).unwrap();
    w.write_subset(&[2..3], &[Rec::make(9)]).unwrap();
    w.finish().unwrap();
    let a: RawArray<Rec> = RawArray::read_file(&p).unwrap();
    assert_eq!(a.as_slice()[2], Rec::make(9));
    assert_eq!(
        a.as_slice()[0],
        Rec {
            a: 0,
            b: [0.0, 0.0],
            c: 0
        }
    );
}

#[test]
fn block_writers_share_the_lock_and_keep_exclusive_writers_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.ra");
    let first = ArrayWriter::create::<u32>(&path, &[16]).unwrap();
    let second = ArrayWriter::open(&path).unwrap();
    first.write_subset(&[0..8], &[1u32; 8]).unwrap();
    second.write_subset(&[8..16], &[2u32; 8]).unwrap();
    let locked = |e: rawarray_serde::Error| {
        assert!(matches!(e.kind(), ErrorKind::Locked { .. }), "{e}");
    };
    // While block writers have it open: no replacement, no record writer, no re-create.
    locked(
        RawArray::from_vec(vec![0u32; 16])
            .write_file(&path)
            .unwrap_err(),
    );
    locked(rawarray_serde::RecordWriter::<u32>::open(&path).unwrap_err());
    locked(ArrayWriter::create::<u32>(&path, &[16]).unwrap_err());
    // Readers take no lock.
    let r = ArrayReader::open(&path).unwrap();
    assert_eq!(
        r.read_all::<u32>().unwrap().as_slice()[..],
        [[1u32; 8], [2; 8]].concat()[..]
    );
    first.finish().unwrap();
    locked(
        RawArray::from_vec(vec![0u32; 16])
            .write_file(&path)
            .unwrap_err(),
    );
    second.finish().unwrap();
    // All finished: the file is free again, and a block writer cannot open it while another
    // writer holds it.
    let w = rawarray_serde::RecordWriter::<u32>::open(&path).unwrap();
    locked(ArrayWriter::open(&path).unwrap_err());
    drop(w);
    RawArray::from_vec(vec![0u32; 16])
        .write_file(&path)
        .unwrap();
}

/// The 3-D array the writer tests write in blocks, and its blocks: a 2 x 2 split of dims 0 and
/// 2, so each block has several runs.
const DIMS: [u64; 3] = [10, 7, 12];

fn value(i: u64) -> f64 {
    i as f64 * 0.25 - 100.0
}

fn block(rank: u64) -> Vec<Range<u64>> {
    let (x, z) = (rank % 2, rank / 2);
    vec![x * 5..x * 5 + 5, 0..7, z * 6..z * 6 + 6]
}

fn whole() -> Vec<f64> {
    (0..DIMS.iter().product()).map(value).collect()
}

fn write_block(path: &Path, rank: u64) {
    let w = ArrayWriter::open(path).unwrap();
    let b = block(rank);
    let values = cut(&DIMS, &whole(), &b);
    w.write_subset(&b, &values).unwrap();
    w.finish().unwrap();
}

/// The child's side of `four_processes_write_disjoint_blocks`: run by the test binary itself.
#[test]
fn child_writer() {
    let Ok(spec) = std::env::var("RAWARRAY_SUBSET_CHILD") else {
        return;
    };
    let (rank, path) = spec.split_once(':').unwrap();
    write_block(Path::new(path), rank.parse().unwrap());
}

#[test]
fn four_processes_write_disjoint_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("field.ra");
    ArrayWriter::create::<f64>(&path, &DIMS)
        .unwrap()
        .finish()
        .unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|rank| {
            std::process::Command::new(&exe)
                .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
                .env(
                    "RAWARRAY_SUBSET_CHILD",
                    format!("{rank}:{}", path.display()),
                )
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let got: RawArray<f64> = RawArray::read_file(&path).unwrap();
    let want = RawArray::from_shape_vec(DIMS.to_vec(), whole()).unwrap();
    assert_eq!(got, want);
    // The same bytes as the array written whole.
    let whole_path = dir.path().join("whole.ra");
    want.write_file(&whole_path).unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        std::fs::read(&whole_path).unwrap()
    );
}

#[test]
fn threads_write_disjoint_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("field.ra");
    let w = ArrayWriter::create::<f64>(&path, &DIMS).unwrap();
    let all = whole();
    std::thread::scope(|s| {
        for rank in 0..4 {
            let (w, all) = (&w, &all);
            s.spawn(move || {
                let b = block(rank);
                w.write_subset(&b, &cut(&DIMS, all, &b)).unwrap();
            });
        }
    });
    w.finish().unwrap();
    let got: RawArray<f64> = RawArray::read_file(&path).unwrap();
    assert_eq!(got.as_slice(), &all[..]);
}

#[cfg(feature = "ndarray")]
mod nd {
    use ndarray::s;

    use super::*;

    #[test]
    fn view_and_slices_agree_with_ndarray() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nd.ra");
        let a =
            RawArray::from_shape_vec(vec![5, 4, 3], (0..60).map(|i| i as f32).collect()).unwrap();
        a.write_file(&path).unwrap();
        let nd = a.clone().into_ndarray().unwrap();
        let r = ArrayReader::open_mapped(&path).unwrap();
        let v = r.view::<f32>().unwrap();
        assert_eq!(v, nd.view());
        assert_eq!(
            r.read_slice::<f32, _>(s![.., .., 2]).unwrap(),
            nd.slice(s![.., .., 2]).to_owned().into_dyn()
        );
        assert_eq!(
            r.read_slice::<f32, _>(s![1..3, -2.., 0..2]).unwrap(),
            nd.slice(s![1..3, -2.., 0..2]).to_owned().into_dyn()
        );
        assert_eq!(
            r.read_slice::<f32, _>(s![4, 1, ..]).unwrap(),
            nd.slice(s![4, 1, ..]).to_owned().into_dyn()
        );
        let e = r.read_slice::<f32, _>(s![.., ..;2, ..]).unwrap_err();
        assert!(e.to_string().contains("dim 1"), "{e}");
        let e = r.read_slice::<f32, _>(s![.., 4, ..]).unwrap_err();
        assert!(e.to_string().contains("dim 1"), "{e}");
        let e = r.read_slice::<f32, _>(s![.., ..]).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::SubsetRank { .. }), "{e}");
        // Views are refused where they cannot borrow the bytes.
        assert!(ArrayReader::open(&path).unwrap().view::<f32>().is_err());
        assert!(r.view::<u32>().is_err());
        let be = dir.path().join("be.ra");
        a.write_file_with(&be, &options(1)).unwrap();
        assert!(ArrayReader::open_mapped(&be)
            .unwrap()
            .view::<f32>()
            .is_err());
    }
}

#[cfg(feature = "object_store")]
mod store {
    use std::fmt;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use futures::stream::BoxStream;
    use object_store::local::LocalFileSystem;
    use object_store::memory::InMemory;
    use object_store::path::Path as StorePath;
    use object_store::{
        GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
        ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult,
    };
    use rawarray_serde::StoreArrayReader;

    use super::*;

    /// A store that counts the requests made of it, the ranges asked and the bytes answered.
    #[derive(Debug)]
    pub struct Counting {
        inner: Arc<dyn ObjectStore>,
        requests: AtomicU64,
        ranges: AtomicU64,
        bytes: AtomicU64,
    }

    impl Counting {
        pub fn new(inner: Arc<dyn ObjectStore>) -> Arc<Counting> {
            Arc::new(Counting {
                inner,
                requests: AtomicU64::new(0),
                ranges: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
            })
        }

        /// (requests, ranges, bytes) so far.
        pub fn counts(&self) -> (u64, u64, u64) {
            (
                self.requests.load(Ordering::SeqCst),
                self.ranges.load(Ordering::SeqCst),
                self.bytes.load(Ordering::SeqCst),
            )
        }
    }

    impl fmt::Display for Counting {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "Counting({})", self.inner)
        }
    }

    #[async_trait::async_trait]
    impl ObjectStore for Counting {
        async fn put_opts(
            &self,
            location: &StorePath,
            payload: PutPayload,
            opts: PutOptions,
        ) -> object_store::Result<PutResult> {
            self.inner.put_opts(location, payload, opts).await
        }

        async fn put_multipart_opts(
            &self,
            location: &StorePath,
            opts: PutMultipartOptions,
        ) -> object_store::Result<Box<dyn MultipartUpload>> {
            self.inner.put_multipart_opts(location, opts).await
        }

        async fn get_opts(
            &self,
            location: &StorePath,
            options: GetOptions,
        ) -> object_store::Result<GetResult> {
            self.requests.fetch_add(1, Ordering::SeqCst);
            self.ranges.fetch_add(1, Ordering::SeqCst);
            let got = self.inner.get_opts(location, options).await?;
            self.bytes
                .fetch_add(got.range.end - got.range.start, Ordering::SeqCst);
            Ok(got)
        }

        async fn get_ranges(
            &self,
            location: &StorePath,
            ranges: &[Range<u64>],
        ) -> object_store::Result<Vec<bytes::Bytes>> {
            self.requests.fetch_add(1, Ordering::SeqCst);
            self.ranges.fetch_add(ranges.len() as u64, Ordering::SeqCst);
            let got = self.inner.get_ranges(location, ranges).await?;
            let n: usize = got.iter().map(bytes::Bytes::len).sum();
            self.bytes.fetch_add(n as u64, Ordering::SeqCst);
            Ok(got)
        }

        fn delete_stream(
            &self,
            locations: BoxStream<'static, object_store::Result<StorePath>>,
        ) -> BoxStream<'static, object_store::Result<StorePath>> {
            self.inner.delete_stream(locations)
        }

        fn list(
            &self,
            prefix: Option<&StorePath>,
        ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
            self.inner.list(prefix)
        }

        async fn list_with_delimiter(
            &self,
            prefix: Option<&StorePath>,
        ) -> object_store::Result<ListResult> {
            self.inner.list_with_delimiter(prefix).await
        }

        async fn copy_opts(
            &self,
            from: &StorePath,
            to: &StorePath,
            options: object_store::CopyOptions,
        ) -> object_store::Result<()> {
            self.inner.copy_opts(from, to, options).await
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    /// A file's bytes in an in-memory store, opened through a counting store.
    pub struct InMemoryFile {
        rt: tokio::runtime::Runtime,
        counting: Arc<Counting>,
        reader: StoreArrayReader,
    }

    impl InMemoryFile {
        pub fn new(bytes: &[u8]) -> InMemoryFile {
            let rt = runtime();
            let mem: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
            let path = StorePath::from("a/b.ra");
            rt.block_on(mem.put(&path, PutPayload::from(bytes.to_vec())))
                .unwrap();
            let counting = Counting::new(mem);
            let reader = rt
                .block_on(StoreArrayReader::open(counting.clone(), path))
                .unwrap();
            let (requests, _, _) = counting.counts();
            assert!(requests <= 2, "open made {requests} requests");
            InMemoryFile {
                rt,
                counting,
                reader,
            }
        }

        /// The block through the store equals `want`; a block costs at most one request per
        /// merged run (one for a compressed file's section, once) and brings its own bytes
        /// and at most the gaps between them.
        pub fn check<T: Make>(&self, ranges: &[Range<u64>], want: &[T], plan: &SubsetPlan) {
            let before = self.counting.counts();
            let got: RawArray<T> = self.rt.block_on(self.reader.read_subset(ranges)).unwrap();
            assert_eq!(got.as_slice(), want, "store: {ranges:?}");
            let after = self.counting.counts();
            let (requests, asked, bytes) =
                (after.0 - before.0, after.1 - before.1, after.2 - before.2);
            if self.reader.header().is_compressed() {
                assert!(requests <= 1, "{requests} requests for a compressed file");
            } else {
                assert!(
                    requests <= plan.run_count(),
                    "{requests} > {} runs",
                    plan.run_count()
                );
                assert!(asked <= plan.run_count());
                // Near runs share a request, whose gaps stream past: at least the block's
                // bytes, at most its span.
                let span = match (plan.runs().next(), plan.runs().last()) {
                    (Some(first), Some(last)) => last.end - first.start,
                    _ => 0,
                };
                assert!(bytes >= plan.bytes(), "{bytes} bytes fetched");
                assert!(bytes <= span, "{bytes} bytes fetched, span {span}");
            }
            let mut buf: Vec<T> = (0..want.len() as u64).map(T::make).collect();
            self.rt
                .block_on(self.reader.read_subset_into(ranges, &mut buf))
                .unwrap();
            assert_eq!(buf, want);
            let (h, _) = self
                .rt
                .block_on(self.reader.read_subset_bytes(ranges))
                .unwrap();
            assert_eq!(h.dims, plan.dims());
        }
    }

    /// A hostile file through the store: errors, no panic.
    pub fn hostile(bytes: &[u8], i: usize) {
        let rt = runtime();
        let mem: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = StorePath::from(format!("h{i}.ra"));
        rt.block_on(mem.put(&path, PutPayload::from(bytes.to_vec())))
            .unwrap();
        if let Ok(r) = rt.block_on(StoreArrayReader::open(mem, path)) {
            let ranges = full(r.header());
            let _ = rt.block_on(r.read_subset::<u32>(&ranges));
            let _ = rt.block_on(r.read_subset_bytes(&ranges));
            for (bad, dim) in bad_subsets() {
                if r.header().dims == [4, 3, 2] && r.header().eltype == rawarray_serde::ElType::Uint
                {
                    check_bad(
                        rt.block_on(r.read_subset_bytes(&bad)).unwrap_err(),
                        dim,
                        "store",
                    );
                }
            }
        }
    }

    fn big_file_with_trailer(dir: &Path) -> (std::path::PathBuf, RawArray<f32>) {
        let dims = vec![64u64, 32, 40];
        let n: u64 = dims.iter().product();
        let a = RawArray::from_shape_vec(dims, (0..n).map(|i| i as f32).collect()).unwrap();
        let mut d = DynArray::from_typed(&a);
        d.set_trailer(&rawarray_serde::Trailer::new(serde_json::json!({"dt": 0.5})).unwrap());
        let path = dir.join("big.ra");
        d.write_file(&path).unwrap();
        (path, a)
    }

    #[test]
    fn open_costs_two_requests_and_blocks_one_per_run() {
        let rt = runtime();
        let dir = tempfile::tempdir().unwrap();
        let (path, a) = big_file_with_trailer(dir.path());
        let local: Arc<dyn ObjectStore> =
            Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let mem: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        rt.block_on(mem.put(
            &StorePath::from("big.ra"),
            PutPayload::from(std::fs::read(&path).unwrap()),
        ))
        .unwrap();
        for backend in [local, mem] {
            let counting = Counting::new(backend);
            let r = rt
                .block_on(ArrayReader::open_store(counting.clone(), "big.ra"))
                .unwrap();
            // The header by one ranged request, the trailer by one suffix request.
            assert_eq!(counting.counts().0, 2);
            assert_eq!(r.trailer().unwrap().params["dt"], 0.5);
            let whole_bytes = a.len() as u64 * 4;
            // A plane: one run, one request, its own bytes.
            let before = counting.counts();
            let plane: RawArray<f32> = rt.block_on(r.read_subset(&[0..64, 0..32, 7..8])).unwrap();
            assert_eq!(
                plane.as_slice(),
                cut(a.dims(), a.as_slice(), &[0..64, 0..32, 7..8])
            );
            let after = counting.counts();
            assert_eq!((after.0 - before.0, after.2 - before.2), (1, 64 * 32 * 4));
            // A slab: 32 x 40 runs of 4 bytes 256 apart, fetched by one request over their span.
            let before = counting.counts();
            let slab: RawArray<f32> = rt.block_on(r.read_subset(&[5..6, 0..32, 0..40])).unwrap();
            assert_eq!(
                slab.as_slice(),
                cut(a.dims(), a.as_slice(), &[5..6, 0..32, 0..40])
            );
            let after = counting.counts();
            assert_eq!(after.0 - before.0, 1);
            assert_eq!(after.1 - before.1, 1);
            assert_eq!(after.2 - before.2, (32 * 40 - 1) * 256 + 4);
            // The whole array: streamed by one request.
            let before = counting.counts();
            let all: RawArray<f32> = rt.block_on(r.read_all()).unwrap();
            assert_eq!(all, a);
            let after = counting.counts();
            assert_eq!((after.0 - before.0, after.2 - before.2), (1, whole_bytes));
        }
    }

    #[test]
    fn a_small_file_opens_with_one_request_and_errors_are_io_errors() {
        let rt = runtime();
        let mem: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let bytes = RawArray::from_vec(vec![1u8, 2, 3]).to_bytes();
        rt.block_on(mem.put(&StorePath::from("s.ra"), PutPayload::from(bytes)))
            .unwrap();
        let counting = Counting::new(mem.clone());
        let r = rt
            .block_on(StoreArrayReader::open(counting.clone(), "s.ra"))
            .unwrap();
        assert_eq!(counting.counts().0, 1);
        assert_eq!(r.object_len(), 48 + 8 + 3);
        let err = rt
            .block_on(StoreArrayReader::open(mem.clone(), "missing.ra"))
            .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Io(e) if e.kind() == std::io::ErrorKind::NotFound),
            "{err}"
        );
        rt.block_on(mem.put(&StorePath::from("empty.ra"), PutPayload::from(Vec::new())))
            .unwrap();
        let err = rt
            .block_on(StoreArrayReader::open(mem.clone(), "empty.ra"))
            .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::HeaderTruncated { .. }),
            "{err}"
        );
    }

    /// The futures can be spawned on a multi-threaded runtime.
    #[test]
    fn the_futures_are_send() {
        fn send<T: Send>(_: &T) {}
        let rt = runtime();
        let mem: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let bytes = RawArray::from_vec(vec![1u8, 2, 3]).to_bytes();
        rt.block_on(mem.put(&StorePath::from("s.ra"), PutPayload::from(bytes)))
            .unwrap();
        let open = StoreArrayReader::open(mem, "s.ra");
        send(&open);
        let r = rt.block_on(open).unwrap();
        let ranges = [0..2];
        let read = r.read_subset::<u8>(&ranges);
        send(&read);
        assert_eq!(rt.block_on(read).unwrap().as_slice(), &[1, 2]);
        let mut buf = [0u8; 3];
        let into = r.read_subset_into(&[0..3], &mut buf);
        send(&into);
        rt.block_on(into).unwrap();
        send(&r.read_subset_bytes(&ranges));
        send(&r.read_all::<u8>());
    }

    #[test]
    fn a_large_trailer_costs_one_more_request() {
        let rt = runtime();
        let a = RawArray::from_vec((0..70_000u32).collect());
        let mut d = DynArray::from_typed(&a);
        let big = "x".repeat(100_000);
        d.set_trailer(&rawarray_serde::Trailer::new(serde_json::json!({ "notes": big })).unwrap());
        let mem: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        rt.block_on(mem.put(
            &StorePath::from("t.ra"),
            PutPayload::from(d.to_bytes().unwrap()),
        ))
        .unwrap();
        let counting = Counting::new(mem);
        let r = rt
            .block_on(StoreArrayReader::open(counting.clone(), "t.ra"))
            .unwrap();
        assert_eq!(
            r.trailer().unwrap().params["notes"].as_str().unwrap().len(),
            100_000
        );
        assert_eq!(counting.counts().0, 3);
    }
}
