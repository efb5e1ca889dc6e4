//! An object in a store as a blocking [`ReadAt`] source ([`StoreSource`]), for the readers
//! that read a file through a source by many small positioned reads (a ragged file's offsets
//! and rows) rather than by the planned blocks of [`StoreArrayReader`](super::StoreArrayReader).

use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::sync::{Arc, Mutex};

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
/// Its reads block: the requests run on the runtime `handle` given at open, and the reading
/// thread waits for them (any thread may read, one of another runtime's included).
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
/// let source = rt.block_on(StoreSource::open(store, "rows.ra".into(), rt.handle().clone()))?;
/// let d = DynRagged::from_source(Arc::new(source))?;
/// assert_eq!(*d.row_bytes(1)?, [3, 0]);
/// # Ok(())
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
pub struct StoreSource {
    object: Arc<Object>,
    handle: tokio::runtime::Handle,
    counter: Arc<Counter>,
    /// Fetched blocks by index, with the tick of their last use.
    blocks: Mutex<(BTreeMap<u64, (Bytes, u64)>, u64)>,
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
    /// reads' requests run on `handle`.
    pub async fn open(
        store: Arc<dyn ObjectStore>,
        path: StorePath,
        handle: tokio::runtime::Handle,
    ) -> Result<StoreSource> {
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
        let mut have = Vec::new();
        {
            let mut kept = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
            kept.1 += 1;
            let tick = kept.1;
            for b in first..=last {
                match kept.0.get_mut(&b) {
                    Some((bytes, t)) => {
                        *t = tick;
                        have.push(bytes.clone());
                    }
                    None => break,
                }
            }
        }
        if have.len() as u64 != last - first + 1 {
            // One request for every block the read crosses (kept ones too: one request).
            let span = first * BLOCK..((last + 1) * BLOCK).min(self.object.pinned.size);
            let got = self.fetch(span)?;
            have = (first..=last)
                .map(|b| {
                    let s = ((b - first) * BLOCK) as usize;
                    got.slice(s..(s + BLOCK as usize).min(got.len()))
                })
                .collect();
            let mut kept = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
            kept.1 += 1;
            let tick = kept.1;
            for (b, bytes) in (first..=last).zip(&have).take(KEPT / 2) {
                kept.0.insert(b, (bytes.clone(), tick));
            }
            while kept.0.len() > KEPT {
                let oldest = kept.0.iter().min_by_key(|(_, (_, t))| *t).map(|(&b, _)| b);
                if let Some(b) = oldest {
                    kept.0.remove(&b);
                }
            }
        }
        let mut at = 0;
        for (b, bytes) in (first..).zip(&have) {
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
