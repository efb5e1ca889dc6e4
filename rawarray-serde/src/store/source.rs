//! An object in a store as a blocking [`ReadAt`] source ([`StoreSource`]), for the readers
//! that read a file through a source by many small positioned reads (a ragged file's offsets
//! and rows) rather than by the planned blocks of [`StoreArrayReader`](super::StoreArrayReader).

use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use object_store::path::Path as StorePath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use super::{store_error, Counter, Object};
use crate::error::Result;
use crate::io::ReadAt;
use crate::reader::IoStats;

/// Bytes of one fetched block: a read fetches the blocks it crosses, whole.
const BLOCK: u64 = 1 << 20;

/// Blocks kept (least recently used dropped first): 32 MiB.
const KEPT: usize = 32;

/// An object opened for positioned reads: each read is served from 1 MiB blocks of the object,
/// fetched by ranged requests pinned to the object opened (as [`StoreArrayReader`]'s are: its
/// ETag and version, every response checked to be exactly the range asked and the same object),
/// and the 32 most recently used blocks kept, so that reads of neighbouring bytes (the rows of
/// a ragged file, one after another) cost one request a mebibyte.
///
/// Its reads block: the requests run on the runtime `handle` given at open, which must be a
/// multi-thread runtime's (its threads run the requests while the reading thread waits; a
/// current-thread runtime's handle is refused at open, since nothing would run them), and any
/// thread may read, one of another runtime's included.
///
/// [`StoreArrayReader`]: super::StoreArrayReader
///
/// ```
/// # fn main() -> rawarray_serde::Result<()> {
/// use std::sync::Arc;
/// use object_store::{memory::InMemory, ObjectStore, ObjectStoreExt, PutPayload};
/// use rawarray_serde::{io::ReadAt, ragged::DynRagged, store::StoreSource, Ragged};
///
/// let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build()?;
/// let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
/// let rows = Ragged::from_rows([vec![1u16, 2], vec![3]]).to_bytes()?;
/// rt.block_on(store.put(&"rows.ra".into(), PutPayload::from(rows))).unwrap();
///
/// let source = rt.block_on(StoreSource::open(store.clone(), "rows.ra".into(), rt.handle().clone()))?;
/// let d = DynRagged::from_source(Arc::new(source))?;
/// assert_eq!(*d.row_bytes(1)?, [3, 0]);
///
/// // 3 MiB of text rows read one by one: one request per 1 MiB block, not per row.
/// let text: Vec<String> = (0..48_000).map(|k| format!("{k:064}")).collect();
/// let bytes = Ragged::from_strs(&text).to_bytes()?;
/// let blocks = bytes.len().div_ceil(1 << 20) as u64;
/// rt.block_on(store.put(&"text.ra".into(), PutPayload::from(bytes))).unwrap();
/// let source = Arc::new(rt.block_on(StoreSource::open(store, "text.ra".into(), rt.handle().clone()))?);
/// let d = DynRagged::from_source(source.clone())?;
/// for k in 0..d.rows() {
///     assert_eq!(&*d.row_str(k)?, text[k as usize]);
/// }
/// assert!(source.io_stats().reads <= blocks, "{:?} for {blocks} blocks", source.io_stats());
/// # Ok(())
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
pub struct StoreSource {
    object: Arc<Object>,
    handle: tokio::runtime::Handle,
    counter: Arc<Counter>,
    blocks: Mutex<Kept>,
}

/// Fetched blocks by index, with the tick of their last use; the tick now.
#[derive(Default)]
struct Kept {
    blocks: BTreeMap<u64, (Bytes, u64)>,
    tick: u64,
}

impl std::fmt::Debug for StoreSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreSource")
            .field("path", &self.object.path)
            .field("size", &self.object.pinned.size)
            .finish_non_exhaustive()
    }
}

impl StoreSource {
    /// Opens the object at `path` (one `HEAD` request), pinning every later read to it; its
    /// reads' requests run on `handle`, a multi-thread runtime's.
    pub async fn open(
        store: Arc<dyn ObjectStore>,
        path: StorePath,
        handle: tokio::runtime::Handle,
    ) -> Result<StoreSource> {
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return Err(crate::Error::msg(
                "StoreSource: the handle is a current-thread runtime's, which runs no request \
                 while the reader waits: give a multi-thread runtime's handle",
            ));
        }
        let pinned = store.head(&path).await.map_err(store_error)?;
        Ok(StoreSource {
            object: Arc::new(Object {
                store,
                path,
                pinned,
            }),
            handle,
            counter: Arc::default(),
            blocks: Mutex::default(),
        })
    }

    /// What the store said the object was at open.
    pub fn object_meta(&self) -> &ObjectMeta {
        &self.object.pinned
    }

    /// The requests made after open and the bytes they brought.
    pub fn io_stats(&self) -> IoStats {
        self.counter.get()
    }

    /// The bytes `range` of the object, by one pinned request run on the handle, waited for.
    fn fetch(&self, range: Range<u64>) -> io::Result<Bytes> {
        let (object, counter) = (self.object.clone(), self.counter.clone());
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(object.bytes(range, &counter).await);
        });
        rx.recv()
            .map_err(|_| io::Error::other("the object-store runtime stopped"))?
            .map_err(io::Error::from)
    }
}

impl ReadAt for StoreSource {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.object.pinned.size)
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        if buf.is_empty() {
            return Ok(());
        }
        let (first, last) = (offset / BLOCK, (end - 1) / BLOCK);
        let mut have: Vec<Option<Bytes>> = {
            let mut kept = self.blocks.lock().unwrap_or_else(PoisonError::into_inner);
            kept.tick += 1;
            let tick = kept.tick;
            (first..=last)
                .map(|b| {
                    kept.blocks.get_mut(&b).map(|(bytes, t)| {
                        *t = tick;
                        bytes.clone()
                    })
                })
                .collect()
        };
        let missing = (
            have.iter().position(Option::is_none),
            have.iter().rposition(Option::is_none),
        );
        if let (Some(i), Some(j)) = missing {
            // One request for the blocks from the first missing to the last.
            let (m0, m1) = (first + i as u64, first + j as u64);
            let span = m0 * BLOCK..((m1 + 1) * BLOCK).min(self.object.pinned.size);
            let got = self.fetch(span)?;
            let mut kept = self.blocks.lock().unwrap_or_else(PoisonError::into_inner);
            kept.tick += 1;
            let tick = kept.tick;
            for b in m0..=m1 {
                let s = ((b - m0) * BLOCK) as usize;
                let bytes = got.slice(s..(s + BLOCK as usize).min(got.len()));
                if b - m0 < KEPT as u64 / 2 {
                    kept.blocks.insert(b, (bytes.clone(), tick));
                }
                have[(b - first) as usize] = Some(bytes);
            }
            while kept.blocks.len() > KEPT {
                let oldest = kept.blocks.iter().min_by_key(|(_, (_, t))| *t);
                if let Some(b) = oldest.map(|(&b, _)| b) {
                    kept.blocks.remove(&b);
                }
            }
        }
        let mut at = 0;
        for (b, bytes) in (first..).zip(have.iter().flatten()) {
            let base = b * BLOCK;
            let from = (offset.max(base) - base) as usize;
            let to = (end.min(base + bytes.len() as u64) - base) as usize;
            buf[at..at + to - from].copy_from_slice(&bytes[from..to]);
            at += to - from;
        }
        Ok(())
    }

    fn source_len(&self) -> io::Result<u64> {
        Ok(self.object.pinned.size)
    }
}
