//! The writers: `write` (a whole file, atomically), [`RecordWriter`] (records appended) and
//! [`ArrayWriter`] (blocks written in place from many processes), each the library's.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rawarray_serde::section::write::{write_section_to, InOrder, PlainBytes, Sink};
use rawarray_serde::{
    ArrayWriter as LibArrayWriter, DynRecordWriter, ElementSpec, Header, Layout, RecordOptions,
    Trailer, WriteOptions,
};

use crate::buffer::input_bytes;
use crate::chunked;
use crate::dtype::element_of;
use crate::errors::{at_path, ra_err, to_py, Doing};
use crate::state::file_id;

/// Writes a `.ra` file atomically (temporary file, sync, rename): the header for `dims`, the
/// bytes of `data` (C-contiguous, little-endian, `dims` in the file's order), and a trailer when
/// there are parameters or a record schema.
///
/// `codec` (`"zstd"`, `"lz4"`, `"none"`), `chunks` (the file's dim order), `level` and `shuffle`
/// (`"byte"`, `"bit"`, `"none"`) select the chunked layout, encoded on `threads` threads (0: all
/// cores); `compress` (or `codec="lz4-whole"`) the whole-section LZ4 block.
#[pyfunction]
#[pyo3(signature = (path, descr_json, dims, data, params_json=None, compress=false, extra_json=None,
                    codec=None, chunks=None, level=None, shuffle=None, threads=0, storage_options=None,
                    filters=None, blocks=None, layout_version=None, statistics=None, split=None,
                    stream_crcs=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn write(
    py: Python<'_>,
    path: PathBuf,
    descr_json: &str,
    dims: Vec<u64>,
    data: PyBuffer<u8>,
    params_json: Option<&str>,
    compress: bool,
    extra_json: Option<&str>,
    codec: Option<&str>,
    chunks: Option<Vec<u64>>,
    level: Option<i32>,
    shuffle: Option<&str>,
    threads: usize,
    storage_options: Option<std::collections::BTreeMap<String, String>>,
    filters: Option<Bound<'_, PyAny>>,
    blocks: Option<Vec<u64>>,
    layout_version: Option<u32>,
    statistics: Option<bool>,
    split: Option<bool>,
    stream_crcs: Option<bool>,
) -> PyResult<()> {
    // An object-store URL (`s3://...`): the same bytes, uploaded (see src/store.rs).
    let url = match path.to_str() {
        Some(p) if is_url(p) => Some(p.to_string()),
        _ => None,
    };
    let packing = chunked::Packing::new(
        codec,
        level,
        shuffle,
        filters.as_ref(),
        chunks,
        blocks,
        layout_version,
        statistics,
        split,
        stream_crcs,
        threads,
    )?;
    let (opts, chunk_opts) = chunked::write_options(compress, &packing)?;
    let (eltype, elbyte, layout) = element_of(descr_json)?;
    let header = Header::new(eltype, elbyte, dims).map_err(to_py)?;
    let bytes = input_bytes(&data, "data")?;
    if bytes.len() as u64 != header.data_len() {
        return Err(ra_err(format!(
            "data: expected {} bytes for dims {:?} of {elbyte} bytes, found {}",
            header.data_len(),
            header.dims,
            bytes.len()
        )));
    }
    let params: serde_json::Value = match params_json {
        Some(p) => {
            serde_json::from_str(p).map_err(|e| ra_err(format!("params are not JSON: {e}")))?
        }
        None => serde_json::Value::Null,
    };
    // Top-level trailer keys beside the params (the package's `dim_names`, `coords`): kept
    // by every reader and rewrite of the library as unknown keys (`Trailer::extra`).
    let extra = match extra_json {
        Some(e) => match serde_json::from_str(e) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(other) => {
                return Err(ra_err(format!(
                    "trailer keys: expected a JSON object, found {other}"
                )))
            }
            Err(e) => return Err(ra_err(format!("trailer keys are not JSON: {e}"))),
        },
        None => serde_json::Map::new(),
    };
    if let Some(k) = extra
        .keys()
        .find(|k| Trailer::KNOWN_KEYS.contains(&k.as_str()))
    {
        return Err(ra_err(format!(
            "trailer key '{k}' is the library's own: pass it as params or let the schema fill it"
        )));
    }
    // Rounded by a lossy filter: the trailer says so and to how many bits (the library's
    // mark, which every rewrite keeps), a trailer made for it if there was none.
    let lossy = chunk_opts
        .as_ref()
        .map(WriteOptions::get_filters)
        .filter(|f| f.iter().any(|f| f.is_lossy()));
    let trailer = if params.is_null() && layout.is_none() && extra.is_empty() && lossy.is_none() {
        None
    } else {
        let mut t = Trailer::new(params).map_err(to_py)?;
        t.extra = extra;
        if let Some(f) = &lossy {
            t.mark_lossy(f);
        }
        Some(match layout {
            Some(l) => t.with_schema(l),
            None => t,
        })
    };
    // The file's bytes, written into a local temporary file or an upload alike: the section in
    // the storage `opts` select (the library's one section writer), then the trailer after it.
    // An upload takes the head last: the chunks go up as they are encoded.
    let body = |w: &mut dyn Sink| -> rawarray_serde::Result<()> {
        let schema = trailer.as_ref().and_then(|t| t.schema.as_ref());
        let written = write_section_to(w, &header, &opts, schema, &PlainBytes::new(bytes))?;
        if let Some(t) = &trailer {
            w.write_all(&t.encode_block(written.encoded_len() as u64 + written.size))?;
        }
        Ok(())
    };
    if let Some(url) = url {
        return write_url(py, &url, storage_options, body);
    }
    if storage_options.is_some() {
        return Err(ra_err(format!(
            "{}: storage_options apply to object-store URLs (s3://, gs://, ...), not to a local path",
            path.display()
        )));
    }
    let result =
        py.detach(|| rawarray_serde::atomic::write_atomic(&path, |w| body(&mut InOrder(w))));
    result.map_err(|e| at_path(e, &path, Doing::Writing))
}

