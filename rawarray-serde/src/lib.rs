//! The RawArray (`.ra`) file format for Rust: n-d arrays and records stored as a small header
//! and the raw bytes, readable from numpy, Julia, C and Matlab without this crate.
//!
//! A `.ra` file is a header of little-endian `u64`s (magic, flags, eltype, elbyte, size, ndims,
//! dims) followed by the array's bytes in column-major order (the first dim varies fastest),
//! then optional trailing bytes that readers ignore. Every field is validated before use.
//!
//! # What is here
//!
//! | job | start at | for |
//! |---|---|---|
//! | typed arrays | [`RawArray<T>`], [`WriteOptions`] | n-d arrays of any [`Element`]: one-copy reads and writes, any codec and filter pipeline, either byte order |
//! | dynamic arrays | [`DynArray`], [`Header`], [`ElType`] | files whose type is known only at run time (tools, converters) |
//! | serde | [`to_writer`], [`to_vec`], [`to_file`], [`from_reader`], [`from_slice`], [`from_file`] | the types you already have, by the [mapping below](#the-serde-mapping) |
//! | the derive | [`RaRecord`](derive@RaRecord) | packed fixed-size records whose size (`ELBYTE`) is known at compile time |
//! | record files | [`RecordWriter`], [`RecordOptions`], [`RecordReader`], [`recover`] | appending records while a simulation runs; reading them through a memory map |
//! | ragged rows and text | [`Ragged`], [`RaggedWriter`], [`RaggedReader`] | rows of different lengths (strings, particle lists) |
//! | blocks of a file | [`ArrayReader`], [`ArrayWriter`], [`ArrayWriterOptions`], [`subset`]; `StoreArrayReader` (feature `object_store`) | reading one n-d block (positioned reads, a map, or object storage), many threads and processes writing disjoint blocks of one array |
//! | compression | [`Codec`], [`Filter`], [`codec`] (the codec table), [`section`] (every storage kind behind one type) | what a chunked file may hold, and reading any data section the same way |
//! | the trailer | [`Trailer`] | parameters, units and the record schema stored after the data |
//! | `ndarray` (feature) | `RawArray::into_ndarray`, `RawArray::from_ndarray` | `ndarray::ArrayD` in Fortran order, moved without a copy |
//! | errors | [`Error`], [`ErrorKind`], [`error`] | every error names the field, what was expected and what was found |
//! | the element-type table | [`eltype`]: [`ElType`], [`eltype::ScalarType`], [`eltype::ScalarValue`] | every scalar a file can hold, written once: Rust type, eltype, elbyte, numpy name |
//! | for tools and bindings | [`numpy`] (dtype and shape names), [`atomic`] (replacing a file safely), [`header`], [`trailer`], [`layout`] (the format's constants and limits), [`io`] (positioned reads, one state of a file), [`de`] (the deserializer's inputs) | what the `ra` tool and the Python package build on |
//!
//! The element types (`Complex`, `f16`, `bf16` are re-exported, so no other crate is needed):
//!
//! | Rust | eltype | elbyte |
//! |---|---|---|
//! | `i8`..`i128` | 1 | 1..16 |
//! | `u8`..`u128`, `bool`, `char` | 2 | 1..16, 1, 4 |
//! | [`f16`](struct@f16), `f32`, `f64` | 3 | 2, 4, 8 |
//! | [`Complex`]`<f16/f32/f64>` | 4 | 4, 8, 16 |
//! | [`bf16`] | 5 | 2 |
//! | `[T; N]` | T's | T's (one more dim) |
//! | `#[derive(RaRecord)]` structs | 0 | packed size of the fields |
//!
//! # Typed arrays
//!
//! ```
//! use rawarray_serde::RawArray;
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("a.ra");
//! let a = RawArray::from_shape_vec(vec![3, 2], (0..6).map(|i| i as f64).collect()).unwrap();
//! a.write_file(&path).unwrap();                      // atomic: temporary file, sync, rename
//! let b: RawArray<f64> = RawArray::read_file(&path).unwrap();
//! assert_eq!(b.get(&[2, 1]), Some(&5.0));            // column-major: [i, j] is i + 3 j
//! ```
//!
//! # Dynamic arrays
//!
//! ```
//! use rawarray_serde::{DynArray, ElType, RawArray, WriteOptions};
//! let a = RawArray::from_vec(vec![1u16, 2, 3]);
//! let mut bytes = Vec::new();
//! a.write_to_with(&mut bytes, &WriteOptions::new().big_endian(true)).unwrap();
//! let d = DynArray::from_bytes(&bytes).unwrap();
//! assert_eq!((d.header().eltype, d.header().elbyte), (ElType::Uint, 2));
//! assert_eq!(d.data(), &[1, 0, 2, 0, 3, 0]);         // handed out little-endian
//! ```
//!
//! # serde
//!
//! ```
//! let points = vec![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
//! let bytes = rawarray_serde::to_vec(&points).unwrap();
//! assert_eq!(rawarray_serde::Header::decode(&bytes).unwrap().dims, [3, 2]); // numpy: (2, 3)
//! let back: Vec<[f32; 3]> = rawarray_serde::from_slice(&bytes).unwrap();
//! assert_eq!(back, points);
//! ```
//!
//! # The derive and record files
//!
//! ```
//! use rawarray_serde::{RaRecord, RecordReader, RecordWriter};
//!
//! #[derive(RaRecord, Clone, Debug, PartialEq)]
//! struct Sample { step: u64, position: [f32; 3] }
//! const _: () = assert!(Sample::ELBYTE == 20);      // packed: no padding
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("run.ra");
//! let mut w: RecordWriter<Sample> = RecordWriter::create(&path, serde_json::json!({"dt": 0.1})).unwrap();
//! for step in 0..3 {
//!     w.append(&Sample { step, position: [0.0, 1.0, step as f32] }).unwrap();
//!     w.flush().unwrap();                            // commit: readers see the records
//! }
//! w.finish().unwrap();
//! let r = RecordReader::<Sample>::open(&path).unwrap();
//! assert_eq!(r.get(2).unwrap().unwrap().position, [0.0, 1.0, 2.0]);
//! assert_eq!(r.trailer().unwrap().params["dt"], 0.1); // the trailer: stored with the data
//! ```
//!
//! # The serde mapping
//!
//! How each Rust value is stored (the same table is in the repository's README):
//!
#![doc = include_str!("../doc/serde-mapping.md")]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_op_in_unsafe_fn)]

