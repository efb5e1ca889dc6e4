//! `rawarray.open("s3://bucket/key")` and `rawarray.write("s3://...", a)`: `.ra` objects in an
//! object store, read through the library's `StoreArrayReader` (ranged requests, pinned to the
//! object opened) and written through its `StoreUrl::put_atomic` (one request, or a multipart
//! upload streamed part by part; nothing at the URL until it completes). Every wheel carries
//! the backends (feature `cloud`, on by default): `s3://`, `s3a://`, `gs://`, `az://`,
//! `abfs(s)://`, `http(s)://`, `file://`.
//!
//! Each URL's store is configured from the environment as object_store's builders read it
//! (`AWS_*`, `GOOGLE_*`, `AZURE_*`), so a Dask worker on another machine opens the object with
//! its own credentials, and from `storage_options` (fsspec's names, or object_store's), which
//! the library reads (`rawarray_serde::store::StoreUrl`).

use std::collections::BTreeMap;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rawarray_serde::store::{StorageOptions, StoreUrl, UploadOptions};
use rawarray_serde::{Header, StoreArrayReader};

use crate::buffer::{Buffer, Bytes};
use crate::chunked::{settings_of, ChunkSettings};
use crate::errors::to_py;
use crate::head::array_methods;

/// A `.ra` object opened in an object store: its validated header and trailer (at most two
/// requests), then blocks by ranged requests, every one pinned to the object opened (its ETag
/// and version), so an object overwritten meanwhile is an error, never other bytes.
///
/// The reader's requests run on a runtime of its own (one thread, driven by whichever Python
/// thread is waiting, the GIL released): the HTTP client's pooled connections belong to that
/// runtime, and no thread is left behind in a process that forks.
#[pyclass(frozen, module = "rawarray._rawarray")]
pub(crate) struct StoreFile {
    reader: StoreArrayReader,
    runtime: tokio::runtime::Runtime,
    url: StoreUrl,
}

/// The store and object `url` names, with `options` (text values; the Python layer turns
/// booleans and numbers into text).
pub(crate) fn store_url(
    url: &str,
    options: Option<BTreeMap<String, String>>,
) -> PyResult<StoreUrl> {
    let options: StorageOptions = options.unwrap_or_default();
    StoreUrl::parse(url, &options).map_err(to_py)
}

/// The library's error of a request to `url`, as `to_py` maps it (I/O as `OSError`, the rest
/// as `RaError`), its message starting with the URL and saying where credentials were looked
/// for when that is the trouble.
fn url_error(url: &StoreUrl, e: rawarray_serde::Error) -> PyErr {
    to_py(url.rewrap(e))
}

/// Writes the object at `url` whatever `write` writes (see `StoreUrl::put_atomic`), on a
/// runtime of two threads made for this write (parts go up while the next is filled), the GIL
/// released.
pub(crate) fn put_url(
    py: Python<'_>,
    url: &StoreUrl,
    write: impl FnOnce(&mut dyn rawarray_serde::section::write::Sink) -> rawarray_serde::Result<()>
        + Send,
) -> PyResult<()> {
    py.detach(|| -> rawarray_serde::Result<()> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        url.put_atomic(rt.handle(), &UploadOptions::new(), write)?;
        Ok(())
    })
    .map_err(to_py)
}

/// Aborts the multipart uploads that writers which died left at `url` (S3), and says how many.
#[pyfunction]
#[pyo3(signature = (url, storage_options=None))]
pub(crate) fn recover_url(
    py: Python<'_>,
    url: &str,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<usize> {
    let u = store_url(url, storage_options)?;
    py.detach(|| -> rawarray_serde::Result<usize> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(u.recover())
    })
    .map_err(to_py)
}

