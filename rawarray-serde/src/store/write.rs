//! Writing whole `.ra` objects to object storage: [`put_atomic`], the object-store twin of
//! [`write_atomic`](crate::atomic::write_atomic). Whatever a whole-file writer writes into a
//! `Write` (a [`RawArray`](crate::RawArray), a [`DynArray`](crate::DynArray), records, a
//! ragged file) goes up as one object: by one request when it is small, else by a multipart
//! upload streamed part by part, so memory holds a few parts, not the object. A chunked
//! section's index, which comes before its chunks, is known only once they are all encoded:
//! [`put_atomic_to`] with the store's numbered multipart API takes it last (the writer writes
//! through [`write_section_to`](crate::section::write::write_section_to), as
//! [`RawArray::write_to_sink`](crate::RawArray::write_to_sink) and Python's `rawarray.write`
//! do), so the chunks go up as they are encoded; other writers (a `DynArray`, records, ragged
//! files) hold the compressed section first. Nothing is at the path until the upload completes: a failed or
//! interrupted write leaves the path as it was (the previous object, or none), and a failed
//! write aborts its upload. A process killed mid-way leaves parts behind, invisible and
//! unreadable, which [`recover`](super::StoreUrl::recover) (S3; run by the next write to the
//! same path) aborts; GCS and Azure drop them on their own (Azure after 7 days; GCS keeps them
//! until a lifecycle rule or a `recover` of its S3-compatible API removes them).
//!
//! Appending records in place ([`RecordWriter`](crate::RecordWriter)) has no object-store
//! twin: an object cannot be appended to; write the records locally and upload the file, or
//! write them whole.

use std::io::{self, Write};
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};

use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as StorePath;
use object_store::{
    MultipartId, MultipartUpload, ObjectStore, ObjectStoreExt, PutMode, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, UpdateVersion,
};
use tokio::runtime::{Handle, RuntimeFlavor};

use crate::error::{Error, Result};
use crate::section::write::Sink;

/// S3's smallest part but the last: 5 MiB.
pub const MIN_PART: usize = 5 << 20;
/// S3's most parts in one upload.
pub const MAX_PARTS: usize = 10_000;

/// How [`put_atomic`] uploads.
#[derive(Clone, Debug)]
pub struct UploadOptions {
    part: usize,
    parallel: usize,
    update: Option<UpdateVersion>,
}

impl Default for UploadOptions {
    fn default() -> UploadOptions {
        UploadOptions {
            part: 16 << 20,
            parallel: 4,
            update: None,
        }
    }
}

impl UploadOptions {
    /// The defaults: parts of 16 MiB (doubling every thousand parts, so the 10,000 parts S3
    /// allows hold any object up to about 80 TiB), four parts in flight at once.
    pub fn new() -> UploadOptions {
        UploadOptions::default()
    }

    /// Bytes of each part (at least [`MIN_PART`]): an object smaller than one part goes up by
    /// one request.
    #[must_use]
    pub fn part_size(mut self, bytes: usize) -> UploadOptions {
        self.part = bytes.max(MIN_PART);
        self
    }

    /// Bytes of each part (the first thousand).
    pub(crate) fn part_len(&self) -> usize {
        self.part
    }

    /// Parts in flight at once (at least 1): memory holds about this many parts, and one more
    /// being filled.
    #[must_use]
    pub fn parallel(mut self, n: usize) -> UploadOptions {
        self.parallel = n.max(1);
        self
    }

    /// Replace only the object of this ETag (and version): an object changed since it was
    /// read is refused, with an error saying so, and left as it is.
    #[must_use]
    pub fn if_match(mut self, e_tag: Option<String>, version: Option<String>) -> UploadOptions {
        self.update = Some(UpdateVersion { e_tag, version });
        self
    }
}