mod array;
pub mod atomic;
mod bulk;
pub mod codec;
mod data;
pub mod de;
mod element;
pub mod eltype;
pub mod error;
mod fileio;
pub mod header;
pub mod io;
mod journal;
pub mod layout;
mod lock;
mod mapped;
mod mapwrite;
mod memory;
#[cfg(feature = "ndarray")]
mod ndarray;
pub mod numpy;
pub mod options;
pub mod query;
pub mod ragged;
mod ragged_serde;
mod reader;
pub mod records;
mod recovery;
pub mod section;
mod ser;
pub mod sniff;
#[cfg(feature = "object_store")]
#[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
pub mod store;
pub mod subset;
mod target;
mod temp;
pub mod time;
pub mod trailer;
mod writer;

// The crate root holds the one call of each job (the table above) and the types they need;
// the rest lives in its module.
pub use array::{DynArray, RawArray};
pub use codec::{Codec, Filter};
pub use de::Deserializer;
pub use element::Element;
pub use eltype::ElType;
pub use error::{Error, ErrorKind, Result};
pub use header::Header;
pub use mapped::{RecordQuery, RecordReader};
pub use options::WriteOptions;
pub use ragged::{Ragged, RaggedReader, RaggedWriter};
pub use reader::ArrayReader;
pub use records::{recover, RecordOptions, RecordWriter};
pub use ser::Serializer;
#[cfg(feature = "object_store")]
pub use store::StoreArrayReader;
pub use trailer::Trailer;
pub use writer::{ArrayWriter, ArrayWriterOptions};

