//! The checks behind the fuzz targets: one function per entry point of `rawarray-serde` that
//! reads bytes, shared by the targets in `fuzz_targets/` and by the seed writer.
//!
//! Each function reads its input every way the library offers (a slice, a stream that hands
//! out a few bytes per `read`, a file) and checks what libFuzzer cannot see by itself: the ways
//! agree, and a value that reads back writes out and reads back the same. A panic, a hang
//! (`-timeout`) or memory past `-rss_limit_mb` is a finding.

use std::fmt::Debug;
use std::io::{self, Read};
use std::mem::discriminant;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use num_complex::Complex;
use rawarray_serde::section::Storage;
use rawarray_serde::{
    from_reader, from_slice, recover as recover_file, Durability, DynArray, ElType, Element,
    ErrorKind, Header, RaRecord, RawArray, RecordOptions, RecordReader, Trailer, WriteOptions,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A derived record with a `bool` (so it is not plain old data: every byte is checked), a fixed
/// array, a complex and an f16, readable both as a typed element and through serde.
#[derive(RaRecord, Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Particle {
    /// An id.
    pub id: u32,
    /// Must be 0 or 1 in the file.
    pub alive: bool,
    /// A position.
    pub pos: [f32; 3],
    /// A complex amplitude.
    pub z: Complex<f64>,
    /// A half-precision weight.
    pub h: half::f16,
}

/// A stream that hands out a few bytes per `read`, to exercise partial reads.
pub struct Trickle<'a> {
    bytes: &'a [u8],
    reads: usize,
}

impl<'a> Trickle<'a> {
    /// A stream over `bytes` whose reads hand out 1 to 7 bytes, irregularly, in a cycle whose
    /// phase is taken from the input's length.
    pub fn new(bytes: &'a [u8]) -> Trickle<'a> {
        Trickle {
            bytes,
            reads: bytes.len(),
        }
    }
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        let step = 1 + (self.reads * 5 + self.reads / 3) % 7;
        let n = step.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

/// A file path in a private folder (on tmpfs when there is one), overwritten by each run.
fn scratch(name: &str) -> PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            if let Ok(d) = tempfile::tempdir_in(shm) {
                return d;
            }
        }
        tempfile::tempdir().expect("a temporary folder")
    });
    dir.path().join(name)
}

fn write_scratch(name: &str, data: &[u8]) -> PathBuf {
    let path = scratch(name);
    std::fs::write(&path, data).expect("write the input to a temporary file");
    path
}

/// Two results of reading the same bytes two ways: both values equal (by `key`), or both
/// errors of the same kind.
fn agree<T, K: PartialEq + Debug>(
    what: &str,
    a: &rawarray_serde::Result<T>,
    b: &rawarray_serde::Result<T>,
    key: impl Fn(&T) -> K,
) {
    match (a, b) {
        (Ok(x), Ok(y)) => assert_eq!(key(x), key(y), "{what}: the two reads differ"),
        (Err(x), Err(y)) => assert_eq!(
            discriminant(x.kind()),
            discriminant(y.kind()),
            "{what}: different errors: {x} / {y}"
        ),
        (Ok(_), Err(e)) | (Err(e), Ok(_)) => panic!("{what}: one read failed, one did not: {e}"),
    }
}

/// As [`agree`], for a serde read from a slice (`a`) and from a stream (`b`): where the data
/// section is cut short, a slice refuses it before reading, and a stream fails where its bytes
/// run out, which may come after another error (a mistyped scalar); both fail.
fn serde_agree<T, K: PartialEq + Debug>(
    what: &str,
    a: &rawarray_serde::Result<T>,
    b: &rawarray_serde::Result<T>,
    key: impl Fn(&T) -> K,
) {
    if let Err(e) = a {
        if matches!(e.kind(), ErrorKind::Truncated { .. }) {
            assert!(
                b.is_err(),
                "{what}: a slice cut short is refused, the stream read it"
            );
            return;
        }
    }
    agree(what, a, b, key)
}

