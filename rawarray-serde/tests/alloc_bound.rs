//! No read allocates more than its input justifies, however large the header's claims.
//!
//! A counting global allocator (this test binary only) records, per thread, the peak of live
//! heap bytes while one read runs, the value it returns included. For an input of `N` bytes:
//!
//! | reader | peak allowed |
//! |---|---|
//! | slices and files: `from_bytes`, `read_file`, `from_slice`, `Trailer`, `RecordReader::open`, `recover` | `N + 64 KiB` |
//! | `from_slice` of big-endian data | `2N + 64 KiB` (the data is swapped once, in a copy: swapping scalar by scalar would slow every little-endian read) |
//! | `from_file` (a stream whose length the file confirms) | `N + 128 KiB` (the value, and a window of 64 KiB); `2N + 128 KiB` for big-endian data (swapped whole, as `from_slice` does, then copied into the value) |
//! | streams of unknown length: `read_from`, `from_reader` | `2N + 64 KiB` (the buffer, or `from_reader`'s value, grows by doubling from 32 or 64 KiB as bytes arrive; `from_reader` reads through a window of 64 KiB and holds no copy of the data) |
//! | LZ4-compressed inputs | the above plus `2 x (255 N + 24)`: LZ4 expands at most 255x, and the plain block and the value built from it can both be alive |
//!
//! The bound is for values that hold their data (arrays, flat sequences, strings): a nested
//! `Vec<Vec<_>>` costs 24 bytes per inner sequence on top, and a mistyped serde read may
//! preallocate serde's "cautious" capacity (at most 1 MiB) before its first element fails.
//! Memory maps (`RecordReader`) are the file itself, not heap, and are not counted.

use std::path::{Path, PathBuf};

use num_complex::Complex;
use proptest::prelude::*;
use rawarray_serde::{
    from_file, from_reader, from_slice, recover, DynArray, ErrorKind, RawArray, RecordReader,
    Trailer, WriteOptions,
};

mod common;
use common::Trickle;

/// The records of the serde issue.
#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

#[global_allocator]
static ALLOC: common::counting::Counting = common::counting::Counting;

use common::counting::peak;

const SLACK: usize = 64 << 10;
const MAGIC: u64 = 0x7961727261776172;

fn file(words: &[u64], data: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    out.extend_from_slice(data);
    out
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Slice,
    /// `from_slice`: a slice reader that swaps big-endian data in a copy.
    Serde,
    Stream,
    /// `from_file`: the value, and the window it is read through.
    File,
}

/// What a reader may allocate for `bytes` (see the module docs).
fn bound(kind: Kind, bytes: &[u8]) -> usize {
    let n = bytes.len();
    let big_endian = bytes.len() >= 16 && bytes[8] & 1 != 0;
    let base = match kind {
        Kind::Slice => n,
        Kind::Serde if big_endian => 2 * n,
        Kind::Serde => n,
        Kind::Stream => 2 * n,
        Kind::File if big_endian => 2 * n + (64 << 10),
        Kind::File => n + (64 << 10),
    };
    let compressed = bytes.len() >= 16 && bytes[8] & 2 != 0;
    let lz4 = if compressed { 2 * (255 * n + 24) } else { 0 };
    base + lz4 + SLACK
}

/// A folder on tmpfs where there is one: `recover` syncs, which a disk makes slow.
fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

type Reader<'a> = (&'static str, Kind, Box<dyn Fn() + 'a>);

