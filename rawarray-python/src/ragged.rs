//! Ragged arrays (doc/format.md, section 10) written from Python: the library's whole-file
//! layout (`write_ragged`) and its [`RaggedWriter`]; `ragged_file` reads them. Every rule (the
//! header, the offsets, the text marker) is the library's.

use std::path::PathBuf;

use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use rawarray_serde::section::Holds;
use rawarray_serde::{
    bf16, f16, Complex, ElType, Element, Layout, RaggedHeader, RaggedOptions,
    RaggedWriter as LibRaggedWriter,
};

use crate::buffer::input_bytes;
use crate::chunked::{write_options, Packing};
use crate::dtype::element_of;
use crate::errors::{at_path, ra_err, to_py, Doing};
use crate::writers::Held;

/// What the file at `path` holds, by the library's one test ([`Holds`]): `"rows"` (a ragged
/// file) or `"array"` (an n-d array, or a file too short to tell, whose reader reports it).
#[pyfunction]
pub(crate) fn holds(py: Python<'_>, path: PathBuf) -> PyResult<&'static str> {
    match py.detach(|| Holds::of_file(&path)).map_err(to_py)? {
        Holds::Rows => Ok("rows"),
        Holds::Array => Ok("array"),
    }
}

/// The layout of one value: the element's, inside one array per value dim (innermost first,
/// the first dim varying fastest), as the library's `[T; N]` elements are.
fn value_layout(element: Layout, value_dims: &[u64]) -> Layout {
    value_dims.iter().fold(element, |item, &len| Layout::Array {
        len,
        item: Box::new(item),
    })
}

/// Writes a ragged file atomically (a temporary file renamed over `path`): `offsets`
/// (`rows + 1` little-endian `u64`s) into `values` (packed little-endian, values of
/// `descr_json` elements inside `value_dims`). With `text` the rows are UTF-8 (`|u1` values),
/// marked as text. Any of `write`'s chunked keywords (`chunk_values`: values per chunk,
/// `block_values`: values per block)
/// compresses the values (doc/format.md, section 10.2) on `threads` threads, as `write` does
/// an array; the library's `RaggedHeader::write_file` lays the file out and checks it.
#[pyfunction]
#[pyo3(signature = (path, descr_json, value_dims, offsets, values, text=false, codec=None, level=None, shuffle=None, chunk_values=None, threads=0,
                    filters=None, block_values=None, layout_version=None, statistics=None, split=None,
                    stream_crcs=None))]
#[allow(clippy::too_many_arguments)] // the Python keywords, one each
pub(crate) fn write_ragged(
    py: Python<'_>,
    path: PathBuf,
    descr_json: &str,
    value_dims: Vec<u64>,
    offsets: PyBuffer<u8>,
    values: PyBuffer<u8>,
    text: bool,
    codec: Option<&str>,
    level: Option<i32>,
    shuffle: Option<&str>,
    chunk_values: Option<u64>,
    threads: usize,
    filters: Option<Bound<'_, PyAny>>,
    block_values: Option<u64>,
    layout_version: Option<u32>,
    statistics: Option<bool>,
    split: Option<bool>,
    stream_crcs: Option<bool>,
) -> PyResult<()> {
    let (eltype, elbyte, layout) = element_of(descr_json)?;
    let offset_bytes = input_bytes(&offsets, "offsets")?;
    let value_bytes = input_bytes(&values, "values")?;
    if !offset_bytes.len().is_multiple_of(8) || offset_bytes.is_empty() {
        return Err(ra_err(format!(
            "offsets: expected rows + 1 little-endian u64s, found {} bytes",
            offset_bytes.len()
        )));
    }
    let offs: Vec<u64> = offset_bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .collect();
    let rows = offs.len() as u64 - 1;
    let m = offs[offs.len() - 1];
    let header =
        RaggedHeader::new(eltype, elbyte, value_dims.clone(), m, rows, rows + 1).map_err(to_py)?;
    if text && (eltype, elbyte, &layout, value_dims.is_empty()) != (ElType::Uint, 1, &None, true) {
        return Err(ra_err(format!(
            "text rows are bytes of UTF-8 (|u1 values), not {descr_json} values"
        )));
    }
    // `write`'s rule: any of the keywords selects the chunked codecs. The values' chunk shape
    // is whole values, `chunk_values` of them (default: about 1 MiB).
    let whole_values = |n: u64| value_dims.iter().copied().chain([n]).collect();
    let packing = Packing::new(
        codec,
        level,
        shuffle,
        filters.as_ref(),
        chunk_values.map(whole_values),
        block_values.map(whole_values),
        layout_version,
        statistics,
        split,
        stream_crcs,
        threads,
    )?;
    // The library refuses "lz4-whole" (rows are read alone).
    let (storage, _) = write_options(false, &packing)?;
    // The trailer every ragged file gets: the value's schema (doc/format.md, section 10).
    let element = layout.unwrap_or(Layout::scalar(eltype, elbyte));
    let schema = value_layout(element, &value_dims);
    py.detach(|| header.write_file(&path, &offs, value_bytes, schema, text, &storage))
        .map_err(|e| at_path(e, &path, Doing::Writing))
}

