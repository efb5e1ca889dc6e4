//! RawArray (`.ra`) files as Apache Arrow tables, and conversions to and from Parquet and
//! Arrow IPC.
//!
//! A record file is a table: one row per record (per body per step), one column per field.
//! [`RaTable`] opens a `.ra` file as one and streams its rows as Arrow
//! [`RecordBatch`](arrow_array::RecordBatch)es of a chosen size ([`RaTable::batches`], an
//! Arrow `RecordBatchReader`), with memory bounded by the batch; a plain little-endian array
//! becomes one column whose buffer is the file's memory map, not a copy. The reverse,
//! [`RecordFileWriter`], writes a table of fixed-width columns as records, refusing any other
//! column by name. [`ra_to_parquet`], [`parquet_to_ra`], [`ra_to_ipc`] and [`ipc_to_ra`] are
//! the whole-file conversions `ra convert` runs.
//!
//! The type mapping (bool, float16, bfloat16, complex, 128-bit integers, fixed arrays, nested
//! records, text in `u8` arrays) is in [`schema`] and in `doc/arrow.md`.
//!
//! ```
//! use rawarray_serde::{RaRecord, RecordWriter};
//! #[derive(RaRecord, Clone)]
//! struct Sample { step: u64, ok: bool, z: rawarray_serde::Complex<f32> }
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("run.ra");
//! let mut w = RecordWriter::<Sample>::create(&path, ()).unwrap();
//! w.append(&Sample { step: 7, ok: true, z: rawarray_serde::Complex::new(1.0, -1.0) }).unwrap();
//! w.finish().unwrap();
//!
//! let batch = rawarray_arrow::RaTable::open(&path).unwrap().read_all().unwrap();
//! use arrow_array::cast::AsArray;
//! assert_eq!(batch.column(0).as_primitive::<arrow_array::types::UInt64Type>().value(0), 7);
//! assert!(batch.column(1).as_boolean().value(0));
//! let z = batch.column(2).as_struct();
//! assert_eq!(z.column_by_name("im").unwrap().as_primitive::<arrow_array::types::Float32Type>().value(0), -1.0);
//! ```
#![deny(missing_docs)]

mod columns;
mod convert;
mod error;
mod reader;
pub mod schema;
mod write;

pub use convert::{
    ipc_to_ra, parquet_to_ra, ra_to_ipc, ra_to_parquet, ConvertOptions, ParquetCompression,
};
pub use error::{Error, Result};
pub use reader::{schema_of, BlockSource, RaBatchReader, RaTable, ScanOptions, DEFAULT_BATCH_ROWS};
pub use schema::{arrow_field, arrow_schema, layout_of_field, layout_of_schema, VALUES_COLUMN};
pub use write::RecordFileWriter;

/// The guide `doc/arrow.md`, whose Rust blocks run as this crate's doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../doc/arrow.md")]
pub struct ArrowGuide;