/// Writes an object at `path` whatever `write` writes (see the module docs), on the runtime
/// `handle` (call it from a thread outside that runtime: it blocks until the object is there).
///
/// ```
/// use std::sync::Arc;
/// use object_store::{memory::InMemory, ObjectStore};
/// use rawarray_serde::store::{put_atomic, UploadOptions};
/// use rawarray_serde::{RawArray, StoreArrayReader, WriteOptions};
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
/// let a = RawArray::from_shape_vec(vec![1000], (0..1000).map(|i| i as f32).collect()).unwrap();
/// let path = "runs/a.ra".into();
/// put_atomic(rt.handle(), &store, &path, &UploadOptions::new(), |w| {
///     a.write_to_with(w, &WriteOptions::for_name("zstd")?)
/// })
/// .unwrap();
/// let r = rt.block_on(StoreArrayReader::open(store, path)).unwrap();
/// let back: RawArray<f32> = rt.block_on(r.read_all()).unwrap();
/// assert_eq!(back, a);
/// ```
pub fn put_atomic<F>(
    handle: &Handle,
    store: &Arc<dyn ObjectStore>,
    path: &StorePath,
    opts: &UploadOptions,
    write: F,
) -> Result<PutResult>
where
    F: FnOnce(&mut dyn Write) -> Result<()>,
{
    put_atomic_to(handle, store, None, path, opts, |w| write(w))
}

/// [`put_atomic`] into a [`Sink`]: given the store's numbered multipart API (`numbered`: the
/// S3, GCS and Azure stores; object_store 0.13.2's `InMemory` has one that cannot take parts
/// out of order, so do not pass it), the sink takes a file's head last
/// ([`Sink::reserve_head`]), so a chunked section written by
/// [`write_section_to`](crate::section::write::write_section_to) goes up as its chunks are
/// encoded, and the first part (the header, config, index and the first chunks) last.
///
/// ```
/// use std::sync::Arc;
/// use object_store::{memory::InMemory, ObjectStore};
/// use rawarray_serde::section::write::{write_section_to, PlainBytes};
/// use rawarray_serde::store::{put_atomic_to, UploadOptions};
/// use rawarray_serde::{ElType, Header, RawArray, StoreArrayReader, WriteOptions};
/// let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
/// let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
/// let values: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
/// let header = Header::new(ElType::Uint, 1, vec![values.len() as u64]).unwrap();
/// let opts = WriteOptions::for_name("lz4")?;
/// let path = "runs/a.ra".into();
/// // `numbered`: Some(the store as `Arc<dyn MultipartStore>`) for S3, GCS or Azure
/// // (`StoreUrl::put_atomic` passes it); without it the bytes go up in order.
/// put_atomic_to(rt.handle(), &store, None, &path, &UploadOptions::new(), |w| {
///     write_section_to(w, &header, &opts, None, &PlainBytes::new(&values)).map(|_| ())
/// })?;
/// let r = rt.block_on(StoreArrayReader::open(store, path))?;
/// let back: RawArray<u8> = rt.block_on(r.read_all())?;
/// assert_eq!(back.as_slice(), &values[..]);
/// # Ok::<(), rawarray_serde::Error>(())
/// ```
pub fn put_atomic_to<F>(
    handle: &Handle,
    store: &Arc<dyn ObjectStore>,
    numbered: Option<&Arc<dyn MultipartStore>>,
    path: &StorePath,
    opts: &UploadOptions,
    write: F,
) -> Result<PutResult>
where
    F: FnOnce(&mut dyn Sink) -> Result<()>,
{
    let mut parts = Parts {
        handle,
        store,
        numbered,
        path,
        opts,
        part: opts.part,
        buf: Vec::new(),
        upload: None,
        sent: 0,
        next_idx: 0,
        head: None,
        ids: Vec::new(),
        inflight: FuturesUnordered::new(),
        failed: None,
    };
    let wrote = write(&mut parts).and_then(|()| parts.flush_err());
    match wrote {
        Ok(()) => parts.finish(),
        Err(e) => {
            parts.abort();
            Err(e)
        }
    }
}