/// Whether `path` is an object-store URL (`scheme://`), as the Python layer tells them.
fn is_url(path: &str) -> bool {
    path.split_once("://").is_some_and(|(scheme, _)| {
        let mut c = scheme.chars();
        c.next().is_some_and(|f| f.is_ascii_alphabetic())
            && c.all(|x| x.is_ascii_alphanumeric() || "+.-".contains(x))
    })
}

#[cfg(feature = "cloud")]
fn write_url(
    py: Python<'_>,
    url: &str,
    storage_options: Option<std::collections::BTreeMap<String, String>>,
    body: impl FnOnce(&mut dyn Sink) -> rawarray_serde::Result<()> + Send,
) -> PyResult<()> {
    let u = crate::store::store_url(url, storage_options)?;
    crate::store::put_url(py, &u, body)
}

#[cfg(not(feature = "cloud"))]
fn write_url(
    _py: Python<'_>,
    url: &str,
    _storage_options: Option<std::collections::BTreeMap<String, String>>,
    _body: impl FnOnce(&mut dyn Sink) -> rawarray_serde::Result<()> + Send,
) -> PyResult<()> {
    Err(ra_err(format!(
        "{url}: this build of rawarray writes no object-store URLs (built without its Cargo feature `cloud`, which is on by default)"
    )))
}

/// A writer Python holds until `close`: the library's writer behind a mutex, `None` once
/// closed. Threads may share the Python object: each call waits for the one before, and the
/// lock is taken with the GIL released, so a thread waiting for it never blocks the thread
/// holding it. A panic while it was held (a bug) leaves the writer as the library left it,
/// which the library's own crash safety covers: its state is still usable.
pub(crate) struct Held<W> {
    inner: Mutex<Option<W>>,
    /// The Python class, for the error of a closed writer.
    class: &'static str,
}

impl<W: Send> Held<W> {
    /// `writer`, open, held by an object of the Python class `class`.
    pub(crate) fn new(writer: W, class: &'static str) -> Held<W> {
        Held {
            inner: Mutex::new(Some(writer)),
            class,
        }
    }

    /// The lock, without the GIL question (for calls that never wait long).
    fn lock(&self) -> MutexGuard<'_, Option<W>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The error of a call on a closed writer: Python's, as for a closed file.
    fn closed_error(&self) -> PyErr {
        PyValueError::new_err(format!("I/O operation on a closed {}", self.class))
    }

    /// Runs `op` on the open writer, holding its lock, with the GIL released.
    pub(crate) fn with<T: Send>(
        &self,
        py: Python<'_>,
        op: impl FnOnce(&mut W) -> rawarray_serde::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| self.lock().as_mut().map(|w| op(w).map_err(to_py)))
            .unwrap_or_else(|| Err(self.closed_error()))
    }

    /// What `get` says of the open writer, `closed` once it is closed.
    pub(crate) fn peek<T: Send>(
        &self,
        py: Python<'_>,
        closed: T,
        get: impl FnOnce(&W) -> T + Send,
    ) -> T {
        py.detach(|| self.lock().as_ref().map_or(closed, get))
    }

    /// Closes: takes the writer out and runs `finish` on it (the library's commit and
    /// release), the GIL released. Closing twice is allowed.
    pub(crate) fn close(
        &self,
        py: Python<'_>,
        finish: impl FnOnce(W) -> rawarray_serde::Result<()> + Send,
    ) -> PyResult<()> {
        py.detach(|| self.lock().take().map_or(Ok(()), finish))
            .map_err(to_py)
    }

    /// Whether `close` has run.
    pub(crate) fn is_closed(&self, py: Python<'_>) -> bool {
        py.detach(|| self.lock().is_none())
    }
}

