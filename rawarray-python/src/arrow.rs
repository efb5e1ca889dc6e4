//! Record files as Arrow tables for Python (doc/arrow.md): the mapping is `rawarray-arrow`'s
//! (one home for it); this module only hands its batches across the Arrow C stream interface
//! (a PyCapsule named `arrow_array_stream`, the PyCapsule protocol's `__arrow_c_stream__`), and
//! takes a table's stream back to write records. pyarrow, polars and DuckDB all speak the
//! protocol, so none of them is a dependency of the extension.

use std::ffi::CStr;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rawarray_arrow::{RaBatchReader, RaTable, RecordFileWriter, ScanOptions};
use rawarray_serde::{ErrorKind, IoStats};

use crate::errors::{at_path, ra_err, to_py, Doing};
use crate::state::{file_id, one_state, Opened};

/// The capsule name the Arrow PyCapsule protocol gives a stream.
const STREAM: &CStr = c"arrow_array_stream";
/// The capsule name the Arrow PyCapsule protocol gives a schema.
const SCHEMA: &CStr = c"arrow_schema";

/// `rawarray-arrow`'s errors as Python exceptions: I/O as `OSError`, the rest as `RaError`
/// (a refused column's message names the column and its type).
fn arrow_py(e: rawarray_arrow::Error) -> PyErr {
    match e {
        rawarray_arrow::Error::Ra(e) => to_py(e),
        rawarray_arrow::Error::Io(e) => PyErr::from(e),
        e => ra_err(e.to_string()),
    }
}

/// A `.ra` file as an Arrow table: `__arrow_c_stream__` hands out its rows in batches of
/// `batch_rows`, each read when the consumer asks for it, so the memory in use is one batch's
/// (a compressed chunked file's are read in whole chunks, as `rawarray-arrow` reads them, and
/// handed out `batch_rows` at a time).
///
/// The table reads the file through its own open file; a descriptor of the same file, opened
/// with it, checks before and after each batch that the file is still the one opened
/// (`state::one_state`), so a batch never mixes two versions of a file rewritten in place. The
/// batches of a plain little-endian file are views of a map of it, live as every map is.
#[pyclass(module = "rawarray._rawarray", frozen)]
pub(crate) struct ArrowStream {
    table: RaTable,
    scan: ScanOptions,
    batch_rows: usize,
    file: Arc<File>,
    path: PathBuf,
    opened: Opened,
    /// Where the reads of the table are added up (a `File`'s `io_stats`), and the table's
    /// count when last added.
    counter: Option<Arc<Counts>>,
    counted: Arc<Mutex<IoStats>>,
}

/// Reads and bytes, added to by every Arrow stream of one `File`.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    reads: AtomicU64,
    bytes: AtomicU64,
}

/// The reads a `File`'s Arrow streams made of its data (`File.io_stats` adds them): each
/// stream adds what its table read after each batch.
#[pyclass(module = "rawarray._rawarray", frozen)]
pub(crate) struct IoCounter {
    counts: Arc<Counts>,
}

#[pymethods]
impl IoCounter {
    #[new]
    fn new() -> IoCounter {
        IoCounter {
            counts: Arc::default(),
        }
    }

    /// `(reads, bytes)` so far.
    fn get(&self) -> (u64, u64) {
        (
            self.counts.reads.load(Ordering::Relaxed),
            self.counts.bytes.load(Ordering::Relaxed),
        )
    }
}

