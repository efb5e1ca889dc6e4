//! Issue 32, item 2: every public read path returns the same values.
//!
//! Property 1 draws an array (element type, byte order, shape) and a storage (plain,
//! whole-section LZ4, chunked with each codec, filter pipeline, chunk and block shape, layout
//! version), writes it with the library and reads it back through every Rust path and the `ra`
//! binary; each must give the values drawn (the independent truth: the values are generated
//! here, and their bytes are encoded here, not by the library).
//!
//! Property 2 flips one byte of a version 2 chunked file. In the checksummed parts (config,
//! segment slots, index entries, block tables and payloads; for a coded chunk, in half the
//! cases the chunk's CRC and its entry CRC are recomputed so that only the block CRCs can catch
//! it) every path returns exactly the original values or an error. In the parts without a
//! checksum (the header, and the data of plain and whole-LZ4 files) all paths agree with each
//! other: the same values, or all an error.
//!
//! The paths include the Python package's (`rawarray.read`, and keyed `File[...]` of a mapped
//! and of a copying `File`), served for every case by one Python process with the package
//! installed (`RAWARRAY_SKIP_PYTHON=1` skips them, and the run says so).
//!
//! A failing case's file is saved under `target/every_path_failures/` with a note of the paths
//! that disagree.

mod common;

use std::fmt::Debug;
use std::io::Write as _;
use std::ops::{ControlFlow, Range};
use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;
use rawarray_serde::codec::{Codec, Filter};
use rawarray_serde::section::Section;
use rawarray_serde::{ArrayReader, DynArray, Element, Header, RaRecord, RawArray, WriteOptions};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// Values and their bytes, encoded here.

/// A small deterministic generator (splitmix64): a case is a function of its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// How a case's values look: random bits, a ramp (which the filters and codecs shrink, so
/// chunks are coded, not stored raw), or one value.
#[derive(Clone, Copy, Debug)]
enum Mode {
    Random,
    Ramp,
    Constant,
}

/// An element type under test: how to draw it, its bytes in either order (written here from
/// the element's definition, not by the library), and how `ra cat --json` prints it.
trait Val: Element + Clone + Debug + Serialize + DeserializeOwned + 'static {
    /// Whether the element is a plain number (a column of its own in Arrow; delta and pco take
    /// it where `PCO` says).
    const NUMBER: bool = true;
    /// Whether the pco codec takes it.
    const PCO: bool;
    fn draw(rng: &mut Rng, mode: Mode, i: u64) -> Self;
    fn bytes(&self, big_endian: bool) -> Vec<u8>;
    /// Whether `text`, the `value` of a `ra cat --json` line, is this value.
    fn cat_is(&self, text: &str) -> bool;
}

macro_rules! int_val {
    ($($t:ty, $pco:expr);* $(;)?) => {$(
        impl Val for $t {
            const PCO: bool = $pco;
            fn draw(rng: &mut Rng, mode: Mode, i: u64) -> $t {
                match mode {
                    Mode::Random => rng.next() as $t,
                    Mode::Ramp => (i as $t).wrapping_mul(3).wrapping_add(rng.below(2) as $t),
                    Mode::Constant => 7 as $t,
                }
            }
            fn bytes(&self, big_endian: bool) -> Vec<u8> {
                if big_endian { self.to_be_bytes().to_vec() } else { self.to_le_bytes().to_vec() }
            }
            fn cat_is(&self, text: &str) -> bool {
                text.parse::<$t>() == Ok(*self)
            }
        }
    )*};
}
int_val!(i8, false; i16, true; i32, true; i64, true; u8, false; u16, true; u32, true; u64, true);

macro_rules! float_val {
    ($($t:ty, $bits:ty);* $(;)?) => {$(
        impl Val for $t {
            const PCO: bool = true;
            fn draw(rng: &mut Rng, mode: Mode, i: u64) -> $t {
                match mode {
                    // Any bits: NaNs with payloads, infinities, subnormals, -0.0.
                    Mode::Random => <$t>::from_bits(rng.next() as $bits),
                    Mode::Ramp => i as $t * 0.25 - 3.0,
                    Mode::Constant => -1.5,
                }
            }
            fn bytes(&self, big_endian: bool) -> Vec<u8> {
                if big_endian { self.to_be_bytes().to_vec() } else { self.to_le_bytes().to_vec() }
            }
            fn cat_is(&self, text: &str) -> bool {
                // `ra cat` prints every NaN as NaN (its payload is not text).
                let text = text.trim_matches('"');
                match text.parse::<$t>() {
                    Ok(v) => v.to_bits() == self.to_bits() || (v.is_nan() && self.is_nan()),
                    Err(_) => false,
                }
            }
        }
    )*};
}
float_val!(f32, u32; f64, u64);

/// A small record: three fields of different widths, packed to 13 bytes.
#[derive(RaRecord, Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
struct Rec {
    a: u8,
    b: i32,
    c: f64,
}

impl Val for Rec {
    const NUMBER: bool = false;
    const PCO: bool = false;
    fn draw(rng: &mut Rng, mode: Mode, i: u64) -> Rec {
        match mode {
            Mode::Random => Rec {
                a: rng.next() as u8,
                b: rng.next() as i32,
                // Finite: `ra cat --json` prints records' floats as JSON numbers.
                c: (rng.next() as i64 as f64) / 1024.0,
            },
            Mode::Ramp => Rec {
                a: i as u8,
                b: -(i as i32),
                c: i as f64 * 0.5,
            },
            Mode::Constant => Rec { a: 1, b: 2, c: 3.0 },
        }
    }
    fn bytes(&self, big_endian: bool) -> Vec<u8> {
        let mut out = vec![self.a];
        if big_endian {
            out.extend(self.b.to_be_bytes());
            out.extend(self.c.to_be_bytes());
        } else {
            out.extend(self.b.to_le_bytes());
            out.extend(self.c.to_le_bytes());
        }
        out
    }
    fn cat_is(&self, text: &str) -> bool {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
            return false;
        };
        v["a"].as_u64() == Some(u64::from(self.a))
            && v["b"].as_i64() == Some(i64::from(self.b))
            && v["c"].as_f64().map(f64::to_bits) == Some(self.c.to_bits())
    }
}

/// Writes `a` with `opts`. A record array gets its schema in the trailer (as record files
/// have it), so that Arrow, `ra` and numpy know its fields: `RawArray::write_file_with` writes
/// none for records.
fn write_case<T: Val>(path: &Path, a: &RawArray<T>, opts: &WriteOptions) -> Result<(), String> {
    if T::NUMBER {
        return a.write_file_with(path, opts).map_err(err);
    }
    let mut file = Vec::new();
    a.write_to_with(&mut file, opts).map_err(err)?;
    let header = Header::decode_any(&file).map_err(err)?;
    let end = header.encoded_len() as u64 + header.size;
    assert_eq!(end, file.len() as u64, "no trailer yet");
    let trailer =
        rawarray_serde::Trailer::for_element::<T>(serde_json::Value::Null).map_err(err)?;
    file.extend(trailer.encode_block(end));
    std::fs::write(path, file).map_err(err)
}