// Names that lived at the root before the job table: kept one release, hidden. Each is where
// its module says.
#[doc(hidden)]
pub use codec::Shuffle;
#[doc(hidden)]
pub use de::read;
#[doc(hidden)]
pub use error::Category;
#[doc(hidden)]
pub use header::Flags;
#[doc(hidden)]
pub use layout::{Field, Layout, Logical, SchemaCheck};
#[doc(hidden)]
pub use mapped::{ReadMode, RecordReadOptions};
#[doc(hidden)]
pub use ragged::{RaggedHeader, RaggedOptions};
#[doc(hidden)]
pub use reader::IoStats;
#[doc(hidden)]
pub use records::{
    recover_with, Durability, DynRecordWriter, ElementSpec, RecoverOptions, Recovery,
};
#[doc(hidden)]
pub use subset::{Runs, SubsetPlan};

/// The half-precision floats of eltypes 3 (`f16`) and 5 (`bf16`) (from `half`), re-exported.
pub use half::{bf16, f16};
/// The complex type of eltype 4 elements (from `num-complex`), re-exported so that users need
/// no other crate for the types in this crate's signatures.
pub use num_complex::Complex;

use std::io::{Read, Write};
use std::path::Path;

/// Serializes `value` as a `.ra` file into `writer`, streaming: the header is written as soon
/// as the shape is known from the first element, then the elements.
///
/// ```
/// let mut out = Vec::new();
/// rawarray_serde::to_writer(&mut out, &vec![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]).unwrap();
/// let h = rawarray_serde::Header::decode(&out).unwrap();
/// assert_eq!(h.dims, [3, 2]); // numpy sees shape (2, 3)
/// ```
///
/// A writer gets the header, then the data in chunks of about 256 KiB, so a `File` needs no
/// `BufWriter`. What the header needs must come first: a top-level sequence that does not tell
/// its length, or a value that is not a sequence, is held whole until it ends. A writer that is
/// exactly `&mut Vec<u8>` gets the file appended in place, with no staging copy, and if
/// serializing fails (or a `Serialize` impl panics) it keeps only the bytes it had; any other
/// writer may have received part of the file before an error.
// The value's type is the only generic parameter, so that `to_writer::<T>(...)` names it
// alone; the writer is `impl Write`.
pub fn to_writer<T: serde::Serialize + ?Sized>(mut writer: impl Write, value: &T) -> Result<()> {
    if let Some(vec) = bulk::vec_writer(&mut writer) {
        return append_or_ragged(vec, value);
    }
    let mut ser = Serializer::new(writer);
    value.serialize(&mut ser)?;
    ser.finish()?;
    Ok(())
}

/// Serializes `value` as the bytes of a `.ra` file.
///
/// ```
/// let bytes = rawarray_serde::to_vec("hello").unwrap();
/// assert_eq!(&bytes[48 + 8..], b"hello"); // uint8, dims [5]
/// ```
pub fn to_vec<T: serde::Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    append_or_ragged(&mut out, value)?;
    Ok(out)
}

/// Appends `value`'s file to `vec`: a rectangular array, or, for a sequence of rows of
/// different lengths (`Vec<Vec<T>>`, `Vec<String>`), a ragged file (doc/format.md, section 10).
fn append_or_ragged<T: serde::Serialize + ?Sized>(vec: &mut Vec<u8>, value: &T) -> Result<()> {
    let err = match ser::append_in_place(vec, value) {
        Err(e) if matches!(e.kind(), ErrorKind::NotRectangular { index, field: None, .. } if index.len() == 1) => {
            e
        }
        done => return done,
    };
    let bytes = ragged_serde::to_ragged_vec(value).ok_or(err)?;
    vec.extend_from_slice(&bytes);
    Ok(())
}