/// Every reader of the library on `bytes` (and on `path`, a file holding them).
fn readers<'a>(bytes: &'a [u8], path: &'a Path, copy: &'a Path) -> Vec<Reader<'a>> {
    use Kind::*;
    fn ok<T, E>(_: Result<T, E>) {}
    vec![
        (
            "DynArray::from_bytes",
            Slice,
            Box::new(move || ok(DynArray::from_bytes(bytes))),
        ),
        (
            "DynArray::read_file",
            Slice,
            Box::new(move || ok(DynArray::read_file(path))),
        ),
        (
            "DynArray::read_from",
            Stream,
            Box::new(move || ok(DynArray::read_from(bytes))),
        ),
        (
            "RawArray<f32>::from_bytes",
            Slice,
            Box::new(move || ok(RawArray::<f32>::from_bytes(bytes))),
        ),
        (
            "RawArray<f32>::read_file",
            Slice,
            Box::new(move || ok(RawArray::<f32>::read_file(path))),
        ),
        (
            "RawArray<f32>::read_from",
            Stream,
            Box::new(move || ok(RawArray::<f32>::read_from(bytes))),
        ),
        (
            "RawArray<u8>::from_bytes",
            Slice,
            Box::new(move || ok(RawArray::<u8>::from_bytes(bytes))),
        ),
        (
            "RawArray<u8>::read_from",
            Stream,
            Box::new(move || ok(RawArray::<u8>::read_from(bytes))),
        ),
        (
            "RawArray<bool>::read_file",
            Slice,
            Box::new(move || ok(RawArray::<bool>::read_file(path))),
        ),
        (
            "RawArray<bool>::read_from",
            Stream,
            Box::new(move || ok(RawArray::<bool>::read_from(bytes))),
        ),
        (
            "RawArray<[u16; 3]>::from_bytes",
            Slice,
            Box::new(move || ok(RawArray::<[u16; 3]>::from_bytes(bytes))),
        ),
        (
            "RawArray<Complex<f64>>::read_from",
            Stream,
            Box::new(move || ok(RawArray::<Complex<f64>>::read_from(bytes))),
        ),
        (
            "from_slice::<Vec<f32>>",
            Serde,
            Box::new(move || ok(from_slice::<Vec<f32>>(bytes))),
        ),
        (
            "from_slice::<Vec<u8>>",
            Serde,
            Box::new(move || ok(from_slice::<Vec<u8>>(bytes))),
        ),
        (
            "from_slice::<String>",
            Serde,
            Box::new(move || ok(from_slice::<String>(bytes))),
        ),
        (
            "from_slice::<f64>",
            Serde,
            Box::new(move || ok(from_slice::<f64>(bytes))),
        ),
        (
            "from_reader::<Vec<f32>>",
            Stream,
            Box::new(move || ok(from_reader::<Vec<f32>>(bytes))),
        ),
        (
            "from_reader::<Vec<f64>> (1-7 bytes a read)",
            Stream,
            Box::new(move || ok(from_reader::<Vec<f64>>(Trickle { bytes, phase: 0 }))),
        ),
        (
            "from_reader::<Vec<Foo>>",
            Stream,
            Box::new(move || ok(from_reader::<Vec<Foo>>(bytes))),
        ),
        (
            "from_reader::<Vec<[u16; 3]>>",
            Stream,
            Box::new(move || ok(from_reader::<Vec<[u16; 3]>>(bytes))),
        ),
        (
            "from_reader::<String>",
            Stream,
            Box::new(move || ok(from_reader::<String>(bytes))),
        ),
        (
            "from_reader::<Vec<Complex<f32>>>",
            Stream,
            Box::new(move || ok(from_reader::<Vec<Complex<f32>>>(bytes))),
        ),
        (
            "from_file::<Vec<f32>>",
            File,
            Box::new(move || ok(from_file::<Vec<f32>>(path))),
        ),
        (
            "from_file::<Vec<Foo>>",
            File,
            Box::new(move || ok(from_file::<Vec<Foo>>(path))),
        ),
        (
            "Trailer::from_file_bytes",
            Slice,
            Box::new(move || ok(Trailer::from_file_bytes(bytes))),
        ),
        (
            "Trailer::from_trailing_bytes",
            Slice,
            Box::new(move || ok(Trailer::from_trailing_bytes(bytes))),
        ),
        (
            "Trailer::read_file",
            Slice,
            Box::new(move || ok(Trailer::read_file(path))),
        ),
        (
            "RecordReader<f32>::open",
            Slice,
            Box::new(move || ok(RecordReader::<f32>::open(path))),
        ),
        (
            "recover (a copy)",
            Slice,
            Box::new(move || {
                std::fs::copy(path, copy).unwrap();
                ok(recover(copy));
            }),
        ),
    ]
}

