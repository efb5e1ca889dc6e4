//! Writing whole `.ra` objects to object storage: [`put_atomic`], the object-store twin of
//! [`write_atomic`](crate::atomic::write_atomic). Whatever a whole-file writer writes into a
//! `Write` (a [`RawArray`](crate::RawArray), a [`DynArray`](crate::DynArray), records, a
//! ragged file) goes up as one object: by one request when it is small, else by a multipart
//! upload streamed part by part, so memory holds a few parts, not the object (beyond what the
//! writer itself holds: the chunked layout's encoder keeps the compressed section, which comes
//! before its index is known). Nothing is at the path until the upload completes: a failed or
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

use object_store::path::Path as StorePath;
use object_store::{
    MultipartUpload, ObjectStore, ObjectStoreExt, PutMode, PutMultipartOptions, PutOptions,
    PutPayload, PutResult, UpdateVersion,
};
use tokio::runtime::{Handle, RuntimeFlavor};

use crate::error::{Error, Result};

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
    let mut parts = Parts {
        handle,
        store,
        path,
        opts,
        part: opts.part,
        buf: Vec::new(),
        upload: None,
        sent: 0,
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

/// The parts of one upload (see [`put_atomic`]).
struct Parts<'a> {
    handle: &'a Handle,
    store: &'a Arc<dyn ObjectStore>,
    path: &'a StorePath,
    opts: &'a UploadOptions,
    /// This part's size: `opts.part`, doubled every thousand parts.
    part: usize,
    buf: Vec<u8>,
    upload: Option<Box<dyn MultipartUpload>>,
    sent: usize,
    /// Parts on their way: spawned on a multi-thread runtime (they go up while the next part
    /// is filled), else polled whenever this waits for one.
    inflight: FuturesUnordered<BoxFuture<'static, Result<()>>>,
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

    /// Sends `bytes` as the next part, waiting for the oldest part in flight past
    /// `opts.parallel`.
    fn send(&mut self, bytes: Vec<u8>) -> Result<()> {
        if self.upload.is_none() {
            let up = self
                .handle
                .block_on(
                    self.store
                        .put_multipart_opts(self.path, PutMultipartOptions::default()),
                )
                .map_err(|e| self.store_error(e))?;
            self.upload = Some(up);
        }
        let up = self.upload.as_mut().expect("created above");
        let fut = up.put_part(PutPayload::from(bytes));
        let path = self.path.clone();
        let part: BoxFuture<'static, Result<()>> =
            if self.handle.runtime_flavor() == RuntimeFlavor::CurrentThread {
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
            Some(r) => r,
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
        if self.upload.is_none() {
            // Small: one request, the precondition (if any) checked by the store itself.
            let payload = PutPayload::from(std::mem::take(&mut self.buf));
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
            let up = self.upload.as_mut().expect("multipart");
            self.handle.block_on(up.complete()).map_err(|e| {
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
        if let Some(mut up) = self.upload.take() {
            let _ = self.handle.block_on(up.abort());
        }
    }
}

fn part_error(path: &StorePath, e: object_store::Error) -> Error {
    io::Error::other(format!("object {path}: {}", super::store_text(&e))).into()
}

impl Write for Parts<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.failed.is_some() {
            return Err(io::Error::other("the upload failed"));
        }
        let mut rest = data;
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