/// Serializes `value` into a file, atomically: on any error (a ragged sequence found half-way,
/// a full disk) the file at `path` keeps its old content and no temporary file is left.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("v.ra");
/// rawarray_serde::to_file(&path, &vec![1u8, 2, 3]).unwrap();
/// let v: Vec<u8> = rawarray_serde::from_file(&path).unwrap();
/// assert_eq!(v, [1, 2, 3]);
/// ```
pub fn to_file<T: serde::Serialize + ?Sized>(path: impl AsRef<Path>, value: &T) -> Result<()> {
    match atomic::write_atomic(path.as_ref(), |w| to_writer(w, value)) {
        Err(e) if matches!(e.kind(), ErrorKind::NotRectangular { index, field: None, .. } if index.len() == 1) =>
        {
            let bytes = ragged_serde::to_ragged_vec(value).ok_or(e)?;
            atomic::write_atomic(path.as_ref(), |w| w.write_all(&bytes).map_err(Error::from))
        }
        done => done,
    }
}

/// Deserializes a value from the bytes of a `.ra` file; `&str` and `&[u8]` borrow from them.
///
/// ```
/// let bytes = rawarray_serde::to_vec("hello").unwrap();
/// let s: &str = rawarray_serde::from_slice(&bytes).unwrap();
/// assert_eq!(s, "hello");
/// ```
pub fn from_slice<'de, T: serde::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T> {
    if section::Holds::of_head(bytes) == section::Holds::Rows {
        return ragged_serde::from_ragged_slice(bytes);
    }
    let mut de = Deserializer::from_slice(bytes)?;
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Deserializes a value from a stream holding a `.ra` file, read as the value asks for it
/// through a reused window of 64 KiB; a `Vec` of plain scalars is read straight into its
/// memory. No `BufReader` is needed. A stream is read once, front to back: for a file that a
/// writer may be appending to, use [`from_file`], which reads the header until two reads agree
/// and decodes compressed data against the header that covers it.
///
/// ```
/// let bytes = rawarray_serde::to_vec(&vec![vec![1u16, 2], vec![3, 4]]).unwrap();
/// let v: Vec<Vec<u16>> = rawarray_serde::from_reader(&bytes[..]).unwrap();
/// assert_eq!(v, [[1, 2], [3, 4]]);
/// ```
pub fn from_reader<T: serde::de::DeserializeOwned>(mut reader: impl Read) -> Result<T> {
    let mut head = [0u8; 16];
    let got = header::read_full(&mut reader, &mut head)?;
    if section::Holds::of_head(&head[..got]) == section::Holds::Rows {
        // A ragged file is read whole: its bytes cost no more than the stream holds.
        let mut bytes = head[..got].to_vec();
        reader.read_to_end(&mut bytes)?;
        return ragged_serde::from_ragged_slice(&bytes);
    }
    let mut de = Deserializer::from_reader((&head[..got]).chain(reader))?;
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// [`from_file`] of a ragged file: its rows read through one positioned reader (the header
/// read until two reads agree; compressed values through the pinned section, which re-reads a
/// header its writer grew), written out whole, then deserialized. Never decoded from one copy
/// of the file: a writer appending commits its header with one `pwrite`, which a concurrent
/// `read` of the whole file can tear (doc/chunked.md 7.1).
fn from_ragged_file<T: serde::de::DeserializeOwned>(file: std::fs::File, path: &Path) -> Result<T> {
    let rows = ragged::DynRagged::from_open_file(file, path, ReadMode::Positioned)?;
    let mut bytes = Vec::new();
    rows.write_rows(0..rows.rows(), &mut bytes)?;
    ragged_serde::from_ragged_slice(&bytes)
}

/// [`from_file`] of a file whose data is compressed (LZ4 or chunked): decoded through the
/// library's reader on the file (its header read until two reads agree, chunks of a file a
/// writer is appending to read against the header that covers them, block checksums checked),
/// straight into the one buffer that then holds the plain file (header, data, trailer), from
/// which the value is deserialized: the array is in memory once, not twice.
fn from_coded_file<T: serde::de::DeserializeOwned>(file: std::fs::File, path: &Path) -> Result<T> {
    let reader = ArrayReader::from_open_file(file, path)?;
    let stored = reader.header();
    let mut plain = Header {
        flags: header::Flags::NONE,
        eltype: stored.eltype,
        elbyte: stored.elbyte,
        size: stored.data_len(),
        dims: stored.dims.clone(),
    };
    let head_len = plain.encode().len();
    let data_at = head_len as u64;
    // A header may claim up to 2^64 - 1 plain bytes (a chunked file of chunks never written):
    // the sum saturates, and the allocation refuses what it cannot hold, naming the bytes.
    let data_end = data_at.saturating_add(plain.size);
    let trailer = reader.trailer().map(|t| t.encode_block(data_end));
    let trailer_len = trailer.as_ref().map_or(0, Vec::len) as u64;
    let mut bytes = memory::try_zeroed_bytes(data_end.saturating_add(trailer_len))?;
    let data = &mut bytes[head_len..head_len + plain.size as usize];
    // An empty section is decoded too: damaged, it is refused, not read as nothing.
    reader.section().read_all_into(data)?;
    // Big-endian values are swapped here, in place, as the block reads do; records keep the
    // flag and are swapped by their schema as they are deserialized.
    if stored.is_big_endian() && !data::swap_by_eltype(data, plain.eltype, plain.elbyte) {
        plain.flags = header::Flags::BIG_ENDIAN;
    }
    bytes[..head_len].copy_from_slice(&plain.encode());
    if let Some(t) = trailer {
        bytes[head_len + plain.size as usize..].copy_from_slice(&t);
    }
    from_slice(&bytes)
}

/// Deserializes a value from a `.ra` file, as [`from_reader`] does, except that the file's
/// length is known: a data section that does not fit in it is refused before any is read, and
/// a `Vec` of plain scalars is allocated once, then read into.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("s.ra");
/// rawarray_serde::to_file(&path, &2.5f64).unwrap();
/// assert_eq!(rawarray_serde::from_file::<f64>(&path).unwrap(), 2.5);
/// rawarray_serde::to_file(&path, &vec![vec![1.5f32; 3]; 2]).unwrap();
/// assert_eq!(rawarray_serde::from_file::<Vec<Vec<f32>>>(&path).unwrap(), [[1.5; 3]; 2]);
/// ```
///
/// The value's type is the function's only generic parameter (the path is `impl AsRef<Path>`),
/// so `from_file::<T>(path)` names it alone.
pub fn from_file<T: serde::de::DeserializeOwned>(path: impl AsRef<Path>) -> Result<T> {
    fileio::reading(path.as_ref(), |path| {
        let mut file = std::fs::File::open(path)?;
        // A pipe or a device has no length to trust: read as a stream of unknown length.
        let meta = file.metadata()?;
        if meta.is_file() {
            let mut head = [0u8; 16];
            let got = header::read_full(&mut file, &mut head)?;
            if section::Holds::of_head(&head[..got]) == section::Holds::Rows {
                return from_ragged_file(file, path);
            }
            std::io::Seek::rewind(&mut file)?;
            if section::Storage::of(&Header::read_stable_any(&file)?).is_coded() {
                return from_coded_file(file, path);
            }
        }
        let len = meta.is_file().then_some(meta.len());
        let mut de = Deserializer::from_stream(file, len)?;
        let value = T::deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    })
}

mod derived;

// The crate README's example, compiled and run with the doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
struct ReadmeDoctests;

#[cfg(feature = "derive")]
pub use rawarray_derive::RaRecord;

// Lets the code the derive generates name this crate `::rawarray_serde` inside it too.
extern crate self as rawarray_serde;

/// Re-exports used by the code `#[derive(RaRecord)]` generates. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::derived::*;
    pub use bytemuck;
    pub use core;
}
