//! The RawArray (`.ra`) file format for Rust.
//!
//! A `.ra` file is a small header of little-endian `u64`s (magic, flags, eltype, elbyte, size,
//! ndims, dims) followed by the array's bytes in column-major order, then optional trailing
//! bytes that readers ignore. This crate reads and writes it as:
//!
//! - typed n-d arrays, [`RawArray<T>`] for any [`Element`] (one-copy reads and writes for
//!   plain-old-data elements), and the dynamically typed [`DynArray`];
//! - the validated [`Header`] with its [`ElType`] table and numpy dtype names;
//! - a serde data format: [`to_writer`], [`to_vec`], [`to_file`], [`from_reader`],
//!   [`from_slice`], [`from_file`] for any serde type (the mapping is in the README).
//!
//! ```
//! use rawarray_serde::RawArray;
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("a.ra");
//! let a = RawArray::from_shape_vec(vec![3, 2], (0..6).map(|i| i as f64).collect()).unwrap();
//! a.write_file(&path).unwrap();
//! let b: RawArray<f64> = RawArray::read_file(&path).unwrap();
//! assert_eq!(a, b);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_op_in_unsafe_fn)]

mod array;
mod atomic;
mod bulk;
mod data;
mod de;
mod element;
mod error;
mod fileio;
mod header;
mod lock;
mod mapped;
#[cfg(feature = "ndarray")]
mod ndarray;
mod records;
mod ser;
mod target;
mod temp;
mod trailer;

pub use array::{DynArray, RawArray, WriteOptions};
pub use atomic::{write_atomic, AtomicFile, AtomicOptions};
pub use de::Deserializer;
pub use element::{Element, Field, Layout, MAX_LAYOUT_DEPTH};
pub use error::{Category, Error, ErrorKind, Result};
pub use header::{
    numpy_dtype, numpy_dtype_or_reason, numpy_shape, parse_numpy_dtype, type_label, ElType, Flags,
    Header, FIXED_HEADER_LEN, LZ4_MAX_INPUT, MAGIC, MAX_NDIMS,
};
pub use records::{
    recover, recover_with, Durability, ReadMode, RecordOptions, RecordReader, RecordWriter,
    RecoverOptions, Recovery,
};
pub use ser::Serializer;
pub use trailer::{Trailer, TRAILER_FRAME, TRAILER_TAG};

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
/// A writer gets the header, then the data in chunks of about 64 KiB, so a `File` needs no
/// `BufWriter`. What the header needs must come first: a top-level sequence that does not tell
/// its length, or a value that is not a sequence, is held whole until it ends. A writer that is
/// exactly `&mut Vec<u8>` gets the file appended in place, with no staging copy, and if
/// serializing fails (or a `Serialize` impl panics) it keeps only the bytes it had; any other
/// writer may have received part of the file before an error.
pub fn to_writer<W: Write, T: serde::Serialize + ?Sized>(mut writer: W, value: &T) -> Result<()> {
    if let Some(vec) = bulk::vec_writer(&mut writer) {
        return ser::append_in_place(vec, value);
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
    ser::append_in_place(&mut out, value)?;
    Ok(out)
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
pub fn to_file<P: AsRef<Path>, T: serde::Serialize + ?Sized>(path: P, value: &T) -> Result<()> {
    atomic::write_atomic(path.as_ref(), |w| to_writer(w, value))
}

/// Deserializes a value from the bytes of a `.ra` file; `&str` and `&[u8]` borrow from them.
///
/// ```
/// let bytes = rawarray_serde::to_vec("hello").unwrap();
/// let s: &str = rawarray_serde::from_slice(&bytes).unwrap();
/// assert_eq!(s, "hello");
/// ```
pub fn from_slice<'de, T: serde::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T> {
    let mut de = Deserializer::from_slice(bytes)?;
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Deserializes a value from a stream holding a `.ra` file.
///
/// ```
/// let bytes = rawarray_serde::to_vec(&vec![vec![1u16, 2], vec![3, 4]]).unwrap();
/// let v: Vec<Vec<u16>> = rawarray_serde::from_reader(&bytes[..]).unwrap();
/// assert_eq!(v, [[1, 2], [3, 4]]);
/// ```
pub fn from_reader<R: Read, T: serde::de::DeserializeOwned>(reader: R) -> Result<T> {
    let mut de = Deserializer::from_reader(reader)?;
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Deserializes a value from a `.ra` file.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("s.ra");
/// rawarray_serde::to_file(&path, &2.5f64).unwrap();
/// assert_eq!(rawarray_serde::from_file::<_, f64>(&path).unwrap(), 2.5);
/// ```
pub fn from_file<P: AsRef<Path>, T: serde::de::DeserializeOwned>(path: P) -> Result<T> {
    let bytes = std::fs::read(path)?;
    from_slice(&bytes)
}

mod derived;

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
