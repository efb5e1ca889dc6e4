//! Arrow tables to `.ra` record files: each row a record, one field per column.

use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, Schema};
use rawarray_serde::atomic::AtomicFile;
use rawarray_serde::{
    DynRecordWriter, ElementSpec, ErrorKind, Layout, RecordOptions, SchemaCheck, WriteOptions,
};

use crate::columns::scatter;
use crate::error::{Error, Result};
use crate::schema::{arrow_schema, layout_of_schema, DIMS_KEY, PARAMS_KEY};

/// Writes Arrow batches of one schema to a `.ra` record file, as records laid out by
/// [`layout_of_schema`]: the schema's own columns, or the layout recorded in its metadata.
/// The file is written under a temporary name and renamed over `path` by
/// [`RecordFileWriter::finish`]: a failed or interrupted conversion leaves what was at
/// `path` alone. The destination is treated as the library's atomic writes treat it
/// ([`AtomicFile`]): checked and locked before anything is written; a symlink is followed; a
/// new file gets the permissions the umask gives (0644 under umask 022), a replaced one keeps
/// its own.
///
/// ```
/// use std::sync::Arc;
/// use arrow_array::{Float64Array, RecordBatch, UInt32Array};
/// use arrow_schema::{DataType, Field, Schema};
/// let schema = Arc::new(Schema::new(vec![
///     Field::new("step", DataType::UInt32, false),
///     Field::new("energy", DataType::Float64, false),
/// ]));
/// let batch = RecordBatch::try_new(schema.clone(), vec![
///     Arc::new(UInt32Array::from(vec![0, 1])),
///     Arc::new(Float64Array::from(vec![1.5, 2.5])),
/// ]).unwrap();
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("t.ra");
/// let mut w = rawarray_arrow::RecordFileWriter::create(&path, &schema, None).unwrap();
/// w.write(&batch).unwrap();
/// assert_eq!(w.finish().unwrap(), 2);
/// let numbers = rawarray_serde::DynArray::read_file(&path).unwrap();
/// assert_eq!(numbers.header().elbyte, 12);
/// assert_eq!(&numbers.data()[..12], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f]);
/// ```
pub struct RecordFileWriter {
    layout: Layout,
    /// `layout` as the columns of a batch describe it (packed, no record name): what each
    /// batch's own columns are checked against.
    columns: Layout,
    writer: DynRecordWriter,
    temp: tempfile::TempPath,
    /// Where the file goes: `path`, or the file it links to.
    target: std::path::PathBuf,
    /// The destination, checked and (if a file is there) locked until the rename; its own
    /// temporary file is never used (the record writer needs a path of its own).
    dest: AtomicFile,
    rows: u64,
    /// Bytes of one record of the writer: the rows of one step of the record dims.
    record_bytes: usize,
    /// Rows scattered but not yet a whole record of the writer (with record dims).
    pending: Vec<u8>,
    buf: Vec<u8>,
}

impl RecordFileWriter {
    /// Starts a record file for tables of `schema`. Parameters ([`crate::schema::PARAMS_KEY`])
    /// and record dims (from [`crate::schema::DIMS_KEY`]) in its metadata are kept: the record
    /// dims only when `total_rows` is known and they divide it. Columns that cannot be record
    /// fields are refused by name, before anything is written.
    pub fn create(
        path: impl AsRef<Path>,
        schema: &Schema,
        total_rows: Option<u64>,
    ) -> Result<RecordFileWriter> {
        RecordFileWriter::create_with(path, schema, total_rows, &WriteOptions::new())
    }