/// `bytes` (packed little-endian values of `T`) as values, through the library's element
/// codec: borrowed where they can be, checked where the type has rules (a bool is 0 or 1).
fn append_as<T: Element + Clone>(
    w: &mut LibRaggedWriter<T>,
    bytes: &[u8],
) -> rawarray_serde::Result<()> {
    if let Some(values) = T::cast_pod_slice(bytes) {
        return w.append_row(values);
    }
    let size = T::PACKED_SIZE;
    if size == 0 || !bytes.len().is_multiple_of(size) {
        return Err(rawarray_serde::ErrorKind::Message(format!(
            "a row of {} bytes is not a whole number of {size}-byte values",
            bytes.len()
        ))
        .into());
    }
    let values = bytes
        .chunks_exact(size)
        .map(T::read_le)
        .collect::<rawarray_serde::Result<Vec<T>>>()?;
    w.append_row(&values)
}

/// The library's typed [`LibRaggedWriter`], one variant per element type numpy has.
macro_rules! writers {
    ($($v:ident($t:ty)),* $(,)?) => {
        enum Writer {
            $($v(LibRaggedWriter<$t>),)*
        }

        impl Writer {
            fn append(&mut self, bytes: &[u8]) -> rawarray_serde::Result<()> {
                match self { $(Writer::$v(w) => append_as(w, bytes),)* }
            }
            fn flush(&mut self) -> rawarray_serde::Result<()> {
                match self { $(Writer::$v(w) => w.flush(),)* }
            }
            fn sync(&mut self) -> rawarray_serde::Result<()> {
                match self { $(Writer::$v(w) => w.sync(),)* }
            }
            fn finish(self) -> rawarray_serde::Result<()> {
                match self { $(Writer::$v(w) => w.finish().map(|_| ()),)* }
            }
            fn rows(&self) -> u64 {
                match self { $(Writer::$v(w) => w.rows(),)* }
            }
            fn flushed_rows(&self) -> u64 {
                match self { $(Writer::$v(w) => w.flushed_rows(),)* }
            }
        }
    };
}

writers!(
    Bool(bool),
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F16(f16),
    BF16(bf16),
    F32(f32),
    F64(f64),
    C64(Complex<f32>),
    C128(Complex<f64>),
);

/// Creates (`append` false) or opens a writer of `T`.
fn open_writer<T: Element>(
    path: &std::path::Path,
    opts: &RaggedOptions,
    append: bool,
) -> rawarray_serde::Result<LibRaggedWriter<T>> {
    if append {
        LibRaggedWriter::open(path)
    } else {
        LibRaggedWriter::create_with(path, opts)
    }
}

/// Appends rows to a ragged file: the library's `RaggedWriter` (its lock, its commit by one
/// header write per flush, its crash safety), fed with each row's packed little-endian bytes.
/// Threads may share one: a mutex serializes its calls, with the GIL released.
#[pyclass(frozen, module = "rawarray._rawarray")]
pub(crate) struct RaggedWriter {
    inner: Held<Writer>,
}