array_methods!(StoreFile {
    /// Opens the object `url` names: validates its header and reads its trailer.
    #[new]
    #[pyo3(signature = (url, storage_options=None))]
    fn new(
        py: Python<'_>,
        url: String,
        storage_options: Option<BTreeMap<String, String>>,
    ) -> PyResult<StoreFile> {
        let url = store_url(&url, storage_options)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(PyErr::from)?;
        let reader = py
            .detach(|| {
                runtime.block_on(StoreArrayReader::open(url.store.clone(), url.path.clone()))
            })
            .map_err(|e| url_error(&url, e))?;
        Ok(StoreFile {
            reader,
            runtime,
            url,
        })
    }

    /// The URL opened.
    #[getter]
    fn url(&self) -> &str {
        &self.url.url
    }

    /// The object's length in bytes when it was opened.
    #[getter]
    fn file_len(&self) -> u64 {
        self.reader.object_len()
    }

    /// What was opened, to tell later whether the URL still names the same object unchanged:
    /// `(url, ETag, version, length, header bytes)`.
    fn identity<'py>(
        &self,
        py: Python<'py>,
    ) -> (
        String,
        Option<String>,
        Option<String>,
        u64,
        Bound<'py, PyBytes>,
    ) {
        let meta = self.reader.object_meta();
        (
            self.url.url.clone(),
            meta.e_tag.clone(),
            meta.version.clone(),
            meta.size,
            PyBytes::new(py, &self.header().encode()),
        )
    }

    /// The chunk settings of a chunked object, as `chunk_config` gives a file's; `None` for any
    /// other object. The library validated them at open: no request is made.
    fn chunk_config(&self) -> Option<ChunkSettings> {
        self.reader
            .chunk_config()
            .map(|c| settings_of(c, self.reader.header().elbyte))
    }

    /// The whole array's bytes, as `RawFile.decode` gives them (one request, streamed).
    fn decode(&self, py: Python<'_>) -> PyResult<Buffer> {
        let ranges: Vec<(u64, u64)> = self.header().dims.iter().map(|&d| (0, d)).collect();
        self.read_block(py, ranges)
    }

    /// The block `ranges` (one `(start, end)` per dim, file order), as `RawFile.read_block`
    /// gives it: the object's runs fetched by ranged requests and nothing else (runs less than
    /// 1 MiB apart share a request; see `StoreArrayReader`).
    fn read_block(&self, py: Python<'_>, ranges: Vec<(u64, u64)>) -> PyResult<Buffer> {
        py.detach(|| -> rawarray_serde::Result<Buffer> {
            let ranges: Vec<std::ops::Range<u64>> = ranges.into_iter().map(|(a, b)| a..b).collect();
            let (_, data) = self
                .runtime
                .block_on(self.reader.read_subset_bytes(&ranges))?;
            Ok(Buffer {
                bytes: Bytes::Owned(data),
            })
        })
        .map_err(|e| url_error(&self.url, e))
    }
});

impl StoreFile {
    fn header(&self) -> &Header {
        self.reader.header()
    }
}

/// Many writers of one chunked object (the library's `StoreArrayWriter`): the client's, made
/// without `session`, and the workers', made with the client's. Each worker compresses and
/// uploads its chunk-aligned blocks; the client's `finish` assembles the object (on S3, copying
/// blocks server-side) and removes the blocks.
#[pyclass(frozen, module = "rawarray._rawarray")]
pub(crate) struct StoreBlockWriter {
    writer: rawarray_serde::store::StoreArrayWriter,
    url: StoreUrl,
}