/// An upload under way: object_store's (parts numbered as they are sent), or the store's
/// numbered multipart API (the first part can be sent last).
enum Upload {
    Sequential(Box<dyn MultipartUpload>),
    Numbered(MultipartId),
}

/// A head reserved by [`Sink::reserve_head`]: the first part is the head, then the first
/// `hold` bytes written after it (so that it is a whole part), sent last.
struct Head {
    len: usize,
    hold: usize,
    held: Vec<u8>,
    bytes: Option<Vec<u8>>,
}

/// A part's upload: its index and id when numbered.
type PartFuture = BoxFuture<'static, Result<Option<(usize, PartId)>>>;

/// The parts of one upload (see [`put_atomic`]).
struct Parts<'a> {
    handle: &'a Handle,
    store: &'a Arc<dyn ObjectStore>,
    numbered: Option<&'a Arc<dyn MultipartStore>>,
    path: &'a StorePath,
    opts: &'a UploadOptions,
    /// This part's size: `opts.part`, doubled every thousand parts.
    part: usize,
    buf: Vec<u8>,
    upload: Option<Upload>,
    sent: usize,
    /// The index of the next numbered part (0-based; from 1 when a head is reserved).
    next_idx: usize,
    head: Option<Head>,
    /// The numbered parts' ids, by index.
    ids: Vec<Option<PartId>>,
    /// Parts on their way: spawned on a multi-thread runtime (they go up while the next part
    /// is filled), else polled whenever this waits for one.
    inflight: FuturesUnordered<PartFuture>,
    /// The first error of an upload, kept for the message (a `Write` can only say `io::Error`).
    failed: Option<Error>,
}