/// Every reader's peak on `bytes`, each checked against its bound; returns the largest peak
/// and which reader it was.
fn check_all(what: &str, bytes: &[u8]) -> (usize, &'static str) {
    let dir = scratch_dir();
    let path: PathBuf = dir.path().join("in.ra");
    let copy = dir.path().join("copy.ra");
    std::fs::write(&path, bytes).unwrap();
    let mut worst = (0, "");
    for (name, kind, read) in readers(bytes, &path, &copy) {
        let used = peak(&read);
        let allowed = bound(kind, bytes);
        assert!(
            used <= allowed,
            "{what}: {name} allocated {used} bytes at its peak for an input of {} bytes (allowed {allowed})",
            bytes.len()
        );
        worst = worst.max((used, name));
    }
    worst
}

/// The allocator sees what a read allocates: a valid 1 MiB read holds at least its data.
#[test]
fn the_counter_sees_the_value_read() {
    let a = RawArray::from_vec(vec![1.5f32; 1 << 18]);
    let bytes = a.to_bytes();
    let used = peak(|| RawArray::<f32>::from_bytes(&bytes).unwrap());
    assert!((1 << 20..=(1 << 20) + 4096).contains(&used), "{used}");
    assert_eq!(peak(|| Vec::<u8>::with_capacity(12345)), 12345);
}

/// Headers that claim what the input does not hold: 2^62-byte data, 2^40 dims, dims whose
/// product is 2^62 with one-byte elements, 2^40 compressed bytes, a compressed block at the
/// 255x limit, no data under 2^40 items, a 2^40-byte record, trailers claiming 64 MiB and
/// 2^64 bytes of JSON.
#[test]
fn hostile_claims_cost_no_more_than_the_input() {
    let pad = |mut b: Vec<u8>, len: usize| {
        b.resize(len, 0xAB);
        b
    };
    let trailer_claim = |json_len: u64| {
        let mut b = RawArray::from_vec(vec![1u8; 4]).to_bytes();
        let mut block = Trailer::new(1).unwrap().encode_block(0);
        let k = block.len();
        block[k - 16..k - 8].copy_from_slice(&json_len.to_le_bytes());
        block[8..16].copy_from_slice(&json_len.to_le_bytes());
        b.extend(block);
        b
    };
    let at_ratio_limit = {
        // 100 compressed bytes claiming 255 x 100 plain bytes: allowed, and it must fail (the
        // block is garbage) without costing more than 255 N.
        file(&[MAGIC, 2, 2, 1, 100, 1, 25_500], &[0x1F; 100])
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "size 2^62",
            pad(file(&[MAGIC, 0, 3, 4, 1 << 62, 1, 1 << 60], &[]), 100),
        ),
        (
            "ndims 2^40",
            pad(file(&[MAGIC, 0, 3, 4, 4, 1 << 40], &[]), 100),
        ),
        (
            "ndims 1024, 100 bytes",
            pad(file(&[MAGIC, 0, 3, 4, 4, 1024], &[]), 100),
        ),
        (
            "u8 dims 2^31 x 2^31",
            pad(
                file(&[MAGIC, 0, 2, 1, 1 << 62, 2, 1 << 31, 1 << 31], &[]),
                100,
            ),
        ),
        (
            "f32 dims 2^20 x 2^20 x 2^20",
            pad(
                file(
                    &[MAGIC, 0, 3, 4, 1 << 62, 3, 1 << 20, 1 << 20, 1 << 20],
                    &[],
                ),
                200,
            ),
        ),
        (
            "LZ4 size 2^40",
            pad(file(&[MAGIC, 2, 3, 4, 1 << 40, 1, 1 << 40], &[]), 100),
        ),
        (
            "LZ4 big-endian size 2^40",
            pad(file(&[MAGIC, 3, 3, 4, 1 << 40, 1, 1 << 40], &[]), 100),
        ),
        ("LZ4 at the 255x limit", at_ratio_limit),
        (
            "dims [0, 2^40], no data",
            file(&[MAGIC, 0, 3, 4, 0, 2, 0, 1 << 40], &[]),
        ),
        (
            "u8 dims [0, 2^62], no data",
            file(&[MAGIC, 0, 2, 1, 0, 2, 0, 1 << 62], &[]),
        ),
        (
            "user elbyte 2^40",
            pad(file(&[MAGIC, 0, 0, 1 << 40, 1 << 40, 1, 1], &[]), 100),
        ),
        ("trailer JSON 64 MiB", trailer_claim(64 << 20)),
        ("trailer JSON 2^64", trailer_claim(u64::MAX)),
    ];
    let mut worst = (0, "", "");
    for (what, bytes) in &cases {
        let (used, reader) = check_all(what, bytes);
        worst = worst.max((used, what, reader));
    }
    println!(
        "worst hostile claim: {} ({} bytes at the peak, by {})",
        worst.1, worst.0, worst.2
    );
}