#[pymethods]
impl RaggedWriter {
    /// Creates the file (`append=False`, atomically replacing any old one) or opens it to
    /// append, for values of `descr_json` (a numpy scalar dtype; `text` for UTF-8 rows of
    /// `|u1`). `write_ragged`'s chunked keywords (`chunk_values`: values per chunk,
    /// `block_values`: values per block) compress the values of a new file (doc/format.md,
    /// section 10.2); an opened file keeps its own storage.
    #[new]
    #[pyo3(signature = (path, descr_json, text=false, append=false, codec=None, level=None, shuffle=None,
                        chunk_values=None, threads=0, filters=None, block_values=None, layout_version=None,
                        statistics=None, split=None,
                    stream_crcs=None))]
    #[allow(clippy::too_many_arguments)] // the Python keywords, one each
    fn new(
        py: Python<'_>,
        path: PathBuf,
        descr_json: &str,
        text: bool,
        append: bool,
        codec: Option<&str>,
        level: Option<i32>,
        shuffle: Option<&str>,
        chunk_values: Option<u64>,
        threads: usize,
        filters: Option<Bound<'_, PyAny>>,
        block_values: Option<u64>,
        layout_version: Option<u32>,
        statistics: Option<bool>,
        split: Option<bool>,
        stream_crcs: Option<bool>,
    ) -> PyResult<RaggedWriter> {
        let (eltype, elbyte, layout) = element_of(descr_json)?;
        // Rows of scalars: a chunk (and a block) is a count of values.
        let packing = Packing::new(
            codec,
            level,
            shuffle,
            filters.as_ref(),
            chunk_values.map(|n| vec![n]),
            block_values.map(|n| vec![n]),
            layout_version,
            statistics,
            split,
            stream_crcs,
            threads,
        )?;
        // The library refuses "lz4-whole" (rows are appended and read alone).
        let (storage, _) = write_options(false, &packing)?;
        let opts = RaggedOptions::new().text(text).storage(storage);
        let is_bool = layout.as_ref() == Some(&bool::layout());
        if layout.is_some() && !is_bool {
            return Err(ra_err(format!(
                "RaggedWriter appends rows of numpy's scalar types, not {descr_json}: write rows \
                 of records whole with rawarray.write(path, rawarray.Ragged(rows))"
            )));
        }
        let p = path.as_path();
        let writer = py.detach(|| -> rawarray_serde::Result<Option<Writer>> {
            Ok(Some(match (is_bool, eltype, elbyte) {
                (true, _, _) => Writer::Bool(open_writer(p, &opts, append)?),
                (_, ElType::Uint, 1) => Writer::U8(open_writer(p, &opts, append)?),
                (_, ElType::Int, 1) => Writer::I8(open_writer(p, &opts, append)?),
                (_, ElType::Uint, 2) => Writer::U16(open_writer(p, &opts, append)?),
                (_, ElType::Int, 2) => Writer::I16(open_writer(p, &opts, append)?),
                (_, ElType::Uint, 4) => Writer::U32(open_writer(p, &opts, append)?),
                (_, ElType::Int, 4) => Writer::I32(open_writer(p, &opts, append)?),
                (_, ElType::Uint, 8) => Writer::U64(open_writer(p, &opts, append)?),
                (_, ElType::Int, 8) => Writer::I64(open_writer(p, &opts, append)?),
                (_, ElType::Float, 2) => Writer::F16(open_writer(p, &opts, append)?),
                (_, ElType::BFloat16, 2) => Writer::BF16(open_writer(p, &opts, append)?),
                (_, ElType::Float, 4) => Writer::F32(open_writer(p, &opts, append)?),
                (_, ElType::Float, 8) => Writer::F64(open_writer(p, &opts, append)?),
                (_, ElType::Complex, 8) => Writer::C64(open_writer(p, &opts, append)?),
                (_, ElType::Complex, 16) => Writer::C128(open_writer(p, &opts, append)?),
                _ => return Ok(None),
            }))
        });
        let start = "rawarray.RaggedWriter(path, dtype) (mode=\"w\", the default)";
        let doing = if append {
            Doing::Adding(start)
        } else {
            Doing::Writing
        };
        match writer.map_err(|e| at_path(e, &path, doing))? {
            Some(w) => Ok(RaggedWriter {
                inner: Held::new(w, "rawarray.RaggedWriter"),
            }),
            None => Err(ra_err(format!(
                "RaggedWriter appends rows of numpy's scalar types, not {descr_json}"
            ))),
        }
    }

    /// Appends one row, its values packed little-endian (C-contiguous bytes); not committed
    /// until `flush`.
    fn append(&self, py: Python<'_>, data: PyBuffer<u8>) -> PyResult<()> {
        let bytes = input_bytes(&data, "a row")?;
        self.inner.with(py, |w| w.append(bytes))
    }

    /// Commits the rows appended so far: readers see them, a killed process keeps them.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.with(py, Writer::flush)
    }

    /// Commits and syncs: the rows survive a power cut too.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.with(py, Writer::sync)
    }

    /// Commits, trims the file and releases its lock. Closing twice is allowed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.close(py, Writer::finish)
    }

    /// Rows appended, committed or not.
    fn __len__(&self, py: Python<'_>) -> usize {
        self.inner.peek(py, 0, |w| w.rows() as usize)
    }

    /// Rows the file's header covers: those of the last flush.
    #[getter]
    fn flushed_len(&self, py: Python<'_>) -> u64 {
        self.inner.peek(py, 0, Writer::flushed_rows)
    }

    /// Whether `close` has run.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        self.inner.is_closed(py)
    }
}