impl Parts<'_> {
    fn store_error(&self, e: object_store::Error) -> Error {
        Error::from(io::Error::other(format!(
            "object {}: {}",
            self.path,
            super::store_text(&e)
        )))
    }

    /// Starts the upload: numbered when a head is reserved, else object_store's.
    fn start(&mut self) -> Result<()> {
        let up = match (self.numbered, &self.head) {
            (Some(n), Some(_)) => Upload::Numbered(
                self.handle
                    .block_on(n.create_multipart(self.path))
                    .map_err(|e| self.store_error(e))?,
            ),
            _ => Upload::Sequential(
                self.handle
                    .block_on(
                        self.store
                            .put_multipart_opts(self.path, PutMultipartOptions::default()),
                    )
                    .map_err(|e| self.store_error(e))?,
            ),
        };
        self.upload = Some(up);
        Ok(())
    }

    /// Sends `bytes` as the next part (or, numbered, as part `idx`), waiting for the oldest
    /// part in flight past `opts.parallel`.
    fn send(&mut self, bytes: Vec<u8>) -> Result<()> {
        let idx = self.next_idx;
        self.next_idx += 1;
        self.send_as(idx, bytes)
    }

    fn send_as(&mut self, idx: usize, bytes: Vec<u8>) -> Result<()> {
        if self.upload.is_none() {
            self.start()?;
        }
        let path = self.path.clone();
        let fut: BoxFuture<'static, object_store::Result<Option<(usize, PartId)>>> =
            match self.upload.as_mut().expect("started above") {
                Upload::Sequential(up) => {
                    let f = up.put_part(PutPayload::from(bytes));
                    Box::pin(async move { f.await.map(|()| None) })
                }
                Upload::Numbered(id) => {
                    let (n, id) = (Arc::clone(self.numbered.expect("numbered")), id.clone());
                    let path = path.clone();
                    Box::pin(async move {
                        let part = n.put_part(&path, &id, idx, PutPayload::from(bytes)).await?;
                        Ok(Some((idx, part)))
                    })
                }
            };
        let part: PartFuture = if self.handle.runtime_flavor() == RuntimeFlavor::CurrentThread {
            Box::pin(async move { fut.await.map_err(|e| part_error(&path, e)) })
        } else {
            let task = self.handle.spawn(fut);
            Box::pin(async move {
                match task.await {
                    Ok(r) => r.map_err(|e| part_error(&path, e)),
                    Err(e) => Err(io::Error::other(format!(
                        "object {path}: a part's upload: {}",
                        super::store_text(&e)
                    ))
                    .into()),
                }
            })
        };
        self.inflight.push(part);
        self.sent += 1;
        if self.sent.is_multiple_of(1000) {
            self.part = self.part.saturating_mul(2);
        }
        while self.inflight.len() > self.opts.parallel {
            self.wait_one()?;
        }
        Ok(())
    }

    /// Waits for a part in flight to be up (driving them all meanwhile).
    fn wait_one(&mut self) -> Result<()> {
        match self.handle.block_on(self.inflight.next()) {
            Some(Ok(Some((idx, id)))) => {
                if self.ids.len() <= idx {
                    self.ids.resize(idx + 1, None);
                }
                self.ids[idx] = Some(id);
                Ok(())
            }
            Some(r) => r.map(|_| ()),
            None => Ok(()),
        }
    }

    fn flush_err(&mut self) -> Result<()> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn finish(mut self) -> Result<PutResult> {
        let mode = match &self.opts.update {
            Some(v) => PutMode::Update(v.clone()),
            None => PutMode::Overwrite,
        };
        // A reserved head goes first: in front of the bytes held for the first part.
        let first = match self.head.take() {
            Some(h) => {
                let Some(mut bytes) = h.bytes else {
                    self.abort();
                    return Err(Error::msg(format!(
                        "object {}: the head of {} bytes was reserved and never given",
                        self.path, h.len
                    )));
                };
                bytes.extend_from_slice(&h.held);
                Some(bytes)
            }
            None => None,
        };
        if self.upload.is_none() {
            // Small: one request, the precondition (if any) checked by the store itself.
            let mut all = first.unwrap_or_default();
            all.append(&mut self.buf);
            let payload = PutPayload::from(all);
            let opts = PutOptions {
                mode,
                ..PutOptions::default()
            };
            return self
                .handle
                .block_on(self.store.put_opts(self.path, payload, opts))
                .map_err(|e| self.refused(e));
        }
        let result = (|| {
            if !self.buf.is_empty() {
                let last = std::mem::take(&mut self.buf);
                self.send(last)?;
            }
            if let Some(first) = first {
                self.send_as(0, first)?;
            }
            while !self.inflight.is_empty() {
                self.wait_one()?;
            }
            // object_store's multipart completion takes no precondition: the object is looked
            // at just before, and the upload is aborted if it changed (a write between the two
            // requests is not seen: S3 and GCS have no conditional multipart completion that
            // object_store sends).
            if let Some(v) = &self.opts.update {
                let now = self.handle.block_on(self.store.head(self.path));
                let same = match &now {
                    Ok(m) => m.e_tag == v.e_tag && (v.version.is_none() || m.version == v.version),
                    Err(_) => false,
                };
                if !same {
                    return Err(self.changed(now.ok().and_then(|m| m.e_tag)));
                }
            }
            let done = match self.upload.as_mut().expect("multipart") {
                Upload::Sequential(up) => self.handle.block_on(up.complete()),
                Upload::Numbered(id) => {
                    let ids = std::mem::take(&mut self.ids);
                    let parts = ids
                        .into_iter()
                        .collect::<Option<Vec<PartId>>>()
                        .ok_or_else(|| {
                            Error::msg(format!("object {}: a part is missing", self.path))
                        })?;
                    let n = self.numbered.expect("numbered");
                    self.handle
                        .block_on(n.complete_multipart(self.path, id, parts))
                }
            };
            done.map_err(|e| {
                Error::from(io::Error::other(format!(
                    "object {}: {}",
                    self.path,
                    super::store_text(&e)
                )))
            })
        })();
        if result.is_err() {
            self.abort();
        }
        result
    }

    fn changed(&self, now: Option<String>) -> Error {
        let then = self
            .opts
            .update
            .as_ref()
            .and_then(|v| v.e_tag.clone())
            .unwrap_or_default();
        io::Error::other(format!(
            "object {} changed since it was read (ETag {then} then, {} now): not replaced; read it again and write your update over the new object",
            self.path,
            now.unwrap_or_else(|| "none".into())
        ))
        .into()
    }

    fn refused(&self, e: object_store::Error) -> Error {
        match e {
            object_store::Error::Precondition { .. }
            | object_store::Error::AlreadyExists { .. } => self.changed(None),
            e => self.store_error(e),
        }
    }

    /// Aborts the upload (best effort: a part left behind is `recover`'s).
    fn abort(&mut self) {
        self.inflight = FuturesUnordered::new();
        match self.upload.take() {
            Some(Upload::Sequential(mut up)) => {
                let _ = self.handle.block_on(up.abort());
            }
            Some(Upload::Numbered(id)) => {
                if let Some(n) = self.numbered {
                    let _ = self.handle.block_on(n.abort_multipart(self.path, &id));
                }
            }
            None => {}
        }
    }

    /// Takes `data` into the first part's held bytes while they are short; returns the rest.
    fn hold<'d>(&mut self, data: &'d [u8]) -> &'d [u8] {
        match &mut self.head {
            Some(h) if h.held.len() < h.hold => {
                if h.held.capacity() < h.hold {
                    h.held.reserve_exact(h.hold - h.held.len());
                }
                let n = (h.hold - h.held.len()).min(data.len());
                h.held.extend_from_slice(&data[..n]);
                &data[n..]
            }
            _ => data,
        }
    }
}

