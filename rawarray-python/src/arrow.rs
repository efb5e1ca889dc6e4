//! Record files as Arrow tables for Python (doc/arrow.md): the mapping is `rawarray-arrow`'s
//! (one home for it); this module only hands its batches across the Arrow C stream interface
//! (a PyCapsule named `arrow_array_stream`, the PyCapsule protocol's `__arrow_c_stream__`), and
//! takes a table's stream back to write records. pyarrow, polars and DuckDB all speak the
//! protocol, so none of them is a dependency of the extension.

use std::ffi::CStr;
use std::path::PathBuf;

use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::RecordBatchReader;
use arrow_schema::Schema;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use rawarray_arrow::{RaTable, RecordFileWriter};

use crate::errors::{at_path, ra_err, to_py, Doing};

/// The capsule name the Arrow PyCapsule protocol gives a stream.
const STREAM: &CStr = c"arrow_array_stream";

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
/// `batch_rows`, each read when the consumer asks for it, so the memory in use is one batch's.
#[pyclass(module = "rawarray._rawarray", frozen)]
pub(crate) struct ArrowStream {
    table: RaTable,
    batch_rows: usize,
}

#[pymethods]
impl ArrowStream {
    /// Opens `path` (its header, trailer and schema are checked now).
    #[new]
    fn new(py: Python<'_>, path: PathBuf, batch_rows: usize) -> PyResult<Self> {
        if batch_rows == 0 {
            return Err(ra_err("batch rows must be at least 1, not 0"));
        }
        let table = py.detach(|| RaTable::open(&path)).map_err(arrow_py)?;
        Ok(ArrowStream { table, batch_rows })
    }

    /// The number of rows.
    #[getter]
    fn rows(&self) -> u64 {
        self.table.rows()
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
        let stream = FFI_ArrowArrayStream::new(Box::new(self.table.batches(self.batch_rows)));
        // The capsule owns the stream: a consumer moves it out (leaving a released one behind),
        // and dropping an unconsumed stream releases it.
        PyCapsule::new_with_value(py, stream, STREAM)
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
    m.add_function(wrap_pyfunction!(write_arrow, m)?)?;
    Ok(())
}