/// Appends records to a `.ra` file: the library's record writer (its lock, its crash safety,
/// its trailer with the schema and parameters) fed with packed little-endian bytes.
///
/// Threads may share one: a mutex serializes its calls (each waits for the one before, with the
/// GIL released), so appends from several threads land whole, one after another.
#[pyclass(frozen, module = "rawarray._rawarray")]
pub(crate) struct RecordWriter {
    inner: Held<DynRecordWriter>,
}

#[pymethods]
impl RecordWriter {
    /// Creates the file (`append=False`, atomically replacing any old one) or opens it to append,
    /// for elements described by `descr_json` (as for [`write`]) and records of `record_dims`
    /// values each (the file's order, first fastest; empty for one value per record), with
    /// the compression keywords of [`chunked::record_options`].
    #[new]
    #[pyo3(signature = (path, descr_json, record_dims, params_json=None, append=false,
                        codec=None, level=None, shuffle=None, chunk_records=None, threads=0,
                        filters=None, blocks=None, layout_version=None, statistics=None, split=None,
                    stream_crcs=None))]
    #[allow(clippy::too_many_arguments)] // Python's keywords, one each
    fn new(
        py: Python<'_>,
        path: PathBuf,
        descr_json: &str,
        record_dims: Vec<u64>,
        params_json: Option<&str>,
        append: bool,
        codec: Option<&str>,
        level: Option<i32>,
        shuffle: Option<&str>,
        chunk_records: Option<u64>,
        threads: usize,
        filters: Option<Bound<'_, PyAny>>,
        blocks: Option<Vec<u64>>,
        layout_version: Option<u32>,
        statistics: Option<bool>,
        split: Option<bool>,
        stream_crcs: Option<bool>,
    ) -> PyResult<RecordWriter> {
        let (eltype, elbyte, layout) = element_of(descr_json)?;
        let layout = layout.unwrap_or(Layout::scalar(eltype, elbyte));
        let spec = ElementSpec::from_layout(layout).map_err(to_py)?;
        let packing = chunked::Packing::new(
            codec,
            level,
            shuffle,
            filters.as_ref(),
            chunk_records.map(|n| vec![n]),
            blocks,
            layout_version,
            statistics,
            split,
            stream_crcs,
            threads,
        )?;
        let mut opts =
            chunked::record_options(RecordOptions::new().record_dims(record_dims), &packing)?;
        if let Some(p) = params_json {
            let params: serde_json::Value =
                serde_json::from_str(p).map_err(|e| ra_err(format!("params are not JSON: {e}")))?;
            opts = opts.params(params);
        }
        let inner = py
            .detach(|| {
                if append {
                    opts.open_dyn(&path, &spec)
                } else {
                    opts.create_dyn(&path, &spec)
                }
            })
            .map_err(|e| {
                let start = "rawarray.RecordWriter(path, dtype) (mode=\"w\", the default)";
                at_path(
                    e,
                    &path,
                    if append {
                        Doing::Adding(start)
                    } else {
                        Doing::Writing
                    },
                )
            })?;
        Ok(RecordWriter {
            inner: Held::new(inner, "rawarray.RecordWriter"),
        })
    }

    /// Appends whole records, packed little-endian (C-contiguous bytes); not committed until
    /// `flush`.
    fn append(&self, py: Python<'_>, data: PyBuffer<u8>) -> PyResult<()> {
        let bytes = input_bytes(&data, "records")?;
        self.inner.with(py, |w| w.append_bytes(bytes))
    }

    /// Commits the records appended so far: readers see them, a killed process keeps them.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.with(py, DynRecordWriter::flush)
    }

    /// Commits and syncs: the records survive a power cut too.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.with(py, DynRecordWriter::sync)
    }

    /// Commits, trims the file and releases its lock. Closing twice is allowed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.close(py, |w| w.finish().map(|_| ()))
    }

    /// Records appended, committed or not.
    fn __len__(&self, py: Python<'_>) -> usize {
        self.inner.peek(py, 0, |w| w.len() as usize)
    }

    /// Records the file's header covers: those of the last flush.
    #[getter]
    fn flushed_len(&self, py: Python<'_>) -> u64 {
        self.inner.peek(py, 0, DynRecordWriter::flushed_len)
    }

    /// Bytes of one record.
    #[getter]
    fn record_bytes(&self, py: Python<'_>) -> u64 {
        self.inner.peek(py, 0, DynRecordWriter::record_bytes)
    }

    /// Whether `close` has run.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        self.inner.is_closed(py)
    }
}

