//! `rawarray.open("s3://bucket/key")`: a `.ra` object in an object store, read through the
//! library's `StoreArrayReader` (ranged requests, pinned to the object opened). Built with the
//! package's Cargo feature `cloud` (object_store's S3 and HTTP backends, and local files), which
//! the default wheel leaves out: it brings an HTTP client and TLS.
//!
//! Each URL is read as object_store reads it (`ObjectStoreScheme::parse`), and its store is
//! configured from the environment as object_store's builders read it (`AmazonS3Builder::from_env`
//! reads every `AWS_*` variable: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
//! `AWS_ENDPOINT`, `AWS_ALLOW_HTTP`, ...),
//! so a Dask worker on another machine opens the object with its own credentials.

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::http::HttpBuilder;
use object_store::local::LocalFileSystem;
use object_store::{ClientOptions, ObjectStore, ObjectStoreScheme};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rawarray_serde::{Header, StoreArrayReader};

use crate::buffer::{Buffer, Bytes};
use crate::chunked::{settings_of, ChunkSettings};
use crate::dtype::element_kind;
use crate::errors::ra_err;
use rawarray_serde::{Category, Error};

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
    url: String,
}

/// The store and the object's path in it that `url` names, the store configured from the
/// environment as object_store's builders read it.
fn store_for(url: &str) -> PyResult<(Arc<dyn ObjectStore>, object_store::path::Path)> {
    let parsed = url::Url::parse(url)
        .map_err(|e| ra_err(format!("{url}: not an object-store URL ({e})")))?;
    let (scheme, path) = ObjectStoreScheme::parse(&parsed).map_err(|e| {
        ra_err(format!(
            "{url}: not an object-store URL that rawarray reads (s3://, s3a://, http(s)://, \
             file://): {e}"
        ))
    })?;
    let built = |e: object_store::Error| ra_err(format!("{url}: {e}"));
    let store: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::AmazonS3 => Arc::new(
            AmazonS3Builder::from_env()
                .with_url(url)
                .build()
                .map_err(built)?,
        ),
        // The server's root: the object's path is the URL's.
        ObjectStoreScheme::Http => Arc::new(
            HttpBuilder::new()
                .with_url(&parsed[..url::Position::BeforePath])
                // An http:// URL asks for plain HTTP (object_store refuses it by default).
                .with_client_options(
                    ClientOptions::new().with_allow_http(parsed.scheme() == "http"),
                )
                .build()
                .map_err(built)?,
        ),
        ObjectStoreScheme::Local => Arc::new(LocalFileSystem::new()),
        // A memory:// store is empty in every process that builds one: nothing to open. GCS
        // and Azure need object_store's `gcp` and `azure` backends, not built in.
        other => {
            return Err(ra_err(format!(
            "{url}: rawarray reads s3://, s3a://, http(s):// and file:// URLs, not {other:?} ones"
        )))
        }
    };
    Ok((store, path))
}

/// The library's error as `to_py` maps it (I/O as `OSError`, the rest as `RaError`), its
/// message starting with the URL (the library names the object by its path in the store,
/// which does not say which store).
fn url_error(url: &str, e: Error) -> PyErr {
    if e.category() == Category::Io {
        let io: std::io::Error = e.into();
        return PyErr::from(std::io::Error::new(io.kind(), format!("{url}: {io}")));
    }
    ra_err(format!("{url}: {e}"))
}

#[pymethods]
impl StoreFile {
    /// Opens the object `url` names: validates its header and reads its trailer.
    #[new]
    fn new(py: Python<'_>, url: String) -> PyResult<StoreFile> {
        let (store, path) = store_for(&url)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(PyErr::from)?;
        let reader = py
            .detach(|| runtime.block_on(StoreArrayReader::open(store, path)))
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
        &self.url
    }

    /// The element type code (0 user-defined, 1 int, 2 uint, 3 float, 4 complex, 5 bfloat16).
    #[getter]
    fn eltype(&self) -> u64 {
        self.header().eltype.code()
    }

    /// Bytes per element.
    #[getter]
    fn elbyte(&self) -> u64 {
        self.header().elbyte
    }

    /// The dims, first fastest.
    #[getter]
    fn dims(&self) -> Vec<u64> {
        self.header().dims.clone()
    }

    /// The flag bits.
    #[getter]
    fn flags(&self) -> u64 {
        self.header().flags.bits()
    }

    /// Stored data bytes.
    #[getter]
    fn size(&self) -> u64 {
        self.header().size
    }

    /// Elements in the array.
    #[getter]
    fn num_elements(&self) -> u64 {
        self.header().num_elements()
    }

    /// Bytes of the header.
    #[getter]
    fn header_len(&self) -> usize {
        self.header().encoded_len()
    }

    /// The type in words.
    #[getter]
    fn type_label(&self) -> String {
        self.header().type_label()
    }

    /// The trailer's parameters as JSON, `None` without a trailer.
    #[getter]
    fn params_json(&self) -> Option<String> {
        self.reader.trailer().map(|t| t.params.to_string())
    }

    /// The trailer's record schema as JSON, if any.
    #[getter]
    fn schema_json(&self) -> Option<String> {
        let schema = self.reader.trailer()?.schema.as_ref()?;
        serde_json::to_string(schema).ok()
    }

    /// Why the trailer could not be read, if it is damaged.
    #[getter]
    fn trailer_error(&self) -> Option<String> {
        self.reader.trailer_error().map(str::to_string)
    }

    /// The trailer's keys the library does not interpret, as a JSON object.
    #[getter]
    fn extra_json(&self) -> Option<String> {
        self.reader
            .trailer()
            .map(|t| serde_json::Value::Object(t.extra.clone()).to_string())
    }

    /// Whether decoded user-defined elements are still big-endian.
    #[getter]
    fn big_endian_records(&self) -> bool {
        self.header().is_big_endian() && self.header().eltype == rawarray_serde::ElType::User
    }

    /// The object's length in bytes when it was opened.
    #[getter]
    fn file_len(&self) -> u64 {
        self.reader.object_len()
    }

    /// The requests made so far, open included, and the bytes they brought: `(reads, bytes)`.
    fn io_stats(&self) -> (u64, u64) {
        let s = self.reader.io_stats();
        (s.reads, s.bytes)
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
            self.url.clone(),
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

    /// How numpy should see one element, as `RawFile.element_kind`.
    fn element_kind(&self) -> (String, String) {
        element_kind(
            self.header(),
            self.reader.trailer(),
            self.reader.trailer_error(),
        )
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
}

impl StoreFile {
    fn header(&self) -> &Header {
        self.reader.header()
    }
}
