//! The RawArray (`.ra`) file format for Rust.
//!
//! A `.ra` file is a small header of little-endian `u64`s (magic, flags, eltype, elbyte, size,
//! ndims, dims) followed by the array's bytes in column-major order, then optional trailing
//! bytes that readers ignore. This crate reads and writes it as:
//!
//! - typed n-d arrays, [`RawArray<T>`] for any [`Element`] (one-copy reads and writes for
//!   plain-old-data elements), and the dynamically typed [`DynArray`];
//! - the validated [`Header`] with its [`ElType`] table and numpy dtype names.
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
mod data;
mod element;
mod error;
mod fileio;
mod header;
mod mapped;
#[cfg(feature = "ndarray")]
mod ndarray;
mod records;
mod trailer;

pub use array::{DynArray, RawArray, WriteOptions};
pub use element::{Element, Field, Layout};
pub use error::{Category, Error, ErrorKind, Result};
pub use header::{
    numpy_dtype, numpy_dtype_or_reason, type_label, ElType, Flags, Header, FIXED_HEADER_LEN,
    LZ4_MAX_INPUT, MAGIC,
};
pub use records::{recover, Durability, RecordOptions, RecordReader, RecordWriter, Recovery};
pub use trailer::{Trailer, TRAILER_FRAME, TRAILER_TAG};

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