/// A 1 MiB header of 131 000 dims is refused from its fixed part: nothing of its size is read.
#[test]
fn a_megabyte_of_dims_costs_nothing() {
    let mut words = vec![MAGIC, 0, 2, 1, 1, 131_000];
    words.extend(std::iter::repeat_n(1, 131_000));
    let bytes = file(&words, &[7]);
    let dir = scratch_dir();
    let (path, copy) = (dir.path().join("in.ra"), dir.path().join("copy.ra"));
    std::fs::write(&path, &bytes).unwrap();
    for (name, _, read) in readers(&bytes, &path, &copy) {
        let used = peak(&read);
        assert!(used <= SLACK, "{name}: {used}");
    }
}

/// Valid files of 1 MiB of data, read every way: little- and big-endian, bytes, bools and
/// LZ4; and a stream that holds 1 MiB of a claimed 4 TiB.
#[test]
fn valid_megabyte_files_cost_their_size() {
    let f32s = RawArray::from_vec((0..1 << 18).map(|i| i as f32).collect::<Vec<_>>());
    let mut be = Vec::new();
    f32s.write_to_with(&mut be, &WriteOptions::new().big_endian(true))
        .unwrap();
    let mut z = Vec::new();
    RawArray::from_vec(vec![0.25f32; 1 << 18])
        .write_to_with(&mut z, &WriteOptions::new().compress(true))
        .unwrap();
    let text = rawarray_serde::to_vec(&"x".repeat(1 << 20)).unwrap();
    let bools = RawArray::from_vec(vec![true; 1 << 20]).to_bytes();
    let mut lying = file(&[MAGIC, 0, 3, 4, 1 << 42, 1, 1 << 40], &[]);
    lying.resize(1 << 20, 0);
    for (what, bytes) in [
        ("f32", f32s.to_bytes()),
        ("f32 big-endian", be),
        ("f32 LZ4", z),
        ("string", text),
        ("bool", bools),
        ("stream claiming 2^42 bytes", lying),
    ] {
        check_all(what, &bytes);
    }
}

fn arb_header_word() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..8,
        0u64..100_000,
        Just(1 << 31),
        Just(1 << 40),
        Just(1 << 62),
        Just(u64::MAX),
        any::<u64>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random headers (any flags, eltype, elbyte, size, up to 4 dims) over random data of up
    /// to 4 KiB: every reader stays within its bound.
    #[test]
    fn random_headers_stay_within_the_bound(
        flags in 0u64..4,
        eltype in 0u64..6,
        elbyte in prop_oneof![Just(1u64), Just(2), Just(4), Just(8), Just(16), arb_header_word()],
        size in arb_header_word(),
        dims in proptest::collection::vec(arb_header_word(), 0..4),
        data in proptest::collection::vec(any::<u8>(), 0..4096),
    ) {
        let mut words = vec![MAGIC, flags, eltype, elbyte, size, dims.len() as u64];
        words.extend(&dims);
        check_all("random header", &file(&words, &data));
    }
}

