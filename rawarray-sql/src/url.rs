//! Tables at object-store URLs (`s3://`, `gs://`, `az://`, `http(s)://`, `file://`): the
//! object is opened once per table by rawarray-serde's `StoreArrayReader` (header, trailer, a
//! chunked object's config, index and statistics: one or two requests), and each batch a
//! query reads is one block of it, fetched by ranged requests as the reader fetches blocks
//! (only the chunks it crosses, those a filter's statistics rule out never), every request
//! pinned to the object opened. Nothing is downloaded whole unless the query reads it whole.
//! A ragged object is read through a `StoreSource` instead: its offsets and rows by positioned
//! reads, served from 1 MiB blocks of the object fetched as the rows reach them.
//!
//! The store's requests run on a runtime of this module's, made when the first URL is opened:
//! a query of local files starts none. A batch is read on the engine's thread, which waits
//! for its requests as it waits for a local file's reads.

use std::future::Future;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use rawarray_arrow::{BlockSource, RaTable};
use rawarray_serde::codec::ChunkMap;
use rawarray_serde::io::ReadAt;
use rawarray_serde::ragged::DynRagged;
pub(crate) use rawarray_serde::store::is_url;
use rawarray_serde::store::{StorageOptions, StoreSource, StoreUrl};
use rawarray_serde::{ErrorKind, Header, IoStats, StoreArrayReader, Trailer};

use crate::{DataFusionError, Result};

/// The runtime the stores' requests run on: two threads, made once, on the first URL.
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("ra-sql-store")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the object-store runtime: {e}"))
        })
        .as_ref()
        .map_err(|e| DataFusionError::Execution(e.clone()))
}

/// `fut` run on the stores' runtime, waited for on this thread (whatever runtime, if any, this
/// thread belongs to: the engine's threads wait for a block as for a local file's read).
fn wait<T: Send + 'static>(fut: impl Future<Output = T> + Send + 'static) -> Result<T> {
    let task = runtime()?.spawn(fut);
    futures::executor::block_on(task)
        .map_err(|e| DataFusionError::Execution(format!("an object-store request failed: {e}")))
}

/// An object opened by its URL: the blocks of its data section, read by ranged requests.
struct StoreBlocks {
    reader: Arc<StoreArrayReader>,
    url: StoreUrl,
}

impl BlockSource for StoreBlocks {
    fn header(&self) -> &Header {
        self.reader.header()
    }
    fn trailer(&self) -> Option<&Trailer> {
        self.reader.trailer()
    }
    fn trailer_error(&self) -> Option<&str> {
        self.reader.trailer_error()
    }
    fn chunk_map(&self) -> Option<&ChunkMap> {
        self.reader.chunk_map()
    }
    fn read_subset_bytes(
        &self,
        ranges: &[Range<u64>],
    ) -> rawarray_serde::Result<(Header, Vec<u8>)> {
        let reader = self.reader.clone();
        let ranges = ranges.to_vec();
        let got = wait(async move { reader.read_subset_bytes(&ranges).await })
            .map_err(|e| std::io::Error::other(format!("{}: {e}", self.url.shown)))?;
        // The reader's errors name the object's path; the URL goes in front.
        got.map_err(|e| self.url.rewrap(e))
    }
    fn io_stats(&self) -> IoStats {
        self.reader.io_stats()
    }
    /// Fields of records alone: where each byte stream has its CRC, a large chunk's other
    /// streams are not fetched (`StoreArrayReader::read_subset_fields`).
    fn read_subset_fields(
        &self,
        ranges: &[Range<u64>],
        fields: &[(usize, usize)],
    ) -> rawarray_serde::Result<Option<Vec<Vec<u8>>>> {
        let reader = self.reader.clone();
        let (ranges, fields) = (ranges.to_vec(), fields.to_vec());
        let got = wait(async move { reader.read_subset_fields(&ranges, &fields).await })
            .map_err(|e| std::io::Error::other(format!("{}: {e}", self.url.shown)))?;
        got.map_err(|e| self.url.rewrap(e))
    }
}

/// Opens the object `url` names as a table, its store configured from the environment and
/// `options` (see `StoreUrl::parse`). Errors name the URL, never a credential.
pub(crate) fn open(url: &str, options: &StorageOptions) -> Result<RaTable> {
    let plan = |e: String| DataFusionError::Plan(e);
    let u = StoreUrl::parse(url, options).map_err(|e| plan(e.to_string()))?;
    let (store, path) = (u.store.clone(), u.path.clone());
    let reader = match wait(StoreArrayReader::open(store, path))? {
        Ok(reader) => reader,
        Err(e) if matches!(e.kind(), ErrorKind::RaggedFile) => return open_ragged(u),
        Err(e) => return Err(plan(u.rewrap(e).to_string())),
    };
    let name = u.shown.clone();
    let blocks = StoreBlocks {
        reader: Arc::new(reader),
        url: u,
    };
    RaTable::from_blocks(name, Box::new(blocks)).map_err(|e| plan(e.to_string()))
}

/// A ragged object (rows of different lengths): read through a `StoreSource`, whose 1 MiB
/// blocks are fetched as the rows are read (the object is opened again for it: one `HEAD`).
fn open_ragged(u: StoreUrl) -> Result<RaTable> {
    let (store, path) = (u.store.clone(), u.path.clone());
    let handle = runtime()?.handle().clone();
    let source = wait(StoreSource::open(store, path, handle))?
        .map_err(|e| DataFusionError::Plan(u.rewrap(e).to_string()))?;
    let named = Named {
        source,
        url: u.shown.clone(),
    };
    let ragged = DynRagged::from_source(Arc::new(named))
        .map_err(|e| DataFusionError::Plan(format!("{}: {e}", u.shown)))?;
    RaTable::from_ragged(&u.shown, ragged).map_err(|e| DataFusionError::Plan(e.to_string()))
}

/// A ragged object's reads, their errors naming its URL.
struct Named {
    source: StoreSource,
    url: String,
}

impl ReadAt for Named {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.source
            .read_exact_at(buf, offset)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", self.url)))
    }
    fn source_len(&self) -> std::io::Result<u64> {
        self.source.source_len()
    }
}