/// `from_file` on `data` written to a scratch file.
fn from_file_of<T: DeserializeOwned>(data: &[u8]) -> rawarray_serde::Result<T> {
    let path = scratch("serde.ra");
    std::fs::write(&path, data).expect("scratch file");
    rawarray_serde::from_file(&path)
}

/// `Header::decode` and `Header::read_from` agree, and a decoded header encodes to the bytes
/// it was decoded from.
pub fn header(data: &[u8]) {
    let a = Header::decode(data);
    let b = Header::read_from(&mut Trickle::new(data));
    agree("header", &a, &b, Clone::clone);
    match a {
        Ok(h) => {
            let bytes = h.encode();
            assert_eq!(bytes[..], data[..bytes.len()], "encode(decode(bytes))");
            assert_eq!(h.encoded_len(), bytes.len());
            let _ = (
                h.type_label(),
                h.numpy_dtype(),
                h.check_input_len(data.len() as u64),
            );
            if Storage::of(&h) != Storage::Lz4Whole {
                assert_eq!(h.size, h.data_len());
            }
        }
        Err(e) => {
            let _ = (e.to_string(), e.category());
        }
    }
}

/// The dynamic reader: slice, stream and file agree; a value writes back to bytes that read
/// back the same, compressed or not.
pub fn dynamic(data: &[u8]) {
    let a = DynArray::from_bytes(data);
    let b = DynArray::read_from(Trickle::new(data));
    agree("DynArray from_bytes/read_from", &a, &b, Clone::clone);
    let path = write_scratch("dynamic.ra", data);
    let c = DynArray::read_file(&path);
    agree("DynArray from_bytes/read_file", &a, &c, Clone::clone);
    let Ok(d) = a else { return };
    let h = d.header();
    assert!(Storage::of(&h) != Storage::Lz4Whole);
    assert_eq!(h.size, d.data().len() as u64);
    assert_eq!(h.data_len(), h.size);
    let _ = d.trailer();
    if h.is_big_endian() {
        // Only user-defined elements stay big-endian; their byte order cannot be changed.
        assert_eq!(h.eltype, ElType::User);
        assert!(d.to_bytes().is_err());
        return;
    }
    let bytes = d.to_bytes().expect("a little-endian DynArray writes");
    assert_eq!(DynArray::from_bytes(&bytes).expect("reads back"), d);
    if d.data().len() <= 1 << 16 {
        for opts in [
            WriteOptions::new().compress(true),
            WriteOptions::new().big_endian(true),
        ] {
            let mut out = Vec::new();
            if h.eltype == ElType::User && opts.is_big_endian() {
                assert!(d.write_to_with(&mut out, &opts).is_err());
                continue;
            }
            d.write_to_with(&mut out, &opts).expect("writes");
            assert_eq!(DynArray::from_bytes(&out).expect("reads back"), d);
        }
    }
}

/// Typed reads of several element types: slice, stream and file agree, and agree with the
/// dynamic reader's `to_typed`.
pub fn typed(data: &[u8]) {
    let path = write_scratch("typed.ra", data);
    let dynamic = DynArray::from_bytes(data).ok();
    typed_one::<f32>(data, &path, dynamic.as_ref());
    typed_one::<Complex<f64>>(data, &path, dynamic.as_ref());
    typed_one::<[u16; 3]>(data, &path, dynamic.as_ref());
    typed_one::<bool>(data, &path, dynamic.as_ref());
    typed_one::<Particle>(data, &path, dynamic.as_ref());
    typed_one::<half::bf16>(data, &path, dynamic.as_ref());
}