#[pymethods]
impl StoreBlockWriter {
    /// A writer of the array of `descr_json` and `dims` (file order) at `url`, chunked as
    /// `codec`, `chunks` (file order), `level` and `shuffle` say (`write`'s defaults
    /// otherwise); of the session `session`, or of a new one. Nothing is sent to the store.
    #[new]
    #[pyo3(signature = (url, descr_json, dims, codec=None, chunks=None, level=None, shuffle=None, session=None, storage_options=None))]
    #[allow(clippy::too_many_arguments)] // the Python keywords, one each
    fn new(
        url: &str,
        descr_json: &str,
        dims: Vec<u64>,
        codec: Option<&str>,
        chunks: Option<Vec<u64>>,
        level: Option<i32>,
        shuffle: Option<&str>,
        session: Option<&str>,
        storage_options: Option<BTreeMap<String, String>>,
    ) -> PyResult<StoreBlockWriter> {
        let packing = crate::chunked::Packing {
            codec: codec.map(str::to_string),
            chunks,
            level,
            shuffle: shuffle.map(str::to_string),
            ..Default::default()
        };
        // The library refuses "lz4-whole" (one LZ4 block has no place for a block).
        let (opts, _) = crate::chunked::write_options(false, &packing)?;
        let (eltype, elbyte, layout) = crate::dtype::element_of(descr_json)?;
        if layout.is_some() {
            return Err(crate::errors::ra_err(
                "an ArrayWriter of an object-store URL writes arrays of numbers: a bool or \
                 structured dtype needs a trailer, which rawarray.write writes",
            ));
        }
        let header = Header::new(eltype, elbyte, dims).map_err(to_py)?;
        let url = store_url(url, storage_options)?;
        let writer = url
            .array_writer(header, &opts, session)
            .map_err(|e| url_error(&url, e))?;
        Ok(StoreBlockWriter { writer, url })
    }

    /// The session, for the workers' writers.
    #[getter]
    fn session(&self) -> &str {
        self.writer.session()
    }

    /// The chunk shape, file order.
    #[getter]
    fn chunks(&self) -> Vec<u64> {
        self.writer.chunks().to_vec()
    }

    /// The hidden folder (a path in the store) where the session's blocks wait.
    #[getter]
    fn session_prefix(&self) -> String {
        self.writer.session_prefix().to_string()
    }

    /// Compresses and uploads the block `ranges` (one `(start, end)` per dim, file order) from
    /// its packed little-endian bytes, the GIL released.
    fn write_block(
        &self,
        py: Python<'_>,
        ranges: Vec<(u64, u64)>,
        data: pyo3::buffer::PyBuffer<u8>,
    ) -> PyResult<()> {
        let bytes = crate::buffer::input_bytes(&data, "a block")?;
        let ranges: Vec<std::ops::Range<u64>> = ranges.into_iter().map(|(a, b)| a..b).collect();
        py.detach(|| -> rawarray_serde::Result<()> {
            let rt = runtime()?;
            self.writer.write_block(rt.handle(), &ranges, bytes)
        })
        .map_err(|e| url_error(&self.url, e))
    }

    /// Assembles the object from the blocks uploaded and removes them: `(bytes, blocks,
    /// chunks, parts, bytes copied by the store, bytes streamed through this process)`.
    #[pyo3(signature = (fill_missing=false))]
    fn finish(
        &self,
        py: Python<'_>,
        fill_missing: bool,
    ) -> PyResult<(u64, usize, u64, usize, u64, u64)> {
        let w = self.writer.clone().fill_missing(fill_missing);
        let done = py
            .detach(|| -> rawarray_serde::Result<_> {
                let rt = runtime()?;
                w.finish(rt.handle())
            })
            .map_err(|e| url_error(&self.url, e))?;
        Ok((
            done.bytes,
            done.blocks,
            done.chunks,
            done.parts,
            done.copied,
            done.streamed,
        ))
    }

    /// Removes the blocks uploaded in this session; says how many.
    fn abort(&self, py: Python<'_>) -> PyResult<usize> {
        py.detach(|| -> rawarray_serde::Result<usize> {
            let rt = runtime()?;
            self.writer.abort(rt.handle())
        })
        .map_err(|e| url_error(&self.url, e))
    }
}

/// A runtime of two threads for one call (parts go up while the next is filled).
fn runtime() -> rawarray_serde::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}