#[pymethods]
impl ArrowStream {
    /// Opens `path` (its header, trailer and schema are checked now): its rows in batches of
    /// `batch_rows`, with only the columns named (all without), only the rows `filters` keep
    /// (pyarrow's convention; read from only the chunks whose statistics allow a match), and
    /// its reads added to `counter`.
    #[new]
    #[pyo3(signature = (path, batch_rows, columns=None, filters=None, counter=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        batch_rows: usize,
        columns: Option<Vec<String>>,
        filters: Option<Bound<'_, PyAny>>,
        counter: Option<&IoCounter>,
    ) -> PyResult<Self> {
        if batch_rows == 0 {
            return Err(ra_err("batch rows must be at least 1, not 0"));
        }
        let mut stream = py.detach(|| open_stream(&path, batch_rows))?;
        let table = &stream.table;
        let predicate = match &filters {
            Some(f) if !f.is_none() => {
                // Filters take record files: said first, before any value is converted.
                let schema = table.trailer().and_then(|t| t.schema.as_ref());
                crate::query::record_layout(table.header(), schema, &path.display().to_string())?;
                crate::query::predicate_from_py(f, Some(table.layout()))?
            }
            _ => None,
        };
        if let Some(names) = columns {
            let schema = table.schema();
            let indices = names
                .iter()
                .map(|n| {
                    schema.index_of(n).map_err(|_| {
                        let all: Vec<&str> =
                            schema.fields().iter().map(|f| f.name().as_str()).collect();
                        ra_err(format!(
                            "{}: no column '{n}': the columns are {}",
                            path.display(),
                            all.join(", ")
                        ))
                    })
                })
                .collect::<PyResult<Vec<_>>>()?;
            stream.scan = stream.scan.columns(indices);
        }
        if let Some(p) = predicate {
            table.row_filter(&p).map_err(arrow_py)?;
            stream.scan = stream.scan.filter(p);
        }
        stream.counter = counter.map(|c| Arc::clone(&c.counts));
        Ok(stream)
    }

    /// The number of rows.
    #[getter]
    fn rows(&self) -> u64 {
        self.table.rows()
    }

    /// The stream's Arrow schema (of its columns) as a capsule (the PyCapsule protocol's
    /// `__arrow_c_schema__`).
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = FFI_ArrowSchema::try_from(self.schema()?.as_ref())
            .map_err(|e| ra_err(format!("arrow: {e}")))?;
        PyCapsule::new_with_value(py, schema, SCHEMA)
    }

    /// The reads of the file's data this stream's table made: `(reads, bytes)` (chunks and
    /// their stored bytes for a chunked file; `(0, 0)` for a mapped one).
    fn io_stats(&self) -> (u64, u64) {
        let s = self.table.io_stats().unwrap_or_default();
        (s.reads, s.bytes)
    }

    /// A new stream of the table's batches, from the first row. A requested schema is not
    /// applied (the protocol lets a producer return its own): the mapping is doc/arrow.md's.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let batches = CheckedBatches {
            inner: self.table.scan(&self.scan).map_err(arrow_py)?,
            rows: self.batch_rows,
            rest: None,
            schema: self.schema()?,
            table: self.table.clone(),
            file: Arc::clone(&self.file),
            path: self.path.clone(),
            opened: self.opened.clone(),
            counter: self.counter.clone(),
            counted: Arc::clone(&self.counted),
        };
        let stream = FFI_ArrowArrayStream::new(Box::new(batches));
        // The capsule owns the stream: a consumer moves it out (leaving a released one behind),
        // and dropping an unconsumed stream releases it.
        PyCapsule::new_with_value(py, stream, STREAM)
    }
}

/// Opens the table at `path` and, bracketing it, a descriptor of the same file whose state
/// each batch is checked against.
fn open_stream(path: &Path, batch_rows: usize) -> PyResult<ArrowStream> {
    let file = File::open(path).map_err(|e| at_path(e.into(), path, Doing::Reading))?;
    let (table, opened) = Opened::open(
        &file,
        path,
        || {
            let table = RaTable::open(path).map_err(|e| match e {
                rawarray_arrow::Error::Ra(e) => e,
                e => ErrorKind::Message(e.to_string()).into(),
            })?;
            // `RaTable` opens the path itself: a file renamed over it since the descriptor was
            // opened would be read while the other one's state is checked.
            same_file_at(&file, path)?;
            Ok(table)
        },
        // The table's header is not always the file's (a ragged file's is its values'): the
        // state alone (length, modification time) brackets the open and each batch.
        |_: &RaTable| ((), 0),
        |_| Ok(()),
    )
    .map_err(|e| match e.kind() {
        ErrorKind::Message(_) => ra_err(e.to_string()),
        _ => at_path(e, path, Doing::Reading),
    })?;
    Ok(ArrowStream {
        table,
        scan: ScanOptions::new().batch_rows(batch_rows),
        batch_rows,
        file: Arc::new(file),
        path: path.to_path_buf(),
        opened,
        counter: None,
        counted: Arc::default(),
    })
}

/// An error unless `path` still names the file open in `file` (by device and inode).
fn same_file_at(file: &File, path: &Path) -> rawarray_serde::Result<()> {
    if file_id(&File::open(path)?)? != file_id(file)? {
        return Err(ErrorKind::Message(format!(
            "{}: another file was put at this path while it was opened; open it again",
            path.display()
        ))
        .into());
    }
    Ok(())
}

impl ArrowStream {
    /// The schema of the stream's batches: the table's, projected to the columns asked for.
    fn schema(&self) -> PyResult<SchemaRef> {
        let reader = self
            .table
            .scan(&self.scan.clone().limit(0))
            .map_err(arrow_py)?;
        Ok(reader.schema())
    }
}