/// A stream whose header claims 2^40 elements and that holds 1 MiB of them: `from_reader` fails
/// naming the bytes that arrived, having allocated for no more than twice those.
#[test]
fn a_stream_claiming_a_terabyte_costs_what_it_holds() {
    let held = 1usize << 20;
    for elbyte in [4u64, 80] {
        let eltype = if elbyte == 4 { 3 } else { 0 };
        let mut bytes = file(&[MAGIC, 0, eltype, elbyte, elbyte << 40, 1, 1 << 40], &[]);
        bytes.resize(bytes.len() + held, 0);
        let mut err = None;
        let used = peak(|| {
            err = match elbyte {
                4 => from_reader::<Vec<f32>>(&bytes[..]).err(),
                _ => from_reader::<Vec<Foo>>(&bytes[..]).err(),
            };
        });
        let err = err.expect("a read of 1 MiB claiming 2^40 elements fails");
        match err.kind() {
            ErrorKind::Truncated { expected, found } => {
                assert_eq!((*expected, *found), (elbyte << 40, held as u64), "{err}");
            }
            other => panic!("elbyte {elbyte}: expected Truncated, got {other:?}"),
        }
        assert!(
            used <= 2 * held + SLACK,
            "elbyte {elbyte}: {used} bytes allocated for a stream of 1 MiB"
        );
    }
}

/// `Section::for_each_piece` (what `ra cat --head` and typed reads of non-POD elements stream
/// through) holds about one piece of a chunked section, however large its leading dims: it
/// read a slab of whole planes (every dim but the last), 4 GiB here for the 64 KiB asked.
#[test]
fn pieces_of_a_chunked_section_hold_a_piece_not_a_plane() {
    use rawarray_serde::{ArrayReader, ArrayWriter};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.ra");
    // dims [2^32, 2] of u8: a plane of 4 GiB; only the first chunk (2^20 x 1) is written.
    let w = ArrayWriter::options()
        .array::<u8>(&[1 << 32, 2])
        .storage(WriteOptions::new().chunks(vec![1 << 20, 1]))
        .create(&path)
        .unwrap();
    let values: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    w.write_subset(&[0..1 << 20, 0..1], &values).unwrap();
    w.finish().unwrap();
    let r = ArrayReader::open(&path).unwrap();
    let mut got = Vec::new();
    let mut calls = 0;
    let bytes = peak(|| {
        r.section()
            .for_each_piece(1 << 16, 4096, |piece| {
                got.extend_from_slice(piece);
                calls += 1;
                std::ops::ControlFlow::Continue(())
            })
            .unwrap();
    });
    assert_eq!(got, values[..1 << 16]);
    assert_eq!(calls, 16, "pieces of 4096 bytes");
    // A piece, the decoded blocks the reader keeps, and what `got` grew to: not a plane.
    assert!(bytes < 8 << 20, "peak {bytes} bytes");
}

/// `from_file` of a compressed file decodes into the buffer of the plain file and swaps
/// big-endian values there, in place: the buffer and the value, never a third copy (a
/// big-endian chunked or LZ4 file once cost the buffer, a swapped copy of it, and the value).
#[test]
fn from_file_of_a_compressed_big_endian_file_holds_two_copies_at_most() {
    let dir = scratch_dir();
    let values: Vec<f32> = (0..1 << 18).map(|i| (i % 977) as f32 * 0.5).collect();
    let plain = values.len() * 4;
    let a = RawArray::from_vec(values.clone());
    for (name, opts) in [
        ("lz4", WriteOptions::new().compress(true).big_endian(true)),
        (
            "zstd",
            WriteOptions::new()
                .codec(rawarray_serde::Codec::Zstd)
                .big_endian(true),
        ),
    ] {
        let path = dir.path().join(format!("{name}.ra"));
        a.write_file_with(&path, &opts).unwrap();
        let head = std::fs::read(&path).unwrap();
        assert_eq!(head[8] & 1, 1, "{name}: written big-endian");
        let back = from_file::<Vec<f32>>(&path).unwrap();
        assert_eq!(back, values, "{name}");
        let used = peak(|| from_file::<Vec<f32>>(&path).unwrap());
        assert!(
            used <= 2 * plain + (256 << 10),
            "{name}: from_file held {used} bytes for {plain} bytes of values"
        );
    }
}