/// Writes n-d blocks of one array into a `.ra` file in place, from many threads and
/// processes at once: the library's `ArrayWriter` (its shared lock, its journal of blocks).
///
/// Threads share one: the library's writer is `Sync`, and every block is one positioned write
/// per run, so writers of disjoint blocks never disturb each other. `None` once closed.
#[pyclass(frozen, module = "rawarray._rawarray")]
pub(crate) struct ArrayWriter {
    /// Shared with the call that uses it (so `close` in another thread waits for a block being
    /// written rather than pulling the file from under it).
    inner: Held<std::sync::Arc<LibArrayWriter>>,
    dev: u64,
    ino: u64,
}

#[pymethods]
impl ArrayWriter {
    /// Opens the file at `path` to write blocks into (`descr_json` None), or, given the element
    /// (`descr_json` as for [`write`]) and `dims` (file order), opens it if a file holding that
    /// array is there, else creates it: ranks that race to start one array each get a writer
    /// of the same file (the library's `open_or_create`). Any of `codec`, `chunks` (file
    /// order), `level` and `shuffle` makes it a chunked file, as for [`write`] (and an existing
    /// file must then be chunked with those settings); a chunked file's blocks are compressed
    /// on `threads` threads (0: all cores).
    #[new]
    #[pyo3(signature = (path, descr_json=None, dims=None, codec=None, chunks=None, level=None, shuffle=None, threads=0,
                        filters=None, blocks=None, layout_version=None, statistics=None, split=None,
                    stream_crcs=None))]
    #[allow(clippy::too_many_arguments)] // the Python keywords, one each
    fn new(
        py: Python<'_>,
        path: PathBuf,
        descr_json: Option<&str>,
        dims: Option<Vec<u64>>,
        codec: Option<&str>,
        chunks: Option<Vec<u64>>,
        level: Option<i32>,
        shuffle: Option<&str>,
        threads: usize,
        filters: Option<Bound<'_, PyAny>>,
        blocks: Option<Vec<u64>>,
        layout_version: Option<u32>,
        statistics: Option<bool>,
        split: Option<bool>,
        stream_crcs: Option<bool>,
    ) -> PyResult<ArrayWriter> {
        let packing = chunked::Packing::new(
            codec,
            level,
            shuffle,
            filters.as_ref(),
            chunks,
            blocks,
            layout_version,
            statistics,
            split,
            stream_crcs,
            threads,
        )?;
        // The library refuses "lz4-whole" (one LZ4 block has no place for a block).
        let (storage, chunked) = chunked::write_options(false, &packing)?;
        // A bool array is bytes 0 and 1 (u8) marked bool by the schema in the trailer, as
        // `write` stores one: `marker` is that trailer.
        let (header, marker) = match (descr_json, dims) {
            (Some(d), Some(dims)) => {
                let (eltype, elbyte, layout) = element_of(d)?;
                let marker = match layout {
                    None => None,
                    // A marked scalar: bool, datetime64, timedelta64.
                    Some(l) if l.plain_schema().is_some() => {
                        if chunked.is_some() {
                            return Err(ra_err(format!(
                                "ArrayWriter cannot write a compressed (chunked) array of {}: its \
                                 mark is a trailer after the data, which the chunks a writer \
                                 appends would overwrite; write the array whole with \
                                 rawarray.write(path, a, codec=...), or write it uncompressed \
                                 (no chunks, codec, level or shuffle)",
                                l.describe()
                            )));
                        }
                        Some(
                            Trailer::new(serde_json::Value::Null)
                                .map_err(to_py)?
                                .with_schema(l),
                        )
                    }
                    Some(_) => {
                        return Err(ra_err(
                            "ArrayWriter writes arrays of numbers, bools, datetime64 and \
                             timedelta64: a structured dtype needs its schema in a trailer, which \
                             rawarray.write or RecordWriter writes",
                        ))
                    }
                };
                (
                    Some(Header::new(eltype, elbyte, dims).map_err(to_py)?),
                    marker,
                )
            }
            (None, None) => (None, None),
            _ => {
                return Err(ra_err(
                    "ArrayWriter: give both the dtype and the shape, or neither",
                ))
            }
        };
        let creating = header.is_some();
        let writer = py
            .detach(|| -> rawarray_serde::Result<LibArrayWriter> {
                let opts = LibArrayWriter::options().threads(threads).storage(storage);
                let w = match header {
                    Some(h) => opts.header(h).open_or_create(&path)?,
                    // An opened file keeps its own chunk settings; only the threads apply.
                    None => opts.open(&path)?,
                };
                if let (Some(t), true) = (&marker, w.created()) {
                    mark_created(&path, w.header(), t)?;
                }
                Ok(w)
            })
            .map_err(|e| {
                let start = "rawarray.ArrayWriter(path, shape, dtype)";
                at_path(
                    e,
                    &path,
                    if creating {
                        Doing::Writing
                    } else {
                        Doing::Adding(start)
                    },
                )
            })?;
        let (dev, ino) = std::fs::File::open(&path)
            .and_then(|f| file_id(&f))
            .map_err(|e| to_py(e.into()))?;
        Ok(ArrayWriter {
            inner: Held::new(std::sync::Arc::new(writer), "rawarray.ArrayWriter"),
            dev,
            ino,
        })
    }

    /// The header's element type code, bytes per element and dims (file order).
    fn header(&self) -> PyResult<(u64, u64, Vec<u64>)> {
        let w = self.writer()?;
        let h = w.header();
        Ok((h.eltype.code(), h.elbyte, h.dims.clone()))
    }

    /// `(device, inode, header bytes)` of the file written: what a pickled writer checks on
    /// reopening the path. The header's `size` is left out (zero): a chunked file's grows
    /// with every block committed, while its array stays the same.
    fn identity<'py>(&self, py: Python<'py>) -> PyResult<(u64, u64, Bound<'py, PyBytes>)> {
        let w = self.writer()?;
        let mut h = w.header().clone();
        h.size = 0;
        Ok((self.dev, self.ino, PyBytes::new(py, &h.encode())))
    }

    /// Whether this writer created the file (rather than opened it).
    #[getter]
    fn created(&self) -> PyResult<bool> {
        Ok(self.writer()?.created())
    }

    /// Writes the block `ranges` (one `(start, end)` per dim, file order) from its packed
    /// little-endian bytes (C-contiguous, column-major in the file's dims), the GIL released.
    fn write_block(
        &self,
        py: Python<'_>,
        ranges: Vec<(u64, u64)>,
        data: PyBuffer<u8>,
    ) -> PyResult<()> {
        let bytes = input_bytes(&data, "a block")?;
        let w = self.writer()?;
        let ranges: Vec<std::ops::Range<u64>> = ranges.into_iter().map(|(a, b)| a..b).collect();
        py.detach(|| w.write_subset_bytes(&ranges, bytes))
            .map_err(to_py)
    }

    /// Syncs what this writer wrote to disk, keeping it open.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let w = self.writer()?;
        py.detach(|| w.sync()).map_err(to_py)
    }

    /// Syncs and closes (the library's `finish`: the last writer removes a clean journal, and
    /// reports blocks another writer left unfinished). Closing twice is allowed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        // A block another thread is writing holds a clone; its end waits for it.
        self.inner.close(py, |mut arc| loop {
            match std::sync::Arc::try_unwrap(arc) {
                Ok(w) => return w.finish(),
                Err(again) => {
                    arc = again;
                    std::thread::yield_now();
                }
            }
        })
    }

    /// Whether `close` has run.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        self.inner.is_closed(py)
    }
}

impl ArrayWriter {
    /// The open writer, shared with the call that uses it.
    fn writer(&self) -> PyResult<std::sync::Arc<LibArrayWriter>> {
        self.inner
            .lock()
            .clone()
            .ok_or_else(|| self.inner.closed_error())
    }
}

/// Appends the trailer `t` after the data section of the plain file an `ArrayWriter` just
/// created at `path` (header `h`): the bool mark of a bool array. The data section's length is
/// fixed and blocks are written inside it, so the trailer stays where readers look for it.
/// Until it is written a reader sees the zeros as uint8; the writer's `finish` syncs the file,
/// trailer included.
fn mark_created(path: &Path, h: &Header, t: &Trailer) -> rawarray_serde::Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
    let end = h.encoded_len() as u64 + h.size;
    file.seek(SeekFrom::Start(end))?;
    file.write_all(&t.encode_block(end))?;
    Ok(())
}