fn all_bytes<T: Val>(values: &[T], big_endian: bool) -> Vec<u8> {
    values.iter().flat_map(|v| v.bytes(big_endian)).collect()
}

// ---------------------------------------------------------------------------------------------
// Cases.

#[derive(Clone, Debug)]
enum Storage {
    Plain,
    Lz4Whole,
    Chunked {
        codec: Codec,
        filters: Vec<Filter>,
        chunks: Option<Vec<u64>>,
        blocks: Option<Vec<u64>>,
        version: u32,
    },
}

#[derive(Clone, Debug)]
struct Case {
    dims: Vec<u64>,
    big_endian: bool,
    storage: Storage,
    mode: Mode,
    /// The box read by the subset paths and `ra slice`.
    cut: Vec<Range<u64>>,
    /// Streaming piece size (bytes) and Arrow batch rows.
    piece: usize,
    batch: usize,
}

impl Case {
    fn options(&self) -> WriteOptions {
        let o = WriteOptions::new().big_endian(self.big_endian);
        match &self.storage {
            Storage::Plain => o,
            Storage::Lz4Whole => o.compress(true),
            Storage::Chunked {
                codec,
                filters,
                chunks,
                blocks,
                version,
            } => {
                let mut o = o
                    .codec(*codec)
                    .filters(filters.iter().copied())
                    .layout_version(*version)
                    .threads(1);
                if let Some(c) = chunks {
                    o = o.chunks(c.clone());
                }
                if let Some(b) = blocks {
                    o = o.blocks(b.clone());
                }
                o
            }
        }
    }

    fn is_chunked_v2(&self) -> bool {
        matches!(self.storage, Storage::Chunked { version: 2, .. })
    }
}

fn draw_case<T: Val>(rng: &mut Rng) -> Case {
    let ndims = rng.below(4) as usize;
    let dims: Vec<u64> = (0..ndims)
        .map(|_| {
            if rng.chance(8) {
                0
            } else if ndims == 1 {
                1 + rng.below(60)
            } else {
                1 + rng.below(9)
            }
        })
        .collect();
    let mode = match rng.below(3) {
        0 => Mode::Random,
        1 => Mode::Ramp,
        _ => Mode::Constant,
    };
    let storage = match rng.below(5) {
        0 => Storage::Plain,
        1 => Storage::Lz4Whole,
        _ => {
            let version = if rng.chance(25) { 1 } else { 2 };
            let mut codecs = vec![Codec::None, Codec::Lz4, Codec::Zstd];
            if version == 2 {
                codecs.push(Codec::Huffman);
                if T::PCO {
                    codecs.push(Codec::Pco);
                }
            }
            let codec = codecs[rng.below(codecs.len() as u64) as usize];
            let filters = if version == 1 {
                [vec![], vec![Filter::Shuffle], vec![Filter::BitShuffle]][rng.below(3) as usize]
                    .clone()
            } else {
                // bytedelta on every plane, or on those of a random mask of the element's.
                let planes = T::ELBYTE.min(32) as u32;
                let mask = (rng.below(1 << planes) as u32).max(1);
                let mut pool = vec![
                    Filter::Shuffle,
                    Filter::BitShuffle,
                    Filter::ByteDelta,
                    Filter::ByteDeltaPlanes(mask),
                ];
                if T::NUMBER {
                    pool.push(Filter::Delta);
                }
                (0..rng.below(3))
                    .map(|_| pool[rng.below(pool.len() as u64) as usize])
                    .collect()
            };
            // Chunk sizes up to one past the dim: edge chunks, and chunks larger than the array.
            let chunks = (ndims > 0 && rng.chance(85)).then(|| {
                dims.iter()
                    .map(|&d| 1 + rng.below(d + 1))
                    .collect::<Vec<u64>>()
            });
            let blocks = match (&chunks, version) {
                (Some(c), 2) if rng.chance(60) => {
                    Some(c.iter().map(|&c| 1 + rng.below(c)).collect())
                }
                _ => None,
            };
            Storage::Chunked {
                codec,
                filters,
                chunks,
                blocks,
                version,
            }
        }
    };
    let cut = dims
        .iter()
        .map(|&d| {
            let a = rng.below(d + 1);
            let b = a + rng.below(d - a + 1);
            a..b
        })
        .collect();
    Case {
        dims,
        big_endian: rng.chance(40),
        storage,
        mode,
        cut,
        piece: 1 + rng.below(64) as usize,
        batch: 1 + rng.below(16) as usize,
    }
}