fn typed_one<T: Element>(data: &[u8], path: &Path, dynamic: Option<&DynArray>) {
    let key = |a: &RawArray<T>| (a.dims().to_vec(), a.to_bytes());
    let a = RawArray::<T>::from_bytes(data);
    let b = RawArray::<T>::read_from(Trickle::new(data));
    let c = RawArray::<T>::read_file(path);
    agree("RawArray from_bytes/read_from", &a, &b, key);
    agree("RawArray from_bytes/read_file", &a, &c, key);
    let Ok(a) = a else { return };
    let bytes = a.to_bytes();
    let back = RawArray::<T>::from_bytes(&bytes).expect("a written array reads back");
    assert_eq!(back.to_bytes(), bytes);
    let d = dynamic.expect("a file the typed reader reads, the dynamic reader reads");
    // The dynamic reader keeps user-defined elements big-endian; to_typed swaps them itself.
    let t = d
        .to_typed::<T>()
        .expect("the dynamic reader's data is the same type");
    assert_eq!(
        t.to_bytes(),
        bytes,
        "typed read and DynArray::to_typed differ"
    );
}

/// `from_slice` and `from_reader` into several serde types agree, and what reads back
/// serializes to a file that reads back the same.
pub fn from_slice_types(data: &[u8]) {
    serde_one::<f64, _>(data, |v| v.to_bits());
    serde_one::<u8, _>(data, |v| *v);
    serde_one::<i32, _>(data, |v| *v);
    serde_one::<Complex<f32>, _>(data, |v| (v.re.to_bits(), v.im.to_bits()));
    serde_one::<Vec<f32>, _>(data, |v| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    serde_one::<Vec<Vec<f64>>, _>(data, |v| {
        v.iter()
            .map(|r| r.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    });
    serde_one::<Vec<[u16; 3]>, _>(data, Clone::clone);
    serde_one::<Particle, _>(data, |p| format!("{p:?}"));
    serde_one::<Vec<Particle>, _>(data, |p| format!("{p:?}"));
    serde_one::<String, _>(data, Clone::clone);
    serde_one::<Vec<String>, _>(data, Clone::clone);
    serde_one::<(u32, bool), _>(data, |v| *v);
    // A top-level RawArray reads the whole input as the file, but `to_vec` of one writes a
    // user-defined scalar holding it (noted in the report): compare the reads only.
    let a = from_slice::<RawArray<f32>>(data);
    let b = from_reader::<RawArray<f32>>(Trickle::new(data));
    agree("RawArray<f32> through serde", &a, &b, RawArray::to_bytes);
    serde_one::<Vec<RawArray<u8>>, _>(data, |v| v.clone());
    // Whatever the dims, `deserialize_any` (what IgnoredAny and self-describing values use).
    let a = from_slice::<serde::de::IgnoredAny>(data).map(|_| ());
    let b = from_reader::<serde::de::IgnoredAny>(Trickle::new(data)).map(|_| ());
    agree("IgnoredAny", &a, &b, |_| ());
    // The borrowing paths.
    if let Ok(s) = from_slice::<&str>(data) {
        assert_eq!(
            from_slice::<String>(data).expect("&str read, String too"),
            s
        );
    }
    if let Ok(b) = from_slice::<&[u8]>(data) {
        let _ = b.len();
    }
}

fn serde_one<T: DeserializeOwned + Serialize, K: PartialEq + Debug>(
    data: &[u8],
    key: impl Fn(&T) -> K,
) {
    let a = from_slice::<T>(data);
    let b = from_reader::<T>(Trickle::new(data));
    serde_agree(std::any::type_name::<T>(), &a, &b, &key);
    let c = from_file_of::<T>(data);
    serde_agree(std::any::type_name::<T>(), &a, &c, &key);
    let Ok(v) = a else { return };
    // A value read from a file serializes again (unless it has no element to infer a type
    // from), and that file reads back the same value.
    if let Ok(bytes) = rawarray_serde::to_vec(&v) {
        let back = from_slice::<T>(&bytes).expect("what to_vec writes, from_slice reads");
        assert_eq!(key(&back), key(&v), "{}", std::any::type_name::<T>());
    }
}

/// The element types the LZ4 target's first byte picks from: eltype, elbyte, big-endian.
pub const LZ4_TYPES: [(ElType, u64, bool); 8] = [
    (ElType::Uint, 1, false),
    (ElType::Float, 4, false),
    (ElType::Float, 4, true),
    (ElType::Complex, 16, false),
    (ElType::Int, 2, true),
    (ElType::User, 3, false),
    (ElType::Float, 8, false),
    (ElType::BFloat16, 2, false),
];

/// An LZ4-compressed file built around a raw block: byte 0 picks the element type
/// ([`LZ4_TYPES`]), byte 1 the number of dims (0 to 3), then one little-endian `u32` per dim,
/// then the block. [`lz4_input`] is the inverse, for seeds.
pub fn lz4(data: &[u8]) {
    let Some(file) = lz4_file(data) else { return };
    let header = Header::decode(&file);
    let d = DynArray::from_bytes(&file);
    // The independent answer: lz4_flex decompressing the block to the plain length.
    if let Ok(h) = &header {
        let block = &file[h.encoded_len()..];
        let plain = usize::try_from(h.data_len()).expect("bounded by 255 x the block");
        let direct = lz4_flex::block::decompress(block, plain)
            .ok()
            .filter(|v| v.len() == plain);
        match (&d, direct) {
            (Ok(d), Some(mut v)) => {
                if h.is_big_endian() && h.eltype != ElType::User {
                    let w = h.eltype.swap_width(h.elbyte).expect("primitive") as usize;
                    v.chunks_exact_mut(w).for_each(<[u8]>::reverse);
                }
                assert_eq!(
                    d.data(),
                    &v[..],
                    "DynArray and lz4_flex decompress differently"
                );
            }
            (Err(e), Some(_)) => panic!("lz4_flex decompresses the block, DynArray fails: {e}"),
            (Ok(_), None) => panic!("DynArray decompresses a block lz4_flex rejects"),
            (Err(_), None) => {}
        }
    }
    let b = DynArray::read_from(Trickle::new(&file));
    agree(
        "compressed DynArray from_bytes/read_from",
        &d,
        &b,
        Clone::clone,
    );
    let _ = RawArray::<u8>::from_bytes(&file);
    let _ = RawArray::<f32>::read_from(Trickle::new(&file));
    let _ = RawArray::<Complex<f64>>::from_bytes(&file);
    let _ = from_slice::<Vec<f32>>(&file);
    let _ = from_slice::<Vec<Vec<u8>>>(&file);
    let _ = from_slice::<String>(&file);
    typed(&file);
}

/// The `.ra` file the LZ4 target reads for an input (see [`lz4`]).
pub fn lz4_file(data: &[u8]) -> Option<Vec<u8>> {
    let (&pick, rest) = data.split_first()?;
    let (&ndims, mut rest) = rest.split_first()?;
    let (eltype, elbyte, big_endian) = LZ4_TYPES[usize::from(pick) % LZ4_TYPES.len()];
    let mut dims = Vec::new();
    for _ in 0..ndims % 4 {
        let (d, r) = rest.split_first_chunk::<4>()?;
        dims.push(u64::from(u32::from_le_bytes(*d)));
        rest = r;
    }
    let flags = 2 | u64::from(big_endian);
    let mut file = Vec::with_capacity(48 + 8 * dims.len() + rest.len());
    for word in [
        rawarray_serde::header::MAGIC,
        flags,
        eltype.code(),
        elbyte,
        rest.len() as u64,
        dims.len() as u64,
    ]
    .into_iter()
    .chain(dims.iter().copied())
    {
        file.extend_from_slice(&word.to_le_bytes());
    }
    file.extend_from_slice(rest);
    Some(file)
}

/// The LZ4 target's input for a compressed file whose type is in [`LZ4_TYPES`] and which has at
/// most 3 dims, each below 2^32; `None` otherwise.
pub fn lz4_input(file: &[u8]) -> Option<Vec<u8>> {
    let h = Header::decode(file).ok()?;
    let pick = LZ4_TYPES
        .iter()
        .position(|&(t, b, be)| (t, b, be) == (h.eltype, h.elbyte, h.is_big_endian()))?;
    if Storage::of(&h) != Storage::Lz4Whole || h.dims.len() > 3 {
        return None;
    }
    let mut out = vec![pick as u8, h.dims.len() as u8];
    for &d in &h.dims {
        out.extend_from_slice(&u32::try_from(d).ok()?.to_le_bytes());
    }
    let start = h.encoded_len();
    out.extend_from_slice(file.get(start..start + usize::try_from(h.size).ok()?)?);
    Some(out)
}

/// The trailer parser, on the bytes after a data section and on a whole file; a trailer that
/// parses encodes to a block that parses to it again.
pub fn trailer(data: &[u8]) {
    for found in [
        Trailer::from_trailing_bytes(data),
        Trailer::from_file_bytes(data),
    ] {
        match found {
            Ok(Some(t)) => {
                for at in [0, 1 << 40] {
                    let block = t.encode_block(at);
                    let back = Trailer::from_trailing_bytes(&block).expect("our own block parses");
                    assert_eq!(back.as_ref(), Some(&t));
                }
                if let Some(schema) = &t.schema {
                    let _ = (
                        schema.size(),
                        schema.numpy_descr(),
                        schema.numpy_descr_json(),
                    );
                }
                let _ = t.params_as::<serde_json::Value>();
            }
            Ok(None) => {}
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
    let path = write_scratch("trailer.ra", data);
    let by_file = Trailer::read_file(&path);
    let by_bytes = Trailer::from_file_bytes(data);
    agree(
        "Trailer read_file/from_file_bytes",
        &by_file,
        &by_bytes,
        Clone::clone,
    );
}

/// The mapped record reader on the input as a file, for several element types: `get`, `iter`
/// and `slice` agree with each other and with `RawArray::read_file`.
pub fn records(data: &[u8]) {
    let path = write_scratch("records.ra", data);
    records_one::<f32>(&path);
    records_one::<[u16; 3]>(&path);
    records_one::<bool>(&path);
    records_one::<Particle>(&path);
    records_one::<u8>(&path);
}

/// Records looked at one by one, at most: a file of empty records may hold 2^60 of them.
const MAX_RECORDS: usize = 4096;

fn records_one<T: Element + Clone>(path: &Path) {
    let Ok(r) = RecordReader::<T>::open(path) else {
        return;
    };
    let n = r.len();
    assert_eq!(r.iter().len(), n);
    assert_eq!(r.header().dims.last().copied(), Some(n as u64));
    let _ = r.trailer();
    let pack = |v: &[T]| RawArray::from_vec(v.to_vec()).to_bytes();
    let mut each = Vec::new();
    let mut all_ok = true;
    for i in 0..n.min(MAX_RECORDS) {
        match r.slice(i..=i) {
            Ok(rec) => {
                assert_eq!(rec.len(), r.record_len());
                each.extend_from_slice(&rec);
            }
            Err(_) => all_ok = false,
        }
    }
    assert!(r.slice(n..=n).is_err());
    assert!(r.slice(n..n).is_ok_and(|s| s.is_empty()));
    assert!(r.slice(n..=n).is_err());
    if n > MAX_RECORDS || !all_ok {
        let _ = r.slice(..);
        return;
    }
    let whole = r.slice(..).expect("every record read, so all of them do");
    assert_eq!(pack(&whole), pack(&each), "slice(..) and get(i) differ");
    // The mapped reader and the plain reader see the same values.
    let plain = RawArray::<T>::read_file(path).expect("a mapped file reads plainly");
    assert_eq!(pack(plain.as_slice()), pack(&whole));
}

/// `recover` on a copy of the input: when it succeeds the file is a valid `.ra` file whose
/// last dim is the record count it reports, and a second `recover` changes nothing. And
/// `RecordOptions::open` (the appending writer's reader) on another copy: when it opens the
/// file, one more record appends and reads back.
pub fn recover(data: &[u8]) {
    append(data);
    let path = write_scratch("recover.ra", data);
    let Ok(first) = recover_file(&path) else {
        return;
    };
    assert!(first.records_after >= first.records_before);
    let d = DynArray::read_file(&path).expect("a recovered file reads");
    assert_eq!(d.header().dims.last().copied(), Some(first.records_after));
    let after = std::fs::read(&path).expect("read back");
    let again = recover_file(&path).expect("a recovered file recovers again");
    assert_eq!(
        (
            again.records_before,
            again.records_after,
            again.bytes_removed
        ),
        (first.records_after, first.records_after, 0),
        "recover is not idempotent"
    );
    assert_eq!(std::fs::read(&path).expect("read back"), after);
}

fn append(data: &[u8]) {
    let path = write_scratch("append.ra", data);
    let opened = RecordOptions::new()
        .durability(Durability::NoFsync)
        .open::<f32>(&path);
    let Ok(mut w) = opened else { return };
    let before = w.len();
    w.append(&1.5).expect("append to an opened file");
    let h = w.finish().expect("finish an opened file");
    assert_eq!(h.dims.last().copied(), Some(before + 1));
    let r = RecordReader::<f32>::open(&path).expect("an appended file opens");
    assert_eq!(r.len() as u64, before + 1);
    assert_eq!(r.slice(before as usize..).expect("the new record")[0], 1.5);
}

/// Elements a block may have for the fuzzer to check it against a whole read, element by
/// element (larger blocks are only read).
const MAX_CHECKED: u64 = 1 << 16;

/// `ArrayReader` (positioned reads and the map) and `ArrayWriter` on the input as a file, with
/// subsets chosen by the input's last bytes (so every seed file is also a subset seed): some
/// in bounds, some past a dim's end, of the wrong rank, or with huge values. A block that reads
/// equals the same block cut from `DynArray::read_file` by index arithmetic, both readers
/// agree, typed reads agree with untyped ones, and a block written back into a little-endian
/// uncompressed file leaves its bytes unchanged. Bad subsets are errors naming their dim.
pub fn subset(data: &[u8]) {
    let path = write_scratch("subset.ra", data);
    let Ok(positioned) = rawarray_serde::ArrayReader::open(&path) else {
        return;
    };
    let mapped = rawarray_serde::ArrayReader::open_mapped(&path).expect("opens as it did");
    let header = positioned.header().clone();
    let whole = DynArray::read_file(&path).ok();
    // The subset's choices: the input's last bytes, cycled.
    let tail = &data[data.len().saturating_sub(16)..];
    let mut pick = tail.iter().copied().cycle().chain(std::iter::repeat(0));
    let mut next = || u64::from(pick.next().unwrap_or(0));
    for round in 0..3 {
        let mut ranges: Vec<std::ops::Range<u64>> = header
            .dims
            .iter()
            .map(|&d| {
                let (a, b) = (next() % (d.min(250) + 2), next() % (d.min(250) + 2));
                let (a, b) = (a.min(b), a.max(b));
                // Shifted towards the end of long dims, so their far end is read too.
                let shift = if d > 250 && next() % 2 == 1 {
                    d - 250
                } else {
                    0
                };
                a + shift..b + shift
            })
            .collect();
        match round {
            1 if next() % 4 == 0 => ranges.push(0..1),
            2 if !ranges.is_empty() => ranges[0] = u64::MAX - next()..u64::MAX,
            _ => {}
        }
        let in_bounds = ranges.len() == header.dims.len()
            && ranges.iter().zip(&header.dims).all(|(r, &d)| r.end <= d);
        let a = positioned.read_subset_bytes(&ranges);
        let b = mapped.read_subset_bytes(&ranges);
        agree("positioned and mapped", &a, &b, Clone::clone);
        let (h, bytes) = match a {
            Ok(block) => block,
            Err(e) => {
                if !in_bounds {
                    assert!(
                        matches!(
                            e.kind(),
                            rawarray_serde::ErrorKind::SubsetRank { .. }
                                | rawarray_serde::ErrorKind::SubsetOutOfBounds { .. }
                        ),
                        "a bad subset gave {e}"
                    );
                }
                continue;
            }
        };
        assert!(in_bounds, "{ranges:?} of {:?} read", header.dims);
        assert_eq!(bytes.len() as u64, h.size);
        let n: u64 = ranges.iter().map(|r| r.end - r.start).product();
        assert_eq!(
            h.dims,
            ranges.iter().map(|r| r.end - r.start).collect::<Vec<_>>()
        );
        if let Some(whole) = &whole {
            if n <= MAX_CHECKED {
                assert_eq!(bytes, cut_bytes(whole, &ranges), "{ranges:?}");
            }
        }
        if header.eltype == ElType::Float && header.elbyte == 4 {
            let t = positioned
                .read_subset::<f32>(&ranges)
                .expect("f32 as its bytes");
            let le: Vec<u8> = t.as_slice().iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(le, bytes);
        }
        // Written back into a copy: the file does not change.
        if Storage::of(&header) != Storage::Lz4Whole && !header.is_big_endian() {
            let copy = write_scratch("subset-copy.ra", data);
            let w = rawarray_serde::ArrayWriter::open(&copy).expect("a readable plain file opens");
            w.write_subset_bytes(&ranges, &bytes)
                .expect("its own block writes");
            w.finish().expect("sync");
            assert!(
                std::fs::read(&copy).expect("read back") == data,
                "write-back changed the file"
            );
        }
    }
}

/// The block `ranges` of a whole array's plain bytes, element by element.
fn cut_bytes(whole: &DynArray, ranges: &[std::ops::Range<u64>]) -> Vec<u8> {
    let dims = &whole.header().dims;
    let elbyte = whole.header().elbyte as usize;
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
        let at = off as usize * elbyte;
        out.extend_from_slice(&whole.data()[at..at + elbyte]);
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

/// A chunked file (flag bit 2) read by the codec layer: the config and index validated, the
/// whole section and three subsets decoded; every subset that decodes equals the block cut
/// from the whole read. Inputs that are not chunked are made so: the input's bytes become the
/// data section of a small chunked header (so the fuzzer mutates configs and indexes directly).
pub fn chunked(data: &[u8]) {
    use rawarray_serde::codec::{decode_all, SectionReader};
    let (header, file) = match Header::decode_any(data) {
        Ok(h) if Storage::of(&h) == Storage::Chunked => (h, data.to_vec()),
        _ => {
            // dims [5, 4, 3] of u16, the section = the input.
            let mut h = Header::new(ElType::Uint, 2, vec![5, 4, 3]).expect("a valid header");
            h.flags = rawarray_serde::Flags::CHUNKED;
            h.size = data.len() as u64;
            let mut f = h.encode();
            f.extend_from_slice(data);
            (h, f)
        }
    };
    // Whole reads allocate what the header says: keep them to what the fuzzer can afford.
    let whole = if header.data_len() <= 64 << 20 {
        decode_all(&header, &file[..]).ok()
    } else {
        None
    };
    let Ok(reader) = SectionReader::open(&header, &file[..]) else {
        return;
    };
    let fields_section = rawarray_serde::section::Section::open(&header, &file[..]).ok();
    let tail = &data[data.len().saturating_sub(12)..];
    let mut pick = tail.iter().copied().cycle().chain(std::iter::repeat(0));
    let mut next = || u64::from(pick.next().unwrap_or(0));
    for _ in 0..3 {
        let ranges: Vec<std::ops::Range<u64>> = header
            .dims
            .iter()
            .map(|&d| {
                let (a, b) = (next() % (d.min(250) + 1), next() % (d.min(250) + 1));
                a.min(b)..a.max(b)
            })
            .collect();
        let n: u64 = ranges.iter().map(|r| r.end - r.start).product::<u64>() * header.elbyte;
        if n > 16 << 20 {
            continue;
        }
        let mut out = vec![0u8; n as usize];
        if reader.read_box(&ranges, &mut out).is_ok() {
            if let Some(w) = &whole {
                let plan = rawarray_serde::SubsetPlan::new(&header.dims, header.elbyte, &ranges)
                    .expect("ranges checked");
                let cut: Vec<u8> = plan
                    .runs()
                    .flat_map(|r| w[r.start as usize..r.end as usize].iter().copied())
                    .collect();
                assert_eq!(out, cut, "subset {ranges:?} differs from the whole read");
            }
        }
        // Some bytes of each element alone (a field of records, byte streams read alone where
        // each has its CRC): what decodes equals those bytes of the whole elements.
        let e = header.elbyte as usize;
        if e == 0 {
            continue;
        }
        let o = next() as usize % e;
        let w = 1 + next() as usize % (e - o);
        let Some(section) = &fields_section else {
            continue;
        };
        if let (Ok(Some(cols)), Some(wh)) = (section.read_box_fields(&ranges, &[(o, w)]), &whole) {
            let plan = rawarray_serde::SubsetPlan::new(&header.dims, header.elbyte, &ranges)
                .expect("ranges checked");
            let mut field = Vec::with_capacity(cols[0].len());
            for r in plan.runs() {
                for el in wh[r.start as usize..r.end as usize].chunks_exact(e) {
                    field.extend_from_slice(&el[o..o + w]);
                }
            }
            assert_eq!(
                cols[0], field,
                "field ({o}, {w}) of {ranges:?} differs from the whole read"
            );
        }
    }
}

/// Rows looked at one by one, at most.
const MAX_ROWS: u64 = 4096;

/// Ragged files (flag bit 3): the typed reader, the mapped readers and serde agree, row by row,
/// and whatever reads back writes out and reads back the same; hostile offsets are errors.
pub fn ragged(data: &[u8]) {
    use rawarray_serde::ragged::DynRagged;
    use rawarray_serde::{Ragged, RaggedReader};
    fn typed<T: Element + Clone + PartialEq + Debug>(data: &[u8], path: &Path) {
        let whole = Ragged::<T>::from_bytes(data);
        let mapped = RaggedReader::<T>::open(path);
        if let Ok(r) = &whole {
            let again = Ragged::<T>::from_bytes(&r.to_bytes().expect("a read ragged array writes"));
            // Compared by their Debug text, where a NaN equals a NaN (`==` says it does not).
            assert_eq!(
                format!("{:?}", again.as_ref().ok()),
                format!("{:?}", Some(r))
            );
            let m = mapped.expect("the mapped reader opens what the whole reader read");
            assert_eq!(m.rows(), r.rows());
            for k in 0..r.rows().min(MAX_ROWS as usize) {
                let (got, want) = (m.row(k).expect("a checked row"), r.row(k).unwrap());
                assert_eq!(format!("{:?}", &*got), format!("{want:?}"));
            }
        }
    }
    let path = write_scratch("ragged.ra", data);
    // Chunks never written read as zeros, so a small chunked file may rightly hold more values
    // than the fuzzer's memory: those are only opened and their offsets checked.
    let huge = rawarray_serde::RaggedHeader::decode(data)
        .is_ok_and(|h| h.chunked && h.values_len() > 64 << 20);
    if huge {
        if let Ok(d) = DynRagged::open(&path) {
            let _ = d.longest_row();
        }
        return;
    }
    typed::<u8>(data, &path);
    typed::<f32>(data, &path);
    typed::<Particle>(data, &path);
    if let Ok(d) = DynRagged::open(&path) {
        let longest = d.longest_row();
        let rows = d.rows().min(MAX_ROWS);
        let each: Vec<_> = (0..rows).map(|k| d.row_bytes(k).map(|b| b.len())).collect();
        // Chunked values may still hold a damaged chunk once the offsets check.
        if longest.is_ok() && !d.header().chunked {
            assert!(
                each.iter().all(Result::is_ok),
                "every row reads once all offsets check"
            );
        }
        let mut out = Vec::new();
        if d.write_rows(0..rows, &mut out).is_ok() {
            let back =
                DynRagged::open(&write_scratch("ragged_slice.ra", &out)).expect("a slice reads");
            assert_eq!(back.rows(), rows);
        }
    }
    let _ = from_slice::<Vec<Vec<f32>>>(data);
    let _ = from_slice::<Vec<String>>(data);
    let _ = from_reader::<Vec<Vec<u8>>>(Trickle::new(data));
}