    /// [`RecordFileWriter::create`] of a file whose records are stored as `storage` says
    /// (plain, or chunked with per-chunk statistics: see [`RecordOptions::storage`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use arrow_array::{Float64Array, RecordBatch};
    /// use arrow_schema::{DataType, Field, Schema};
    /// use rawarray_serde::{codec::Codec, WriteOptions};
    /// let schema = Arc::new(Schema::new(vec![Field::new("e", DataType::Float64, false)]));
    /// let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Float64Array::from(vec![0.5; 1000]))]).unwrap();
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("z.ra");
    /// let zstd = WriteOptions::new().codec(Codec::Zstd);
    /// let mut w = rawarray_arrow::RecordFileWriter::create_with(&path, &schema, None, &zstd).unwrap();
    /// w.write(&batch).unwrap();
    /// w.finish().unwrap();
    /// assert!(std::fs::metadata(&path).unwrap().len() < 8000);
    /// ```
    pub fn create_with(
        path: impl AsRef<Path>,
        schema: &Schema,
        total_rows: Option<u64>,
        storage: &WriteOptions,
    ) -> Result<RecordFileWriter> {
        let path = path.as_ref();
        let layout = layout_of_schema(schema)?;
        let columns = layout_of_schema(&arrow_schema(&layout)?)?;
        let spec = ElementSpec::from_layout(layout.clone())?;
        let mut opts = RecordOptions::new().storage(storage.clone());
        if let Some(params) = schema.metadata().get(PARAMS_KEY) {
            let params: serde_json::Value = serde_json::from_str(params).map_err(|e| {
                Error::NoTable(format!(
                    "the table's metadata {PARAMS_KEY} is not JSON: {e}"
                ))
            })?;
            opts = opts.params(params);
        }
        let mut record_bytes = layout.size() as usize;
        if let Some(record_dims) = record_dims(schema, &spec, total_rows) {
            record_bytes *= record_dims.iter().product::<u64>() as usize;
            opts = opts.record_dims(record_dims);
        }
        // Refuses what an atomic write refuses (a folder, a FIFO, a hard-linked or protected
        // file) and holds a file there locked: before a byte is written.
        let dest = AtomicFile::create(path)?;
        let target = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path)?,
            _ => path.to_path_buf(),
        };
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = target
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let prefix = format!(".{name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".ra-tmp");
        // What File::create gives (0o666 less the umask), not tempfile's private 0600: the
        // record writer replaces this file keeping its mode, and the rename keeps it too.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let temp = builder.tempfile_in(dir)?.into_temp_path();
        let writer = opts.create_dyn(&temp, &spec)?;
        Ok(RecordFileWriter {
            layout,
            columns,
            writer,
            temp,
            target,
            dest,
            rows: 0,
            record_bytes,
            pending: Vec::new(),
            buf: Vec::new(),
        })
    }

    /// Appends the rows of `batch` as records. Its columns must be the table's: the same names
    /// in the same order, each of the field's type (the check record files make of a type's
    /// schema, [`SchemaCheck::Fields`]); a column of another type of the same width is refused
    /// naming the field, never written as the field's bytes.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.check_columns(batch)?;
        let rows = batch.num_rows();
        let row_bytes = self.layout.size() as usize;
        self.buf.clear();
        self.buf.resize(rows * row_bytes, 0);
        let index: Vec<usize> = (0..rows).collect();
        match &self.layout {
            Layout::Record { fields, .. } => {
                if batch.num_columns() != fields.len() {
                    return Err(Error::NoTable(format!(
                        "a batch of {} columns in a table of {}",
                        batch.num_columns(),
                        fields.len()
                    )));
                }
                for ((f, array), af) in fields
                    .iter()
                    .zip(batch.columns())
                    .zip(batch.schema().fields())
                {
                    let starts: Vec<usize> = (0..rows)
                        .map(|r| r * row_bytes + f.offset as usize)
                        .collect();
                    scatter(
                        af.name(),
                        &f.layout,
                        array.as_ref(),
                        &index,
                        &mut self.buf,
                        &starts,
                    )?;
                }
            }
            other => {
                let starts: Vec<usize> = (0..rows).map(|r| r * row_bytes).collect();
                let name = batch.schema().field(0).name().clone();
                scatter(
                    &name,
                    other,
                    batch.column(0).as_ref(),
                    &index,
                    &mut self.buf,
                    &starts,
                )?;
            }
        }
        if self.pending.is_empty() && self.buf.len().is_multiple_of(self.record_bytes) {
            self.writer.append_bytes(&self.buf)?;
        } else {
            self.pending.extend_from_slice(&self.buf);
            let whole = self.pending.len() / self.record_bytes * self.record_bytes;
            self.writer.append_bytes(&self.pending[..whole])?;
            self.pending.drain(..whole);
        }
        self.rows += rows as u64;
        Ok(())
    }

    /// An error unless `batch`'s columns describe the records the file holds. Compared as
    /// columns (the record name a schema's recorded layout may give set aside): the batch's
    /// schema need not carry the metadata the table's had.
    fn check_columns(&self, batch: &RecordBatch) -> Result<()> {
        let theirs = layout_of_schema(&Schema::new(batch.schema().fields().clone()))?;
        match self.columns.check_against(&theirs, SchemaCheck::Fields) {
            Ok(_) => Ok(()),
            Err(e) => Err(match e.into_kind() {
                ErrorKind::SchemaMismatch {
                    at, file, expected, ..
                } => Error::NoTable(format!(
                    "a batch whose columns are not the table's: at {at} the batch has {file}, the \
                     records have {expected}; write batches of the schema the writer was \
                     created with"
                )),
                other => Error::Ra(other.into()),
            }),
        }
    }

    /// Writes every batch of a reader; after each, calls `progress` with the data bytes
    /// written so far and in all (0 when `total_rows` is not known).
    pub fn write_all(
        &mut self,
        batches: impl IntoIterator<Item = std::result::Result<RecordBatch, ArrowError>>,
        total_rows: Option<u64>,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<()> {
        let row_bytes = self.layout.size();
        let total = total_rows.unwrap_or(0) * row_bytes;
        for batch in batches {
            let batch = batch?;
            self.write(&batch)?;
            progress(self.rows * row_bytes, total);
        }
        Ok(())
    }

    /// Finishes the file and renames it over the destination; returns the rows written.
    pub fn finish(self) -> Result<u64> {
        if !self.pending.is_empty() {
            return Err(Error::NoTable(format!(
                "{} rows are not whole records of the table's record dims",
                self.rows
            )));
        }
        self.writer.finish()?;
        if self.dest.replaces_existing() {
            // A replaced file keeps its mode (setuid and setgid dropped: the owner may differ).
            if let Ok(meta) = std::fs::metadata(&self.target) {
                let mut perms = meta.permissions();
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    perms.set_mode(meta.permissions().mode() & 0o1777);
                }
                std::fs::set_permissions(&self.temp, perms)?;
            }
        }
        self.temp.persist(&self.target).map_err(|e| e.error)?;
        // The old file, replaced, is unlocked; the destination's unused temporary goes.
        drop(self.dest);
        Ok(self.rows)
    }
}

/// The record dims of the `.ra` file a table came from, if its metadata has its dims and they
/// fit this table: the dims between the element's own and the last.
fn record_dims(schema: &Schema, spec: &ElementSpec, total_rows: Option<u64>) -> Option<Vec<u64>> {
    let dims: Vec<u64> = serde_json::from_str(schema.metadata().get(DIMS_KEY)?).ok()?;
    let inner = spec.inner_dims().len();
    if dims.len() < inner + 2 || dims[..inner] != *spec.inner_dims() {
        return None;
    }
    let record_dims = dims[inner..dims.len() - 1].to_vec();
    let per: u64 = record_dims
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))?;
    (per > 0 && total_rows?.is_multiple_of(per)).then_some(record_dims)
}