/// The values of the box `cut` of an array of `dims`, column-major over the box.
fn cut_of<T: Clone>(values: &[T], dims: &[u64], cut: &[Range<u64>]) -> Vec<T> {
    let mut out = Vec::new();
    let shape: Vec<u64> = cut.iter().map(|r| r.end - r.start).collect();
    let n: u64 = shape.iter().product();
    for k in 0..n {
        let (mut rest, mut at, mut stride) = (k, 0u64, 1u64);
        for (i, r) in cut.iter().enumerate() {
            at += (r.start + rest % shape[i]) * stride;
            rest /= shape[i];
            stride *= dims[i];
        }
        out.push(values[at as usize].clone());
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The paths. Each gives the values it read as bytes (little-endian, `Val::bytes`), or an error.

type Outcome = Result<Vec<u8>, String>;

/// What every path read from one file.
struct Reads {
    /// Whole reads of typed values, by path name.
    typed: Vec<(&'static str, Outcome)>,
    /// Reads of the box `cut`, typed values.
    boxes: Vec<(&'static str, Outcome)>,
    /// Whole reads of untyped bytes in the file's byte order.
    raw: Vec<(&'static str, Outcome)>,
    /// Paths skipped, with why.
    skipped: Vec<String>,
}

fn le<T: Val>(values: &[T]) -> Vec<u8> {
    all_bytes(values, false)
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn typed_of<T: Val>(a: rawarray_serde::Result<RawArray<T>>, dims: &[u64]) -> Outcome {
    let a = a.map_err(err)?;
    if a.dims() != dims {
        return Err(format!("dims {:?}, expected {dims:?}", a.dims()));
    }
    Ok(le(a.as_slice()))
}

/// Flattens what serde read (nested `Vec`s, the outermost the last dim) after checking its
/// shape.
trait Nested<T> {
    fn flat(self, dims: &[u64], out: &mut Vec<T>) -> Result<(), String>;
}
impl<T: Val> Nested<T> for T {
    fn flat(self, dims: &[u64], out: &mut Vec<T>) -> Result<(), String> {
        if !dims.is_empty() {
            return Err(format!("a scalar where dims {dims:?}"));
        }
        out.push(self);
        Ok(())
    }
}
macro_rules! nested {
    ($($t:ty),*) => {$(
        impl<T: Val> Nested<T> for Vec<$t> {
            fn flat(self, dims: &[u64], out: &mut Vec<T>) -> Result<(), String> {
                let Some((&last, inner)) = dims.split_last() else {
                    return Err("a sequence where a scalar".into());
                };
                if self.len() as u64 != last {
                    return Err(format!("{} items along the last dim, expected {last}", self.len()));
                }
                for item in self {
                    item.flat(inner, out)?;
                }
                Ok(())
            }
        }
    )*};
}
nested!(T, Vec<T>, Vec<Vec<T>>);

fn serde_paths<T: Val, N: Nested<T> + DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
    dims: &[u64],
    out: &mut Vec<(&'static str, Outcome)>,
) {
    let flat = |r: rawarray_serde::Result<N>| -> Outcome {
        let mut v = Vec::new();
        r.map_err(err)?.flat(dims, &mut v)?;
        Ok(le(&v))
    };
    out.push((
        "serde from_file",
        flat(rawarray_serde::from_file::<N>(path)),
    ));
    out.push((
        "serde from_reader",
        flat(rawarray_serde::from_reader::<N>(bytes)),
    ));
    // from_slice borrows: an owned value of the same type.
    let owned: rawarray_serde::Result<N> = rawarray_serde::from_slice(bytes);
    out.push(("serde from_slice", flat(owned)));
}

fn read_every_path<T: Val>(path: &Path, case: &Case, ra: Option<&Path>) -> Reads {
    let bytes = std::fs::read(path).expect("read the file back");
    let dims = &case.dims[..];
    let mut r = Reads {
        typed: Vec::new(),
        boxes: Vec::new(),
        raw: Vec::new(),
        skipped: Vec::new(),
    };

    // RawArray and DynArray.
    r.typed.push((
        "RawArray::read_file",
        typed_of(RawArray::<T>::read_file(path), dims),
    ));
    r.typed.push((
        "RawArray::from_bytes",
        typed_of(RawArray::<T>::from_bytes(&bytes), dims),
    ));
    r.typed.push((
        "RawArray::read_from",
        typed_of(RawArray::<T>::read_from(&bytes[..]), dims),
    ));
    for (name, d) in [
        ("DynArray::from_bytes", DynArray::from_bytes(&bytes)),
        ("DynArray::read_file", DynArray::read_file(path)),
        ("DynArray::read_from", DynArray::read_from(&bytes[..])),
    ] {
        let typed = d
            .as_ref()
            .map_err(err)
            .and_then(|d| typed_of(d.to_typed::<T>(), dims));
        r.typed.push((name, typed));
        // Its bytes, in the byte order its header now says.
        r.raw.push((
            name,
            d.map_err(err).map(|d| {
                if d.header().is_big_endian() == bytes_big_endian(&bytes) {
                    d.data().to_vec()
                } else {
                    swap_elements::<T>(d.data())
                }
            }),
        ));
    }

    // serde, as nested Vecs of the array's rank.
    match dims.len() {
        0 => serde_paths::<T, T>(path, &bytes, dims, &mut r.typed),
        1 => serde_paths::<T, Vec<T>>(path, &bytes, dims, &mut r.typed),
        2 => serde_paths::<T, Vec<Vec<T>>>(path, &bytes, dims, &mut r.typed),
        _ => serde_paths::<T, Vec<Vec<Vec<T>>>>(path, &bytes, dims, &mut r.typed),
    }

    // ArrayReader: positioned reads and the map.
    let box_dims: Vec<u64> = case.cut.iter().map(|r| r.end - r.start).collect();
    for (name, sub, reader) in [
        (
            "ArrayReader::open",
            "ArrayReader::open read_subset",
            ArrayReader::open(path),
        ),
        (
            "ArrayReader::open_mapped",
            "ArrayReader::open_mapped read_subset",
            ArrayReader::open_mapped(path),
        ),
    ] {
        match reader {
            Ok(reader) => {
                r.typed.push((name, typed_of(reader.read_all::<T>(), dims)));
                r.boxes
                    .push((sub, typed_of(reader.read_subset::<T>(&case.cut), &box_dims)));
            }
            Err(e) => {
                r.typed.push((name, Err(err(&e))));
                r.boxes.push((sub, Err(err(e))));
            }
        }
    }

    // The section: whole, a box, streaming, verify; from bytes in memory and from the file.
    match Header::decode_any(&bytes) {
        Ok(header) => {
            let be = header.is_big_endian();
            let sec = Section::open(&header, &bytes[..]);
            r.raw.push((
                "Section::read_all",
                sec.as_ref()
                    .map_err(err)
                    .and_then(|s| s.read_all().map_err(err)),
            ));
            let file = std::fs::File::open(path).expect("open");
            r.raw.push((
                "Section::open(File)::read_all",
                Section::open(&header, &file)
                    .map_err(err)
                    .and_then(|s| s.read_all().map_err(err)),
            ));
            r.raw.push((
                "Section::for_each_piece",
                sec.as_ref().map_err(err).and_then(|s| {
                    let mut all = Vec::new();
                    s.for_each_piece(u64::MAX, case.piece, |p| {
                        all.extend_from_slice(p);
                        ControlFlow::Continue(())
                    })
                    .map_err(err)?;
                    Ok(all)
                }),
            ));
            r.raw.push((
                "Section::verify",
                sec.as_ref()
                    .map_err(err)
                    .and_then(|s| s.verify().map_err(err))
                    .and_then(|_| {
                        sec.as_ref()
                            .map_err(err)
                            .and_then(|s| s.read_all().map_err(err))
                    }),
            ));
            let box_bytes = (case.cut.len() == header.dims.len())
                .then(|| case.cut.iter().map(|r| r.end - r.start).product::<u64>() * header.elbyte);
            r.boxes.push((
                "Section::read_box",
                match (sec.as_ref(), box_bytes) {
                    (Ok(s), Some(n)) => {
                        let mut out = vec![0u8; n as usize];
                        s.read_box(&case.cut, &mut out).map_err(err).map(|()| {
                            if be {
                                swap_elements::<T>(&out)
                            } else {
                                out
                            }
                        })
                    }
                    (Err(e), _) => Err(err(e)),
                    (_, None) => Err("the header's rank differs from the box's".into()),
                },
            ));
        }
        Err(e) => {
            for name in [
                "Section::read_all",
                "Section::open(File)::read_all",
                "Section::for_each_piece",
                "Section::verify",
            ] {
                r.raw.push((name, Err(err(&e))));
            }
            r.boxes.push(("Section::read_box", Err(err(e))));
        }
    }

    // Arrow: a 1-d array is a table of one column of numbers, or a column per record field.
    if dims.len() == 1 {
        r.typed.push((
            "rawarray_arrow::RaTable::read_all",
            arrow_values::<T>(path, None),
        ));
        r.typed.push((
            "rawarray_arrow::RaTable::batches",
            arrow_values::<T>(path, Some(case.batch)),
        ));
    } else {
        r.skipped
            .push(format!("Arrow: {}-d array (a table is 1-d)", dims.len()));
    }

    // The `ra` binary.
    match ra {
        Some(ra) => ra_paths::<T>(ra, path, case, &mut r),
        None => r
            .skipped
            .push("ra: binary not built (cargo build -p rawarray-cli)".into()),
    }

    // The Python package.
    python_paths(path, case, &mut r);
    r
}

/// The Python side of [`read_every_path`]: for each request line (a file and a box in the
/// file's dim order), `rawarray.read` of the file and `File[...]` of the box, mapped and
/// copying, each written little-endian in file order (numpy's C order over the reversed dims)
/// to `PATH.NAME`, then one JSON line: each name's error, or null.
const PYTHON_SERVER: &str = r#"
import json, sys, warnings
import numpy as np
import rawarray

# A damaged file's warnings (statistics failing their CRC) are the library's to give; the
# answers compared here are the values or the error.
warnings.simplefilter("ignore", rawarray.RaWarning)

def le(a):
    a = np.asarray(a)
    return np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"))).tobytes()

def keyed(path, key, mmap):
    with rawarray.open(path, mmap=mmap) as f:
        return np.array(f[key])

for line in sys.stdin:
    req = json.loads(line)
    path = req["path"]
    key = tuple(slice(s, e) for s, e in reversed(req["box"]))
    out = {}
    for name, read in [
        ("read", lambda: rawarray.read(path)),
        ("key_mapped", lambda: keyed(path, key, True)),
        ("key_copied", lambda: keyed(path, key, False)),
    ]:
        try:
            data = le(read())
        except Exception as e:
            out[name] = f"{type(e).__name__}: {e}"
            continue
        with open(f"{path}.{name}", "wb") as f:
            f.write(data)
        out[name] = None
    print(json.dumps(out), flush=True)
"#;

/// The one Python process of this test binary (the package installed first), or why none.
struct PythonServer {
    input: std::process::ChildStdin,
    output: std::io::BufReader<std::process::ChildStdout>,
    _child: std::process::Child,
}

#[cfg(skip_python)]
fn python_server() -> Result<&'static std::sync::Mutex<PythonServer>, String> {
    Err("RAWARRAY_SKIP_PYTHON=1".into())
}

#[cfg(not(skip_python))]
fn python_server() -> Result<&'static std::sync::Mutex<PythonServer>, String> {
    static SERVER: std::sync::OnceLock<Result<std::sync::Mutex<PythonServer>, String>> =
        std::sync::OnceLock::new();
    SERVER
        .get_or_init(|| {
            common::python::install_package();
            let mut child = Command::new(common::python::interpreter())
                .args(["-c", PYTHON_SERVER])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start Python: {e}"))?;
            let input = child.stdin.take().expect("piped");
            let output = std::io::BufReader::new(child.stdout.take().expect("piped"));
            Ok(std::sync::Mutex::new(PythonServer {
                input,
                output,
                _child: child,
            }))
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn python_paths(path: &Path, case: &Case, r: &mut Reads) {
    use std::io::BufRead as _;
    let server = match python_server() {
        Ok(s) => s,
        Err(why) => {
            r.skipped.push(format!("Python: {why}"));
            return;
        }
    };
    let mut server = server
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let boxes: Vec<[u64; 2]> = case.cut.iter().map(|c| [c.start, c.end]).collect();
    let request = serde_json::json!({"path": path, "box": boxes});
    writeln!(server.input, "{request}").expect("the Python server reads");
    let mut line = String::new();
    server
        .output
        .read_line(&mut line)
        .expect("the Python server answers");
    let answer: serde_json::Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("the Python server's answer {line:?}: {e}"));
    let outcome = |name: &str| -> Outcome {
        match &answer[name] {
            serde_json::Value::Null => {
                let mut out = path.as_os_str().to_owned();
                out.push(format!(".{name}"));
                Ok(std::fs::read(&out).expect("the Python server wrote it"))
            }
            e => Err(e.as_str().unwrap_or("?").to_string()),
        }
    };
    r.typed.push(("rawarray.read (Python)", outcome("read")));
    r.boxes
        .push(("File[box] mapped (Python)", outcome("key_mapped")));
    r.boxes
        .push(("File[box] mmap=False (Python)", outcome("key_copied")));
}

fn bytes_big_endian(file: &[u8]) -> bool {
    file.len() >= 16 && file[8] & 1 == 1
}

/// Element bytes in the other byte order (each scalar of an element reversed).
fn swap_elements<T: Val>(bytes: &[u8]) -> Vec<u8> {
    let w = T::ELBYTE;
    let mut out = bytes.to_vec();
    for e in out.chunks_mut(w) {
        if T::NUMBER {
            e.reverse();
        } else {
            // Rec: a (1 byte), b (4), c (8).
            e[1..5].reverse();
            e[5..13].reverse();
        }
    }
    out
}

fn arrow_values<T: Val>(path: &Path, batch: Option<usize>) -> Outcome {
    use arrow_array::Array as _;
    let table = rawarray_arrow::RaTable::open(path).map_err(err)?;
    let batches = match batch {
        None => vec![table.read_all().map_err(err)?],
        Some(n) => table
            .batches(n)
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?,
    };
    // Each column's values, as bytes (little-endian, Arrow's order), then interleaved as the
    // elements' fields.
    let widths: Vec<usize> = if T::NUMBER {
        vec![T::ELBYTE]
    } else {
        vec![1, 4, 8]
    };
    let mut cols: Vec<Vec<u8>> = vec![Vec::new(); widths.len()];
    for b in &batches {
        if b.num_columns() != widths.len() {
            return Err(format!(
                "{} columns, expected {}",
                b.num_columns(),
                widths.len()
            ));
        }
        for (k, w) in widths.iter().enumerate() {
            let data = b.column(k).to_data();
            let buf = &data.buffers()[0];
            let at = data.offset() * w;
            cols[k].extend_from_slice(&buf.as_slice()[at..at + data.len() * w]);
        }
    }
    let rows = cols[0].len() / widths[0];
    let mut out = Vec::new();
    for i in 0..rows {
        for (k, w) in widths.iter().enumerate() {
            out.extend_from_slice(&cols[k][i * w..(i + 1) * w]);
        }
    }
    Ok(out)
}

fn ra_paths<T: Val>(ra: &Path, path: &Path, case: &Case, r: &mut Reads) {
    let dims = &case.dims;
    let dir = path.parent().expect("a folder");

    // ra cat --json: one line per element, in file order, with its index.
    let out = Command::new(ra)
        .arg("cat")
        .arg("--json")
        .arg(path)
        .output()
        .expect("run ra");
    r.typed.push((
        "ra cat --json",
        if out.status.success() {
            cat_values::<T>(&String::from_utf8_lossy(&out.stdout), dims)
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        },
    ));

    // ra slice IN OUT RANGES: the box, read back.
    if dims.is_empty() {
        r.skipped.push("ra slice: a 0-d array has no ranges".into());
    } else {
        let ranges: Vec<String> = case
            .cut
            .iter()
            .map(|c| format!("{}:{}", c.start, c.end))
            .collect();
        let sliced = dir.join("sliced.ra");
        let _ = std::fs::remove_file(&sliced);
        let out = Command::new(ra)
            .arg("slice")
            .arg(path)
            .arg(&sliced)
            .arg(ranges.join(","))
            .output()
            .expect("run ra");
        let box_dims: Vec<u64> = case.cut.iter().map(|r| r.end - r.start).collect();
        r.boxes.push((
            "ra slice",
            if out.status.success() {
                typed_of(RawArray::<T>::read_file(&sliced), &box_dims)
            } else {
                Err(String::from_utf8_lossy(&out.stderr).into_owned())
            },
        ));
    }

    // ra convert IN OUT.npy: the .npy read here, from its own header.
    let npy = dir.join("converted.npy");
    let _ = std::fs::remove_file(&npy);
    let out = Command::new(ra)
        .arg("convert")
        .arg(path)
        .arg(&npy)
        .output()
        .expect("run ra");
    r.typed.push((
        "ra convert .npy",
        if out.status.success() {
            npy_values::<T>(&std::fs::read(&npy).expect("read the .npy"), dims)
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        },
    ));
}

/// The values `ra cat --json` printed, checked against the column-major index of each line;
/// returned re-encoded from the values drawn, or an error naming the first line that differs
/// from them. (Its text cannot hold a NaN's payload, so it is compared value by value.)
fn cat_values<T: Val>(text: &str, dims: &[u64]) -> Outcome {
    let mut lines = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("line {k}: {e}: {line}"))?;
        let index: Vec<u64> = v["index"]
            .as_array()
            .ok_or(format!("line {k}: no index: {line}"))?
            .iter()
            .map(|x| x.as_u64().unwrap_or(u64::MAX))
            .collect();
        let (mut rest, mut expect) = (k as u64, Vec::new());
        for &d in dims {
            expect.push(rest % d.max(1));
            rest /= d.max(1);
        }
        if index != expect {
            return Err(format!("line {k}: index {index:?}, expected {expect:?}"));
        }
        // The value's own text, as printed.
        let at = line
            .find("\"value\":")
            .ok_or(format!("line {k}: no value"))?
            + 8;
        lines.push(line[at..line.len() - 1].to_string());
    }
    Ok(lines.join("\n").into_bytes())
}

fn npy_values<T: Val>(npy: &[u8], dims: &[u64]) -> Outcome {
    if npy.len() < 10 || &npy[..6] != b"\x93NUMPY" {
        return Err("not a .npy".into());
    }
    let (hlen, start) = if npy[6] == 1 {
        (u16::from_le_bytes([npy[8], npy[9]]) as usize, 10)
    } else {
        (
            u32::from_le_bytes(npy[8..12].try_into().unwrap()) as usize,
            12,
        )
    };
    let head = String::from_utf8_lossy(&npy[start..start + hlen]).into_owned();
    let fortran = head.contains("'fortran_order': True");
    let shape_text = head
        .split("'shape': (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .ok_or(format!("no shape in {head}"))?;
    let shape: Vec<u64> = shape_text
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().unwrap_or(u64::MAX))
        .collect();
    let mut expect: Vec<u64> = dims.to_vec();
    if !fortran {
        expect.reverse();
    }
    if shape != expect {
        return Err(format!(
            "npy shape {shape:?} (fortran {fortran}), dims {dims:?}"
        ));
    }
    let data = &npy[start + hlen..];
    let n: u64 = dims.iter().product();
    if data.len() as u64 != n * T::ELBYTE as u64 {
        return Err(format!(
            "npy data of {} bytes, expected {}",
            data.len(),
            n * T::ELBYTE as u64
        ));
    }
    // Either byte order is numpy's to choose: the descr says which.
    if head.contains('>') {
        Ok(swap_elements::<T>(data))
    } else {
        Ok(data.to_vec())
    }
}

/// The `ra` binary next to this test's folder (`target/debug/ra`), if it was built.
fn ra_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let ra = exe
        .parent()?
        .parent()?
        .join(format!("ra{}", std::env::consts::EXE_SUFFIX));
    ra.is_file().then_some(ra)
}

fn failures_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("target/debug/deps")
        .to_path_buf();
    target.join("every_path_failures")
}

/// Saves the file and a note, and returns the note for the panic message.
fn save_failure(name: &str, file: &[u8], note: &str) -> String {
    let dir = failures_dir();
    std::fs::create_dir_all(&dir).expect("make the failures folder");
    std::fs::write(dir.join(format!("{name}.ra")), file).expect("save the file");
    let mut f = std::fs::File::create(dir.join(format!("{name}.txt"))).expect("save the note");
    f.write_all(note.as_bytes()).expect("save the note");
    format!(
        "{note}\n(saved as {})",
        dir.join(format!("{name}.ra")).display()
    )
}

fn show(o: &Outcome) -> String {
    match o {
        Ok(b) if b.len() > 64 => format!("Ok({} bytes: {:02x?}...)", b.len(), &b[..64]),
        Ok(b) => format!("Ok({b:02x?})"),
        Err(e) => format!("Err({e})"),
    }
}

// ---------------------------------------------------------------------------------------------
// Property 1.

fn check_all_paths<T: Val>(seed: u64) -> Result<(), String> {
    let mut rng = Rng(seed);
    let case = draw_case::<T>(&mut rng);
    let n: u64 = case.dims.iter().product();
    let values: Vec<T> = (0..n).map(|i| T::draw(&mut rng, case.mode, i)).collect();
    let a = RawArray::from_shape_vec(case.dims.clone(), values.clone()).expect("shape");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("a.ra");
    write_case(&path, &a, &case.options()).map_err(|e| format!("write {case:?}: {e}"))?;
    let file = std::fs::read(&path).expect("read");

    let ra = ra_binary();
    let reads = read_every_path::<T>(&path, &case, ra.as_deref());
    let want = le(&values);
    let want_raw = all_bytes(&values, case.big_endian);
    let want_box = le(&cut_of(&values, &case.dims, &case.cut));
    let mut wrong = Vec::new();
    for (name, got) in &reads.typed {
        let ok = match (name.starts_with("ra cat"), got) {
            (true, Ok(text)) => cat_matches(&values, text),
            (false, Ok(b)) => *b == want,
            (_, Err(_)) => false,
        };
        if !ok {
            wrong.push(format!("  {name}: {}", show(got)));
        }
    }
    for (name, got) in &reads.raw {
        if !matches!(got, Ok(b) if *b == want_raw) {
            wrong.push(format!("  {name}: {}", show(got)));
        }
    }
    for (name, got) in &reads.boxes {
        if !matches!(got, Ok(b) if *b == want_box) {
            wrong.push(format!("  {name}: {}", show(got)));
        }
    }
    if wrong.is_empty() {
        return Ok(());
    }
    let note = format!(
        "{} seed {seed:#x}: {case:?}\nexpected {}\nthese paths differ from the values written:\n{}",
        std::any::type_name::<T>(),
        show(&Ok(want)),
        wrong.join("\n")
    );
    Err(save_failure(
        &format!(
            "p1-{}-{seed:016x}",
            std::any::type_name::<T>().rsplit("::").next().unwrap()
        ),
        &file,
        &note,
    ))
}

fn cat_matches<T: Val>(values: &[T], text: &[u8]) -> bool {
    let text = String::from_utf8_lossy(text);
    let lines: Vec<&str> = if text.is_empty() {
        Vec::new()
    } else {
        text.split('\n').collect()
    };
    lines.len() == values.len() && values.iter().zip(&lines).all(|(v, t)| v.cat_is(t))
}

macro_rules! by_type {
    ($ty:expr, $f:ident, $($arg:expr),*) => {
        match $ty {
            0 => $f::<i8>($($arg),*),
            1 => $f::<i16>($($arg),*),
            2 => $f::<i32>($($arg),*),
            3 => $f::<i64>($($arg),*),
            4 => $f::<u8>($($arg),*),
            5 => $f::<u16>($($arg),*),
            6 => $f::<u32>($($arg),*),
            7 => $f::<u64>($($arg),*),
            8 => $f::<f32>($($arg),*),
            9 => $f::<f64>($($arg),*),
            _ => $f::<Rec>($($arg),*),
        }
    };
}

/// Runs `check` on `cases` cases of (element type, seed), collecting every failure (each
/// saved with its file) rather than stopping at the first, then fails naming them all.
fn run_cases(name: &str, cases: u32, check: impl Fn(u8, u64) -> Result<(), String>) {
    use proptest::test_runner::{Config, TestRunner};
    // A fixed seed unless EVERY_PATH_SEED gives one: a failure is reproduced by rerunning.
    let seed: u64 = std::env::var("EVERY_PATH_SEED")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(32);
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            max_shrink_iters: 0,
            ..Config::default()
        },
        proptest::test_runner::TestRng::from_seed(
            proptest::test_runner::RngAlgorithm::ChaCha,
            &seed_bytes,
        ),
    );
    let failures = std::cell::RefCell::new(Vec::new());
    let started = std::time::Instant::now();
    runner
        .run(&(0u8..11, any::<u64>()), |(ty, seed)| {
            if let Err(e) = check(ty, seed) {
                failures.borrow_mut().push(e);
            }
            Ok(())
        })
        .expect("the runner runs");
    let failures = failures.into_inner();
    if let Err(why) = python_server() {
        eprintln!("every_path {name}: SKIPPED the Python paths: {why}");
    }
    match ra_binary() {
        Some(ra) => eprintln!("every_path {name}: the ra paths ran {}", ra.display()),
        None => eprintln!(
            "every_path {name}: SKIPPED the ra paths: no ra binary next to this test's folder \
             (build it: cargo build -p rawarray-cli)"
        ),
    }
    eprintln!(
        "every_path {name}: {cases} cases (EVERY_PATH_SEED={seed}) in {:.1?}, {} failing",
        started.elapsed(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {cases} cases fail:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Property 1: every path gives the values written, for every storage kind.
#[test]
fn every_path_returns_the_values_written() {
    let cases = std::env::var("EVERY_PATH_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    run_cases("values", cases, |ty, seed| {
        by_type!(ty, check_all_paths, seed)
    });
}

// ---------------------------------------------------------------------------------------------
// Property 2.

/// CRC-32 (IEEE, zlib's), written here from its definition.
fn crc32(parts: &[&[u8]]) -> u32 {
    let mut c = !0u32;
    for p in parts {
        for &b in *p {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 == 1 {
                    (c >> 1) ^ 0xedb8_8320
                } else {
                    c >> 1
                };
            }
        }
    }
    !c
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Where a byte of a file lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// The header (no checksum).
    Header,
    /// The data of a plain or whole-LZ4 file (no checksum).
    Data,
    /// A version 2 config's fields and CRC (doc/chunked.md 5.1).
    Config,
    /// Its 64 segment slots.
    Slots,
    /// Index segment 0's entries (5.4).
    Index,
    /// A coded chunk's block table (5.5).
    BlockTable,
    /// A chunk's block payloads, or a raw chunk's bytes.
    Payload,
}

/// A chunk's stored bytes, located from the spec's layout (file offsets).
struct Chunk {
    number: u64,
    entry: usize,
    stored: Range<usize>,
    table: usize,
    raw: bool,
}

/// A version 2 chunked file's parts, read from its bytes as doc/chunked.md section 5 lays
/// them out: (part, file byte range), and its chunks.
struct V2Layout {
    parts: Vec<(Part, Range<usize>)>,
    chunks: Vec<Chunk>,
    entry_len: usize,
}

fn v2_layout(file: &[u8]) -> V2Layout {
    let ndims = u64_at(file, 40) as usize;
    let base = 48 + 8 * ndims;
    let dims: Vec<u64> = (0..ndims).map(|i| u64_at(file, 48 + 8 * i)).collect();
    let size = u64_at(file, 32) as usize;
    if file.len() < base + size {
        save_failure(
            "v2-layout",
            file,
            "v2_layout: the file is shorter than its header says",
        );
        panic!(
            "v2_layout: {} bytes, header + size {}",
            file.len(),
            base + size
        );
    }
    let c = &file[base..base + size];
    assert_eq!(&c[..8], b"RACHUNK2", "a version 2 config");
    assert_eq!(u64_at(c, 32) as usize, ndims);
    let f = u32_at(c, 16) as usize;
    let s0 = u64_at(c, 24) as usize;
    let chunk: Vec<u64> = (0..ndims).map(|i| u64_at(c, 40 + 8 * i)).collect();
    let block: Vec<u64> = (0..ndims)
        .map(|i| u64_at(c, 40 + 8 * ndims + 8 * i))
        .collect();
    let s = u32_at(c, 40 + 16 * ndims + 8 * f) as usize;
    let mut t = 0usize;
    for k in 0..s {
        let field = 48 + 16 * ndims + 8 * f + 16 * k;
        let eltype = u16::from_le_bytes([c[field + 8], c[field + 9]]);
        let width = u16::from_le_bytes([c[field + 10], c[field + 11]]) as usize;
        let m = if eltype == 4 { 0 } else { width };
        t += 8 + (2 * m).div_ceil(8) * 8;
    }
    let p = 48 + 16 * ndims + 8 * f + 16 * s;
    assert_eq!(
        crc32(&[&c[..p]]),
        u32_at(c, p),
        "the config CRC as the spec says"
    );
    let seg0 = u64_at(c, p + 8) as usize;
    assert_eq!(seg0, p + 1032, "segment 0 follows the config");
    let e = 32 + t;
    let mut parts = vec![
        (Part::Header, 0..base),
        (Part::Config, base..base + p + 8),
        (Part::Slots, base + p + 8..base + p + 1032),
    ];
    // Segment 0 is read only where it lies wholly inside the section (doc/chunked.md 4): an
    // array with a 0 dim has S0 = 1 and no segment bytes.
    let s0 = if seg0 + s0 * e <= size { s0 } else { 0 };
    if s0 > 0 {
        parts.push((Part::Index, base + seg0..base + seg0 + s0 * e));
    }
    let mut chunks = Vec::new();
    for k in 0..s0 {
        let entry = base + seg0 + k * e;
        let en = &file[entry..entry + e];
        if en.iter().all(|&b| b == 0) {
            continue;
        }
        let crc = crc32(&[&en[..24], &(k as u64).to_le_bytes()]);
        assert_eq!(
            crc,
            u32_at(en, 24),
            "chunk {k}'s entry CRC as the spec says"
        );
        let (off, len, flags) = (
            u64_at(en, 0) as usize,
            u64_at(en, 8) as usize,
            u32_at(en, 20),
        );
        let stored = base + off..base + off + len;
        assert_eq!(
            crc32(&[&file[stored.clone()]]),
            u32_at(en, 16),
            "chunk {k}'s CRC"
        );
        let raw = flags & 1 == 1;
        // The chunk's extent, then its blocks (5.5).
        let (mut rest, mut blocks) = (k as u64, 1u64);
        for i in 0..ndims {
            let grid = dims[i].div_ceil(chunk[i]);
            let at = rest % grid;
            rest /= grid;
            let extent = if flags & 2 == 2 && i + 1 == ndims {
                chunk[i]
            } else {
                chunk[i].min(dims[i] - at * chunk[i])
            };
            blocks *= extent.div_ceil(block[i]);
        }
        let table = if raw { 0 } else { 12 * blocks as usize };
        if table > 0 {
            parts.push((Part::BlockTable, stored.start..stored.start + table));
        }
        if len > table {
            parts.push((Part::Payload, stored.start + table..stored.end));
        }
        chunks.push(Chunk {
            number: k as u64,
            entry,
            stored,
            table,
            raw,
        });
    }
    V2Layout {
        parts,
        chunks,
        entry_len: e,
    }
}

/// Tallies of property 2, printed at its end.
#[derive(Debug, Default)]
struct FlipStats {
    cases: usize,
    /// Header flips of chunked files to more than 1 MiB of elements, not read.
    huge: usize,
    by_part: std::collections::BTreeMap<String, (usize, usize, usize)>,
}

thread_local! {
    static FLIPS: std::cell::RefCell<FlipStats> = std::cell::RefCell::new(FlipStats::default());
}

fn decode<T: Val>(le_bytes: &[u8]) -> Vec<T> {
    le_bytes
        .chunks(T::ELBYTE)
        .map(|b| T::read_le(b).expect("values read back decode"))
        .collect()
}

fn check_flip<T: Val>(seed: u64) -> Result<(), String> {
    let mut rng = Rng(seed);
    let checksummed = rng.chance(70);
    let mut case = draw_case::<T>(&mut rng);
    for _ in 0..200 {
        let fits = if checksummed {
            case.is_chunked_v2()
        } else {
            matches!(case.storage, Storage::Plain | Storage::Lz4Whole) || case.is_chunked_v2()
        };
        if fits {
            break;
        }
        case = draw_case::<T>(&mut rng);
    }
    if checksummed && !case.is_chunked_v2() {
        return Ok(()); // not drawn in 200 tries: no case (rare)
    }
    let n: u64 = case.dims.iter().product();
    let values: Vec<T> = (0..n).map(|i| T::draw(&mut rng, case.mode, i)).collect();
    let a = RawArray::from_shape_vec(case.dims.clone(), values.clone()).expect("shape");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("a.ra");
    write_case(&path, &a, &case.options()).map_err(|e| format!("write {case:?}: {e}"))?;
    let mut file = std::fs::read(&path).expect("read");
    let original = file.clone();
    let ndims = case.dims.len();
    let base = 48 + 8 * ndims;
    let size = u64_at(&file, 32) as usize;

    // Where to flip.
    let (part, at, mut fixed) = if checksummed {
        let layout = v2_layout(&file);
        let mut parts: Vec<&(Part, Range<usize>)> = layout
            .parts
            .iter()
            .filter(|(p, r)| *p != Part::Header && !r.is_empty())
            .collect();
        // Half the time, the bytes of a coded chunk (a block table or payloads), where a fixed
        // up CRC leaves only the block CRCs to catch the flip.
        let coded: Vec<&(Part, Range<usize>)> = parts
            .iter()
            .copied()
            .filter(|(_, r)| {
                layout
                    .chunks
                    .iter()
                    .any(|c| !c.raw && c.stored.contains(&r.start))
            })
            .collect();
        if !coded.is_empty() && rng.chance(50) {
            parts = coded;
        }
        let (part, range) = parts[rng.below(parts.len() as u64) as usize].clone();
        let at = range.start + rng.below((range.end - range.start) as u64) as usize;
        file[at] ^= 1 + rng.below(255) as u8;
        // In half the cases a coded chunk's CRC and entry CRC are made to hold again.
        let mut fixed = false;
        if rng.chance(50) {
            if let Some(c) = layout
                .chunks
                .iter()
                .find(|c| c.stored.contains(&at) && !c.raw)
            {
                let crc = crc32(&[&file[c.stored.clone()]]);
                file[c.entry + 16..c.entry + 20].copy_from_slice(&crc.to_le_bytes());
                let k = c.number.to_le_bytes();
                let ecrc = crc32(&[&file[c.entry..c.entry + 24], &k]);
                file[c.entry + 24..c.entry + 28].copy_from_slice(&ecrc.to_le_bytes());
                if layout.entry_len > 32 && u32_at(&file, c.entry + 28) != 0 {
                    let scrc = crc32(&[
                        &file[c.entry + 32..c.entry + layout.entry_len],
                        &file[c.entry..c.entry + 24],
                        &k,
                    ]);
                    file[c.entry + 28..c.entry + 32].copy_from_slice(&scrc.to_le_bytes());
                }
                let _ = c.table;
                fixed = true;
            }
        }
        (part, at, fixed)
    } else {
        let data = matches!(case.storage, Storage::Plain | Storage::Lz4Whole)
            && size > 0
            && rng.chance(60);
        let (part, range) = if data {
            (Part::Data, base..base + size)
        } else {
            (Part::Header, 0..base)
        };
        let at = range.start + rng.below((range.end - range.start) as u64) as usize;
        file[at] ^= 1 + rng.below(255) as u8;
        (part, at, false)
    };
    if !checksummed {
        fixed = false;
    }
    std::fs::write(&path, &file).expect("write the flipped file");
    // A flipped dim of a chunked header can make a valid file of a few KiB that reads as MiBs or GiBs of
    // never-written (zero) chunks: every whole path would decode them all. Not read here.
    if let Ok(h) = Header::decode_any(&file) {
        if h.flags.is_chunked() && h.data_len() > 1 << 20 {
            FLIPS.with(|s| s.borrow_mut().huge += 1);
            return Ok(());
        }
    }

    let ra = ra_binary();
    // A flipped dim is what the file now says: every path is held to it (a flip of ndims
    // moves the data and leaves the drawn dims).
    let mut read_case = case.clone();
    if let Ok(h) = Header::decode_any(&file) {
        if h.dims.len() == case.dims.len() {
            read_case.dims = h.dims;
        }
    }
    let reads = read_every_path::<T>(&path, &read_case, ra.as_deref());
    let want = le(&values);
    let want_raw = all_bytes(&values, case.big_endian);
    let want_box = le(&cut_of(&values, &case.dims, &case.cut));
    let mut wrong = Vec::new();
    let all = reads.typed.iter().chain(&reads.raw).chain(&reads.boxes);
    let (errs, oks) = all.clone().fold(
        (0, 0),
        |(e, o), (_, r)| if r.is_err() { (e + 1, o) } else { (e, o + 1) },
    );

    if checksummed {
        // The original values or an error, never a third answer.
        for (name, got) in &reads.typed {
            if let Ok(b) = got {
                let same = if name.starts_with("ra cat") {
                    cat_matches(&values, b)
                } else {
                    *b == want
                };
                if !same {
                    wrong.push(format!("  {name}: {} (other values)", show(got)));
                }
            }
        }
        for (name, got) in &reads.raw {
            if matches!(got, Ok(b) if *b != want_raw) {
                wrong.push(format!("  {name}: {} (other bytes)", show(got)));
            }
        }
        for (name, got) in &reads.boxes {
            if matches!(got, Ok(b) if *b != want_box) {
                wrong.push(format!("  {name}: {} (other values)", show(got)));
            }
        }
    } else {
        // No checksum: all paths agree with each other.
        let untyped_text =
            |name: &str| name.starts_with("ra cat") || name.starts_with("ra convert");
        let strict: Vec<&(&str, Outcome)> = reads
            .typed
            .iter()
            .filter(|(n, _)| !untyped_text(n))
            // serde refuses to make more than 1024 empty sequences out of a file of no data (a
            // flipped dim of an empty array): its allocation bound, which the input does not
            // justify passing. It is held to nothing else here.
            .filter(|(n, r)| {
                !(n.starts_with("serde")
                    && matches!(r, Err(e) if e.contains("empty sequences but the file holds no data")))
            })
            .collect();
        let first = &strict[0].1;
        for (name, got) in &strict {
            if got.is_ok() != first.is_ok() || (got.is_ok() && got != first) {
                wrong.push(format!(
                    "  {name}: {} but {}: {}",
                    show(got),
                    strict[0].0,
                    show(first)
                ));
            }
        }
        let raw0 = &reads.raw[0];
        for (name, got) in &reads.raw {
            if got.is_ok() != raw0.1.is_ok() || (got.is_ok() && *got != raw0.1) {
                wrong.push(format!(
                    "  {name}: {} but {}: {}",
                    show(got),
                    raw0.0,
                    show(&raw0.1)
                ));
            }
        }
        match first {
            Ok(v) => {
                let got_values = decode::<T>(v);
                if raw0.1.is_err() {
                    wrong.push(format!(
                        "  {}: {} but typed reads succeed",
                        raw0.0,
                        show(&raw0.1)
                    ));
                }
                for (name, got) in reads.typed.iter().filter(|(n, _)| untyped_text(n)) {
                    let same = match got {
                        Ok(b) if name.starts_with("ra cat") => cat_matches(&got_values, b),
                        Ok(b) => b == v,
                        Err(_) => false,
                    };
                    if !same {
                        wrong.push(format!(
                            "  {name}: {} but {}: {}",
                            show(got),
                            strict[0].0,
                            show(first)
                        ));
                    }
                }
                // The box of the values read, or, past the dims the file now says, an error.
                let inside = case
                    .cut
                    .iter()
                    .zip(&read_case.dims)
                    .all(|(r, &d)| r.end <= d);
                let cut = inside.then(|| le(&cut_of(&got_values, &read_case.dims, &case.cut)));
                for (name, got) in &reads.boxes {
                    let agrees = match (&cut, got) {
                        (Some(c), Ok(b)) => b == c,
                        (None, Err(_)) => true,
                        _ => false,
                    };
                    if !agrees {
                        let cut = cut
                            .clone()
                            .ok_or_else(|| "the box lies past the dims".to_string());
                        wrong.push(format!(
                            "  {name}: {} but the whole reads give {}",
                            show(got),
                            show(&cut)
                        ));
                    }
                }
            }
            Err(_) if raw0.1.is_err() => {
                // Unreadable: every whole path says so.
                for (name, got) in reads.typed.iter().filter(|(n, _)| untyped_text(n)) {
                    if got.is_ok() {
                        wrong.push(format!(
                            "  {name}: {} but every whole read fails ({})",
                            show(got),
                            show(first)
                        ));
                    }
                }
                // A box may be read where the damage lies past it: a whole-LZ4 block is decoded
                // only as far as the box's last byte (Section::read_box), and an empty box
                // reads nothing. Otherwise the box paths fail too; and they agree.
                let may_read = case.cut.iter().any(Range::is_empty)
                    || (part == Part::Data && matches!(case.storage, Storage::Lz4Whole));
                let b0 = &reads.boxes[0];
                for (name, got) in &reads.boxes {
                    if (got.is_ok() && !may_read)
                        || got.is_ok() != b0.1.is_ok()
                        || (got.is_ok() && *got != b0.1)
                    {
                        wrong.push(format!(
                            "  {name}: {} but every whole read fails ({}), and {}: {}",
                            show(got),
                            show(first),
                            b0.0,
                            show(&b0.1)
                        ));
                    }
                }
            }
            Err(_) => {} // readable, but not as T (a flipped eltype or elbyte): the untyped paths agree above
        }
    }

    FLIPS.with(|s| {
        let mut s = s.borrow_mut();
        s.cases += 1;
        let key = format!("{part:?}{}", if fixed { " (CRC fixed up)" } else { "" });
        let e = s.by_part.entry(key).or_default();
        e.0 += 1;
        if oks == 0 {
            e.1 += 1; // every path refused
        } else if errs == 0 {
            e.2 += 1; // every path read
        }
    });
    if wrong.is_empty() {
        return Ok(());
    }
    let note = format!(
        "{} seed {seed:#x}: {case:?}\nbyte {at} ({part:?}, CRC fixed up: {fixed}) flipped from {:#04x} to {:#04x}\n\
         original values {}\nthese paths disagree:\n{}",
        std::any::type_name::<T>(),
        original[at],
        file[at],
        show(&Ok(want)),
        wrong.join("\n")
    );
    Err(save_failure(
        &format!(
            "p2-{}-{seed:016x}",
            std::any::type_name::<T>().rsplit("::").next().unwrap()
        ),
        &file,
        &note,
    ))
}

/// Property 2: one flipped byte gives the original values or an error (checksummed parts), or
/// the same answer on every path (parts without a checksum).
#[test]
fn a_flipped_byte_gives_the_values_or_an_error_never_a_third_answer() {
    let cases = std::env::var("EVERY_PATH_FLIPS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(96);
    let result = std::panic::catch_unwind(|| {
        run_cases("flips", cases, |ty, seed| by_type!(ty, check_flip, seed));
    });
    FLIPS.with(|s| {
        let s = s.borrow();
        eprintln!(
            "every_path flips: {} cases read, {} chunked headers flipped to > 1 MiB not read (part: cases, all paths refused, all paths read)",
            s.cases, s.huge
        );
        for (k, v) in &s.by_part {
            eprintln!("  {k}: {v:?}");
        }
    });
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// Cases found by the properties, kept so that each runs whatever the seed: a big-endian record
/// array stored as one LZ4 block cut by `ra slice` (values check), and an empty whole-LZ4
/// array whose one-byte block is damaged (flip check).
#[test]
fn cases_found_by_the_properties() {
    let mut failures = Vec::new();
    failures.extend(check_all_paths::<Rec>(0xcda7_c152_cc41_9857).err());
    failures.extend(check_flip::<i32>(0x2cc3_7324_d70f_88a6).err());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