fn part_error(path: &StorePath, e: object_store::Error) -> Error {
    io::Error::other(format!("object {path}: {}", super::store_text(&e))).into()
}

impl Sink for Parts<'_> {
    /// Reserves the head when the store's multipart API is numbered and nothing was written:
    /// the first part is then the head and the first bytes after it, sent last.
    fn reserve_head(&mut self, len: u64) -> bool {
        let Ok(len) = usize::try_from(len) else {
            return false;
        };
        if self.numbered.is_none() || self.head.is_some() || self.sent > 0 || !self.buf.is_empty() {
            return false;
        }
        self.head = Some(Head {
            len,
            hold: self.part.saturating_sub(len),
            held: Vec::new(),
            bytes: None,
        });
        self.next_idx = 1;
        true
    }

    fn fill_head(&mut self, head: &[u8]) -> Result<()> {
        match &mut self.head {
            Some(h) if h.bytes.is_none() && head.len() == h.len => {
                // Room for the held bytes too: the first part is the head, then them.
                let mut first = Vec::with_capacity(h.len + h.held.len());
                first.extend_from_slice(head);
                h.bytes = Some(first);
                Ok(())
            }
            Some(h) => Err(Error::msg(format!(
                "object {}: a head of {} bytes given for {} reserved (or given twice)",
                self.path,
                head.len(),
                h.len
            ))),
            None => Err(Error::msg(format!(
                "object {}: no head was reserved",
                self.path
            ))),
        }
    }
}

impl Write for Parts<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.failed.is_some() {
            return Err(io::Error::other("the upload failed"));
        }
        let mut rest = self.hold(data);
        while !rest.is_empty() {
            let room = self.part - self.buf.len();
            let n = room.min(rest.len());
            if self.buf.capacity() < self.part {
                self.buf.reserve_exact(self.part - self.buf.len());
            }
            self.buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if self.buf.len() == self.part {
                let full = std::mem::take(&mut self.buf);
                if let Err(e) = self.send(full) {
                    let msg = e.to_string();
                    self.failed = Some(e);
                    return Err(io::Error::other(msg));
                }
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