/// The table's batches, each read only while the file is in the state it was opened in, its
/// reads added to the stream's counter.
struct CheckedBatches {
    inner: RaBatchReader,
    /// The most rows a batch handed out holds: `rawarray-arrow` reads a chunked record file in
    /// whole chunks (no chunk decoded twice), which may be more.
    rows: usize,
    /// What is left of the last batch read, to hand out before reading the next.
    rest: Option<RecordBatch>,
    schema: SchemaRef,
    table: RaTable,
    file: Arc<File>,
    path: PathBuf,
    opened: Opened,
    counter: Option<Arc<Counts>>,
    counted: Arc<Mutex<IoStats>>,
}

impl CheckedBatches {
    /// Adds what the table read since it was last counted to the counter.
    // Not `count`: in `next`, `self.count()` on a `&mut Self` resolves to `Iterator::count` of
    // `&mut CheckedBatches` before this method, which drains the stream by calling `next`
    // again, without end.
    fn add_reads(&self) {
        let (Some(c), Some(now)) = (&self.counter, self.table.io_stats()) else {
            return;
        };
        let mut last = self
            .counted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        c.reads
            .fetch_add(now.reads.saturating_sub(last.reads), Ordering::Relaxed);
        c.bytes
            .fetch_add(now.bytes.saturating_sub(last.bytes), Ordering::Relaxed);
        *last = now;
    }
}

impl Iterator for CheckedBatches {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = match self.rest.take() {
            // Read before, while the file was checked; checked again, so that a file changed
            // since is refused at the batch after the change, as with a batch read now.
            Some(rest) => one_state(&self.file, &self.path, &self.opened, || Ok(Some(Ok(rest)))),
            None => {
                let inner = &mut self.inner;
                let batch = one_state(&self.file, &self.path, &self.opened, || Ok(inner.next()));
                self.add_reads();
                batch
            }
        };
        match batch {
            Ok(Some(Ok(b))) if b.num_rows() > self.rows => {
                self.rest = Some(b.slice(self.rows, b.num_rows() - self.rows));
                Some(Ok(b.slice(0, self.rows)))
            }
            Ok(b) => b,
            Err(e) => Some(Err(ArrowError::ExternalError(Box::new(e)))),
        }
    }
}

impl RecordBatchReader for CheckedBatches {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Writes the rows of `data` (an object with `__arrow_c_stream__`: a pyarrow table or reader,
/// a polars frame, ...) to a record file at `path`, one field per column, atomically. Columns
/// without a fixed width are refused by name before anything is written. `params_json` replaces
/// the table's own `rawarray.params`; `total_rows` (when known) lets the record dims a table
/// carries from a `.ra` file come back. Returns the rows written.
#[pyfunction]
#[pyo3(signature = (path, data, params_json=None, total_rows=None))]
pub(crate) fn write_arrow(
    py: Python<'_>,
    path: PathBuf,
    data: &Bound<'_, PyAny>,
    params_json: Option<String>,
    total_rows: Option<u64>,
) -> PyResult<u64> {
    let capsule = data.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>()?;
    let ptr = capsule.pointer_checked(Some(STREAM))?;
    // SAFETY: a capsule named `arrow_array_stream` holds an `ArrowArrayStream` (the PyCapsule
    // protocol), which `from_raw` moves out, leaving a released stream for the capsule to drop.
    let reader = unsafe { ArrowArrayStreamReader::from_raw(ptr.as_ptr().cast()) }
        .map_err(|e| ra_err(format!("arrow: {e}")))?;
    let mut schema: Schema = reader.schema().as_ref().clone();
    if let Some(params) = params_json {
        schema
            .metadata
            .insert(rawarray_arrow::schema::PARAMS_KEY.to_string(), params);
    }
    let dest = path.clone();
    py.detach(move || {
        let mut writer = RecordFileWriter::create(&path, &schema, total_rows)?;
        writer.write_all(reader, total_rows, |_, _| {})?;
        writer.finish()
    })
    .map_err(|e| match e {
        rawarray_arrow::Error::Ra(e) => at_path(e, &dest, Doing::Writing),
        rawarray_arrow::Error::Io(e) => at_path(e.into(), &dest, Doing::Writing),
        e => arrow_py(e),
    })
}

/// Adds the Arrow class and function to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ArrowStream>()?;
    m.add_class::<IoCounter>()?;
    m.add_function(wrap_pyfunction!(write_arrow, m)?)?;
    Ok(())
}
