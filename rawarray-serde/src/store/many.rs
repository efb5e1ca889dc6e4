//! Many writers of one chunked object in an object store: [`StoreArrayWriter`], the
//! object-store twin of [`ArrayWriter`](crate::ArrayWriter) (the design and its cost:
//! doc/cloud.md, "Many writers to one object").
//!
//! An object cannot be written in place, and a multipart upload's parts must be numbered before
//! the object's layout is known, so writers do not share an upload: each writer compresses its
//! chunk-aligned block's chunks and uploads them as one temporary object (the chunks' stored
//! bytes, then a small manifest of their entries) under a hidden prefix beside the target,
//! `DIR/.NAME.rawarray-parts/SESSION/`. [`StoreArrayWriter::finish`], called once by the client
//! after every block is written, lists those objects, reads their manifests, writes the header,
//! config and index, and assembles the object from the header and the blocks' bytes: on S3 by
//! copying every block of 5 MiB or more server-side (UploadPartCopy; only the header and the
//! few MiB where small blocks meet pass through the finisher), elsewhere by streaming the
//! blocks through the finisher (one multipart upload, memory bounded by a few parts). Nothing is
//! at the target until the upload completes; then the temporaries are removed.

use std::io;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::{Path as StorePath, PathPart};
use object_store::{GetOptions, GetRange, ObjectMeta, ObjectStore};
use rayon::prelude::*;
use tokio::runtime::Handle;

use super::write::{put_atomic, UploadOptions, MAX_PARTS, MIN_PART};
use crate::codec::config::bad;
use crate::codec::{Chain, Config, Entry, Grid};
use crate::data;
use crate::error::block_text;
use crate::error::{Error, Result};
use crate::header::{Flags, Header};
use crate::options::WriteOptions;
use crate::subset::SubsetPlan;

/// The last bytes of a block object: its manifest's length and checks, then this magic.
const MAGIC: &[u8; 8] = b"RAPARTS1";
/// Bytes after the manifest's entries: count u64, settings CRC u32, manifest CRC u32, data
/// length u64, entries length u64, magic.
const TAIL: u64 = 40;
/// Bytes of a block object's end fetched for its manifest at once (a block of up to about a
/// thousand chunks); a longer manifest costs one more request.
const MANIFEST_FETCH: u64 = 64 << 10;
/// Requests the finisher keeps in flight (manifests, part copies, deletions).
const PARALLEL: usize = 8;
/// S3's largest part copied by one UploadPartCopy: 5 GiB.
const MAX_COPY: u64 = 5 << 30;
/// The suffix of the hidden folder beside the target that holds the blocks of its writers.
const PARTS_SUFFIX: &str = ".rawarray-parts";

/// Blocks of one chunked array written by many processes into one object (see the module
/// docs): every process makes a writer of the same array, settings and session
/// ([`StoreArrayWriter::session`] tells the client's to the workers), writes its
/// chunk-aligned blocks with [`write_block`](StoreArrayWriter::write_block), and the client
/// calls [`finish`](StoreArrayWriter::finish) once all are written (or
/// [`abort`](StoreArrayWriter::abort) to give up, removing what was uploaded).
///
/// ```
/// use std::sync::Arc;
/// use object_store::{memory::InMemory, ObjectStore};
/// use rawarray_serde::store::StoreArrayWriter;
/// use rawarray_serde::{codec::Codec, ElType, Header, RawArray, StoreArrayReader, WriteOptions};
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
/// let header = Header::new(ElType::Uint, 2, vec![4, 6]).unwrap();
/// let opts = WriteOptions::new().codec(Codec::Zstd).chunks(vec![4, 2]);
/// let client = StoreArrayWriter::new(store.clone(), "out/z.ra".into(), header.clone(), &opts).unwrap();
/// // Three "workers", one block of two columns each, in any order.
/// for col in [4u64, 0, 2] {
///     let w = StoreArrayWriter::resume(store.clone(), "out/z.ra".into(), header.clone(), &opts,
///                                      client.session()).unwrap();
///     let values: Vec<u8> = (0..8u16).flat_map(|i| (col as u16 * 10 + i).to_le_bytes()).collect();
///     w.write_block(rt.handle(), &[0..4, col..col + 2], &values).unwrap();
/// }
/// let done = client.finish(rt.handle()).unwrap();
/// assert_eq!(done.blocks, 3);
/// let r = rt.block_on(StoreArrayReader::open(store, "out/z.ra")).unwrap();
/// let a: RawArray<u16> = rt.block_on(r.read_all()).unwrap();
/// assert_eq!(a.get(&[1, 5]), Some(&45)); // column 5: block 4..6, its element 5
/// ```
#[derive(Clone, Debug)]
pub struct StoreArrayWriter {
    store: Arc<dyn ObjectStore>,
    path: StorePath,
    session: String,
    /// The plain header of the array (dims, element); the object's is chunked.
    header: Header,
    config: Config,
    grid: Grid,
    chain: Chain,
    /// A hash of the header and config: every block must have been written with the same.
    settings: u32,
    fill_missing: bool,
    #[cfg(feature = "cloud")]
    s3: Option<S3>,
}

/// The S3 store and bucket behind a URL, for the server-side part copies.
#[cfg(feature = "cloud")]
#[derive(Clone, Debug)]
pub(crate) struct S3 {
    pub(crate) store: Arc<object_store::aws::AmazonS3>,
    pub(crate) bucket: super::s3::S3Bucket,
}

/// What [`StoreArrayWriter::finish`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Finished {
    /// Bytes of the object written.
    pub bytes: u64,
    /// Blocks (temporary objects) it was assembled from.
    pub blocks: usize,
    /// Chunks written (the others read as zeros).
    pub chunks: u64,
    /// Parts of the object's upload (1 for an object put by one request).
    pub parts: usize,
    /// Bytes copied by the store itself (S3's UploadPartCopy), never through the finisher.
    pub copied: u64,
    /// Bytes that passed through the finisher: header, config, index and streamed blocks.
    pub streamed: u64,
}

/// One block object, as its manifest says.
#[derive(Clone, Debug)]
struct Block {
    meta: ObjectMeta,
    /// Bytes of chunk data at the start of the object.
    data_len: u64,
    /// `(chunk, offset in the block, entry, statistics)`, in the block's order.
    chunks: Vec<(u64, Entry, Vec<u8>)>,
}

impl StoreArrayWriter {
    /// A writer of a new session: the client's, before any block is written. `header` gives
    /// the element and dims (little-endian), `opts` the chunked settings (chunks, codec,
    /// filters, statistics; a plain `opts` gets the chunked defaults of zstd, as an object is
    /// always written chunked; whole-LZ4 is refused, as by an `ArrayWriter`). Nothing is sent
    /// to the store.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        path: StorePath,
        header: Header,
        opts: &WriteOptions,
    ) -> Result<StoreArrayWriter> {
        StoreArrayWriter::resume(store, path, header, opts, &new_session())
    }

    /// A writer of the session `session` (the client's [`StoreArrayWriter::session`]): a
    /// worker's, of the same array and settings. Nothing is sent to the store.
    pub fn resume(
        store: Arc<dyn ObjectStore>,
        path: StorePath,
        header: Header,
        opts: &WriteOptions,
        session: &str,
    ) -> Result<StoreArrayWriter> {
        if session.is_empty() || !session.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(bad("session", "letters and digits", session));
        }
        if header.is_big_endian() {
            return Err(Error::unsupported(
                "a StoreArrayWriter writes little-endian arrays: the header says big-endian",
            ));
        }
        let mut plain = header;
        plain.flags = plain
            .flags
            .with(Flags::CHUNKED, false)
            .with(Flags::COMPRESSED, false);
        plain.size = plain.data_len();
        opts.storage()
            .check_grows_in_place("a StoreArrayWriter's array")?;
        // Its parts are whole chunks: options without chunk settings (plain) get zstd's.
        let opts = match opts.chunk_settings() {
            Some(chunked) => chunked.clone(),
            None => opts.clone().codec(crate::codec::Codec::Zstd),
        };
        let config = opts.chunk_config(&plain, None)?;
        let grid = Grid::new(&plain.dims, &config.chunk, plain.elbyte)?;
        let chain = Chain::from_config(&config, &plain)?;
        // FNV-1a, not a CRC: the config ends with its own CRC, after which a CRC's state is
        // the same whatever the config said.
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for b in plain.encode().iter().chain(&config.encode()) {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        Ok(StoreArrayWriter {
            store,
            path,
            session: session.to_string(),
            settings: (h ^ (h >> 32)) as u32,
            header: plain,
            config,
            grid,
            chain,
            fill_missing: false,
            #[cfg(feature = "cloud")]
            s3: None,
        })
    }

    /// With S3's store and bucket, for server-side part copies ([`StoreUrl`](super::StoreUrl)
    /// adds them to the writers it makes).
    #[cfg(feature = "cloud")]
    pub(crate) fn with_s3(mut self, s3: Option<S3>) -> StoreArrayWriter {
        self.s3 = s3;
        self
    }

    /// Whether [`finish`](StoreArrayWriter::finish) writes an object in which some chunks were
    /// never written (they read as zeros): off by default, so that a store in which a worker
    /// died is refused, naming the chunks missing, rather than written with zeros.
    #[must_use]
    pub fn fill_missing(mut self, on: bool) -> StoreArrayWriter {
        self.fill_missing = on;
        self
    }

    /// The session: what workers pass to [`StoreArrayWriter::resume`].
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The chunk shape, in the file's dim order: blocks must be aligned to it.
    pub fn chunks(&self) -> &[u64] {
        &self.config.chunk
    }

    /// The object's path in the store.
    pub fn path(&self) -> &StorePath {
        &self.path
    }

    /// The hidden folder beside the target where this session's blocks wait for the finish.
    pub fn session_prefix(&self) -> StorePath {
        parts_prefix(&self.path).join(self.session.as_str())
    }

    /// Writes the block `ranges` (one per dim of the array, first fastest) from its
    /// little-endian bytes in column-major order: its chunks compressed on rayon's pool, then
    /// uploaded as one temporary object (atomically: a writer killed mid-way leaves no block,
    /// only parts that [`finish`](StoreArrayWriter::finish) or a `recover` aborts). The block
    /// must cover whole chunks (the last chunk of a dim may be cut by the dim's end). A block
    /// written again (a task run twice) replaces its object. Call it from a thread outside
    /// `handle`'s runtime.
    pub fn write_block(&self, handle: &Handle, ranges: &[Range<u64>], bytes: &[u8]) -> Result<()> {
        let plan = SubsetPlan::new(&self.header.dims, self.header.elbyte, ranges)?;
        if plan.bytes() != bytes.len() as u64 {
            return Err(crate::error::ErrorKind::ShapeMismatch {
                dims: plan.dims(),
                expected: plan.bytes(),
                len: bytes.len() as u64,
            }
            .into());
        }
        if plan.is_empty() {
            return Ok(());
        }
        let grid = &self.grid;
        grid.check_aligned(ranges)?;
        let chunks: Vec<u64> = grid.touched(ranges).collect();
        let encoded: Vec<(u64, Vec<u8>, u32, Vec<u8>)> = chunks
            .par_iter()
            .map(|&n| {
                let raw = grid.chunk_of_block(n, ranges, bytes)?;
                let (stored, flags) = self.chain.encode_chunk(&raw, &grid.shape(n))?;
                Ok((n, stored, flags, self.stats_of(&raw)))
            })
            .collect::<Result<_>>()?;
        let key = self.session_prefix().join(block_name(ranges).as_str());
        let mut manifest = Vec::new();
        let mut at = 0u64;
        for (n, stored, flags, stats) in &encoded {
            manifest.extend_from_slice(&n.to_le_bytes());
            manifest.extend_from_slice(&at.to_le_bytes());
            manifest.extend_from_slice(&(stored.len() as u64).to_le_bytes());
            manifest.extend_from_slice(&crc32fast::hash(stored).to_le_bytes());
            manifest.extend_from_slice(&flags.to_le_bytes());
            manifest.extend_from_slice(&(stats.len() as u32).to_le_bytes());
            manifest.extend_from_slice(stats);
            at += stored.len() as u64;
        }
        let entries_len = manifest.len() as u64;
        manifest.extend_from_slice(&(encoded.len() as u64).to_le_bytes());
        manifest.extend_from_slice(&self.settings.to_le_bytes());
        let crc = crc32fast::hash(&manifest);
        manifest.extend_from_slice(&crc.to_le_bytes());
        manifest.extend_from_slice(&at.to_le_bytes());
        manifest.extend_from_slice(&entries_len.to_le_bytes());
        manifest.extend_from_slice(MAGIC);
        put_atomic(handle, &self.store, &key, &UploadOptions::new(), |w| {
            for (_, stored, _, _) in &encoded {
                w.write_all(stored)?;
            }
            w.write_all(&manifest)?;
            Ok(())
        })
        .map_err(|e| {
            Error::msg(format!(
                "block {} of {}: {}",
                block_text(ranges),
                self.path,
                super::store_text(&e)
            ))
        })?;
        Ok(())
    }

    fn stats_of(&self, raw: &[u8]) -> Vec<u8> {
        match &self.config.stats {
            Some(fields) => {
                let rounded = self.chain.pipeline().round(raw);
                crate::codec::stats::compute(
                    fields,
                    rounded.as_deref().unwrap_or(raw),
                    self.header.elbyte,
                    false,
                )
            }
            None => Vec::new(),
        }
    }

    /// Assembles the object from the blocks written (see the module docs), then removes them:
    /// the client's call, once every block is written. Refused, leaving everything as it was,
    /// when a chunk was never written (a worker that died; unless
    /// [`fill_missing`](StoreArrayWriter::fill_missing)), when two blocks hold one chunk, or
    /// when a block was written with other settings; the error names the chunks or blocks.
    /// S3 uploads that killed workers left under the session are aborted first.
    pub fn finish(&self, handle: &Handle) -> Result<Finished> {
        let prefix = self.session_prefix();
        #[cfg(feature = "cloud")]
        if let Some(s3) = &self.s3 {
            let _ = handle.block_on(super::s3::abort_under(&s3.bucket, &s3.store, &prefix));
        }
        let listed: Vec<ObjectMeta> = handle
            .block_on(self.store.list(Some(&prefix)).try_collect())
            .map_err(|e| self.error("listing the blocks written", e))?;
        let mut blocks: Vec<Block> = handle.block_on(
            futures::stream::iter(listed.into_iter().map(|m| self.manifest(m)))
                .buffer_unordered(PARALLEL)
                .try_collect(),
        )?;
        blocks.sort_by_key(|b| b.chunks.first().map_or(u64::MAX, |c| c.0));
        let (head, chunks) = self.head(&blocks)?;
        let data: u64 = blocks.iter().map(|b| b.data_len).sum();
        let mut done = Finished {
            bytes: head.len() as u64 + data,
            blocks: blocks.len(),
            chunks,
            ..Finished::default()
        };
        let plan = plan_parts(
            head.len() as u64,
            &blocks.iter().map(|b| b.data_len).collect::<Vec<_>>(),
            part_floor(head.len() as u64 + data),
        );
        let copies = plan.iter().any(|p| matches!(p, Part::Copy { .. }));
        #[cfg(feature = "cloud")]
        let assembled = match &self.s3 {
            Some(s3) if copies => self.assemble_s3(handle, s3, &head, &blocks, &plan, &mut done),
            _ => self.assemble_streamed(handle, &head, &blocks, &mut done),
        };
        #[cfg(not(feature = "cloud"))]
        let assembled = {
            let _ = copies;
            self.assemble_streamed(handle, &head, &blocks, &mut done)
        };
        assembled?;
        let paths = blocks.iter().map(|b| b.meta.location.clone()).collect();
        self.remove(handle, paths)?;
        Ok(done)
    }

    /// Removes every block written in this session (and, on S3, aborts their uploads): what
    /// a client that gives up calls. Says how many blocks it removed.
    pub fn abort(&self, handle: &Handle) -> Result<usize> {
        remove_under(handle, &self.store, &self.session_prefix(), |p| {
            #[cfg(feature = "cloud")]
            if let Some(s3) = &self.s3 {
                let _ = handle.block_on(super::s3::abort_under(&s3.bucket, &s3.store, p));
            }
            let _ = p;
        })
        .map_err(|e| self.error("removing the blocks written", e))
    }

    fn remove(&self, handle: &Handle, paths: Vec<StorePath>) -> Result<()> {
        let stream = futures::stream::iter(paths.into_iter().map(Ok)).boxed();
        handle
            .block_on(self.store.delete_stream(stream).try_collect::<Vec<_>>())
            .map_err(|e| self.error("removing the blocks after the object was written", e))?;
        Ok(())
    }

    fn error(&self, doing: &str, e: impl std::fmt::Display) -> Error {
        io::Error::other(format!(
            "{} ({doing}): {}",
            self.path,
            super::store_text(&e)
        ))
        .into()
    }

    /// A block object's manifest, checked against the object's length and this writer's
    /// settings.
    async fn manifest(&self, meta: ObjectMeta) -> Result<Block> {
        let key = meta.location.clone();
        let broken = |why: String| -> Error {
            Error::msg(format!(
                "{}: block {key} is not a block a StoreArrayWriter wrote ({why}); remove it (abort, or recover the URL) and write the block again",
                self.path
            ))
        };
        if meta.size < TAIL {
            return Err(broken(format!("{} bytes", meta.size)));
        }
        let want = MANIFEST_FETCH.min(meta.size);
        let mut tail = self.fetch(&meta, meta.size - want..meta.size).await?;
        let t = &tail[tail.len() - TAIL as usize..];
        let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
        let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4"));
        if &t[32..40] != MAGIC {
            return Err(broken("no manifest at its end".into()));
        }
        let (count, settings, crc) = (u64_at(t, 0), u32_at(t, 8), u32_at(t, 12));
        let (data_len, entries_len) = (u64_at(t, 16), u64_at(t, 24));
        let man_len = entries_len
            .checked_add(TAIL)
            .filter(|&m| data_len.checked_add(m) == Some(meta.size))
            .ok_or_else(|| {
                broken(format!(
                    "{} bytes of data and {entries_len} of manifest in {} bytes",
                    data_len, meta.size
                ))
            })?;
        if man_len > want {
            tail = self
                .fetch(&meta, meta.size - man_len..meta.size - want)
                .await?
                .into_iter()
                .chain(tail)
                .collect();
        }
        let m = &tail[tail.len() - man_len as usize..];
        if crc32fast::hash(&m[..entries_len as usize + 12]) != crc {
            return Err(broken("its manifest's CRC does not match".into()));
        }
        if settings != self.settings {
            return Err(Error::msg(format!(
                "{}: block {key} was written with other settings (dims, element, chunks, codec or filters) than this writer's; every writer of one session must be made with the same",
                self.path
            )));
        }
        let stats_len = self.config.entry_len() - if self.config.version == 1 { 24 } else { 32 };
        let mut chunks = Vec::new();
        let mut i = 0usize;
        let mut at = 0u64;
        for _ in 0..count {
            if i + 36 > entries_len as usize {
                return Err(broken("its manifest is cut short".into()));
            }
            let n = u64_at(m, i);
            let (offset, len) = (u64_at(m, i + 8), u64_at(m, i + 16));
            let (crc, flags, slen) = (u32_at(m, i + 24), u32_at(m, i + 28), u32_at(m, i + 32));
            i += 36;
            let slen = slen as usize;
            if n >= self.grid.count()
                || offset != at
                || (slen != 0 && slen as u64 != stats_len)
                || i + slen > entries_len as usize
            {
                return Err(broken(format!("its entry for chunk {n} is out of place")));
            }
            let stats = m[i..i + slen].to_vec();
            i += slen;
            at = at
                .checked_add(len)
                .filter(|&e| e <= data_len)
                .ok_or_else(|| broken(format!("chunk {n} runs past its data")))?;
            let e = Entry {
                offset,
                len,
                crc,
                flags,
            };
            chunks.push((n, e, stats));
        }
        if at != data_len || i != entries_len as usize {
            return Err(broken("its manifest does not cover its data".into()));
        }
        Ok(Block {
            meta,
            data_len,
            chunks,
        })
    }

    /// Bytes `range` of a block object, pinned to the version listed: a block replaced
    /// meanwhile is an error, never another version's bytes.
    async fn fetch(&self, meta: &ObjectMeta, range: Range<u64>) -> Result<Bytes> {
        let opts = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            if_match: meta.e_tag.clone(),
            ..GetOptions::default()
        };
        let got = self
            .store
            .get_opts(&meta.location, opts)
            .await
            .map_err(|e| self.error(&format!("reading block {}", meta.location), e))?;
        let b = got
            .bytes()
            .await
            .map_err(|e| self.error(&format!("reading block {}", meta.location), e))?;
        if b.len() as u64 != range.end - range.start {
            return Err(self.error(
                &format!("reading block {}", meta.location),
                format!("{} bytes for the range {range:?}", b.len()),
            ));
        }
        Ok(b)
    }

    /// The object's header, config and index, and the chunks written: each chunk's entry
    /// points at its bytes, the blocks' data laid out after the index in `blocks`' order.
    fn head(&self, blocks: &[Block]) -> Result<(Vec<u8>, u64)> {
        let count = self.grid.count();
        let elen = self.config.entry_len();
        let config = self.config.encode();
        let index_len = count
            .checked_mul(elen)
            .ok_or_else(|| bad("index", "a size within u64", count))?;
        let base = config.len() as u64 + index_len;
        let mut index = data::try_zeroed_bytes(index_len)?;
        let mut owner: Vec<u32> = vec![u32::MAX; data::to_usize(count)?];
        let mut at = base;
        let mut written = 0u64;
        for (k, b) in blocks.iter().enumerate() {
            for (n, e, stats) in &b.chunks {
                let slot = &mut owner[*n as usize];
                if *slot != u32::MAX {
                    return Err(Error::msg(format!(
                        "{}: chunk {n} (grid coordinates {:?}) is in two blocks, {} and {}: each chunk is written by one block; abort and write the array again",
                        self.path,
                        self.grid.coords(*n),
                        blocks[*slot as usize].meta.location,
                        b.meta.location
                    )));
                }
                *slot = k as u32;
                written += 1;
                let e = Entry {
                    offset: at + e.offset,
                    ..*e
                };
                let i = data::to_usize(*n * elen)?;
                index[i..i + elen as usize].copy_from_slice(&e.encode_for(&self.config, *n, stats));
            }
            at += b.data_len;
        }
        if written < count && !self.fill_missing {
            let missing: Vec<u64> = (0..count)
                .filter(|&n| owner[n as usize] == u32::MAX)
                .take(4)
                .collect();
            let shown: Vec<String> = missing
                .iter()
                .map(|&n| {
                    let o = self.grid.origin(n);
                    let s = self.grid.shape(n);
                    let r: Vec<Range<u64>> = o.iter().zip(&s).map(|(a, l)| *a..a + l).collect();
                    format!("block {}", block_text(&r))
                })
                .collect();
            return Err(Error::msg(format!(
                "{}: {} of {count} chunks were never written, perhaps by a worker that died; nothing was written at the path. Write those blocks and finish again, abort to remove the blocks written, or finish with missing chunks filled with zeros. The first missing: {}",
                self.path,
                count - written,
                shown.join(", ")
            )));
        }
        let mut h = self.header.clone();
        h.flags = h.flags.with(Flags::CHUNKED, true);
        h.size = at;
        let mut head = h.encode();
        head.extend_from_slice(&config);
        head.extend_from_slice(&index);
        Ok((head, written))
    }

    /// The object by one upload through the finisher: the head, then each block's data
    /// streamed from the store (memory: a few parts).
    fn assemble_streamed(
        &self,
        handle: &Handle,
        head: &[u8],
        blocks: &[Block],
        done: &mut Finished,
    ) -> Result<()> {
        let opts = UploadOptions::new();
        let mut parts = 0usize;
        put_atomic(handle, &self.store, &self.path, &opts, |w| {
            w.write_all(head)?;
            for b in blocks {
                if b.data_len == 0 {
                    continue;
                }
                let get = GetOptions {
                    range: Some(GetRange::Bounded(0..b.data_len)),
                    if_match: b.meta.e_tag.clone(),
                    ..GetOptions::default()
                };
                let got = handle
                    .block_on(self.store.get_opts(&b.meta.location, get))
                    .map_err(|e| self.error(&format!("reading block {}", b.meta.location), e))?;
                let mut body = got.into_stream();
                let mut n = 0u64;
                // Each piece is taken off the body, then written outside the runtime: the
                // upload's own requests run on it while this writes.
                while let Some(piece) = handle.block_on(body.next()) {
                    let piece = piece.map_err(|e| {
                        self.error(&format!("reading block {}", b.meta.location), e)
                    })?;
                    n += piece.len() as u64;
                    if n > b.data_len {
                        break;
                    }
                    w.write_all(&piece)?;
                }
                if n != b.data_len {
                    return Err(self.error(
                        &format!("reading block {}", b.meta.location),
                        format!("{n} bytes for {} asked", b.data_len),
                    ));
                }
            }
            parts = 1;
            Ok(())
        })?;
        let total = done.bytes;
        done.parts = parts
            .max(total.div_ceil(opts.part_len() as u64) as usize)
            .max(1);
        done.streamed = total;
        Ok(())
    }

    /// The object by S3's multipart upload, its parts as `plan` says: blocks' ranges copied
    /// server-side, the head and small pieces streamed. Aborted on any failure.
    #[cfg(feature = "cloud")]
    fn assemble_s3(
        &self,
        handle: &Handle,
        s3: &S3,
        head: &[u8],
        blocks: &[Block],
        plan: &[Part],
        done: &mut Finished,
    ) -> Result<()> {
        use object_store::multipart::{MultipartStore, PartId};
        let path = &self.path;
        let id = handle
            .block_on(s3.store.create_multipart(path))
            .map_err(|e| self.error("starting the upload", e))?;
        let id = &id;
        let upload = async {
            let jobs = plan.iter().enumerate().map(|(i, part)| async move {
                match part {
                    Part::Copy { block, range } => {
                        let b = &blocks[*block];
                        let etag = s3
                            .bucket
                            .upload_part_copy(
                                &s3.store,
                                path,
                                id,
                                i + 1,
                                &b.meta.location,
                                range.clone(),
                                b.meta.e_tag.as_deref(),
                            )
                            .await?;
                        Ok::<_, Error>((i, PartId { content_id: etag }))
                    }
                    Part::Stream(pieces) => {
                        let mut buf = Vec::new();
                        for p in pieces {
                            match p {
                                Piece::Head(r) => {
                                    buf.extend_from_slice(&head[r.start as usize..r.end as usize]);
                                }
                                Piece::Block { block, range } => buf.extend_from_slice(
                                    &self.fetch(&blocks[*block].meta, range.clone()).await?,
                                ),
                            }
                        }
                        let part = s3
                            .store
                            .put_part(path, id, i, buf.into())
                            .await
                            .map_err(|e| self.error(&format!("uploading part {}", i + 1), e))?;
                        Ok((i, part))
                    }
                }
            });
            let mut parts: Vec<(usize, PartId)> = futures::stream::iter(jobs)
                .buffer_unordered(PARALLEL / 2)
                .try_collect()
                .await?;
            parts.sort_by_key(|p| p.0);
            s3.store
                .complete_multipart(path, id, parts.into_iter().map(|p| p.1).collect())
                .await
                .map_err(|e| self.error("completing the upload", e))?;
            Ok::<_, Error>(())
        };
        if let Err(e) = handle.block_on(upload) {
            let _ = handle.block_on(s3.store.abort_multipart(path, id));
            return Err(e);
        }
        done.parts = plan.len();
        done.copied = plan
            .iter()
            .map(|p| match p {
                Part::Copy { range, .. } => range.end - range.start,
                Part::Stream(_) => 0,
            })
            .sum();
        done.streamed = done.bytes - done.copied;
        Ok(())
    }
}

/// One part of the assembled object's upload.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    /// A range of a block object, copied by the store.
    Copy { block: usize, range: Range<u64> },
    /// Pieces read by the finisher and uploaded as one part.
    Stream(Vec<Piece>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Head(Range<u64>),
    Block { block: usize, range: Range<u64> },
}

/// The smallest part but the last for an object of `total` bytes: S3's 5 MiB, raised so that
/// the parts of any object are at most 9,000 (of S3's [`MAX_PARTS`]; the rest for the parts a
/// copy split at 5 GiB adds).
fn part_floor(total: u64) -> u64 {
    (MIN_PART as u64).max(total.div_ceil(MAX_PARTS as u64 * 9 / 10))
}

/// The parts of an object made of a head of `head` bytes then blocks of `blocks` bytes, every
/// part but the last at least `min` bytes (S3's rule): a block's bytes are copied by the store
/// when at least `min` of them can go as one part; the head and the bytes where small blocks
/// meet are streamed, taking from the next block only what fills a part to `min` (so that the
/// finisher moves at most about `min` bytes per junction of small pieces), up to twice `min`
/// per part.
fn plan_parts(head: u64, blocks: &[u64], min: u64) -> Vec<Part> {
    let stream_max = 2 * min.max(8 << 20);
    let mut parts = Vec::new();
    let mut cur: Vec<Piece> = Vec::new();
    let mut cur_len = 0u64;
    if head > 0 {
        cur.push(Piece::Head(0..head));
        cur_len = head;
    }
    for (k, &len) in blocks.iter().enumerate() {
        let mut at = 0u64;
        while at < len {
            let rest = len - at;
            if cur_len == 0 && rest >= min {
                let mut take = rest.min(MAX_COPY);
                if rest - take > 0 && rest - take < min {
                    take = rest - min;
                }
                parts.push(Part::Copy {
                    block: k,
                    range: at..at + take,
                });
                at += take;
                continue;
            }
            if cur_len >= min && rest >= min {
                parts.push(Part::Stream(std::mem::take(&mut cur)));
                cur_len = 0;
                continue;
            }
            let take = if cur_len >= min {
                rest
            } else {
                rest.min(min - cur_len)
            };
            cur.push(Piece::Block {
                block: k,
                range: at..at + take,
            });
            cur_len += take;
            at += take;
            if cur_len >= stream_max {
                parts.push(Part::Stream(std::mem::take(&mut cur)));
                cur_len = 0;
            }
        }
    }
    if !cur.is_empty() {
        parts.push(Part::Stream(cur));
    }
    parts
}

/// The hidden folder beside `path` where writers of it leave their blocks:
/// `DIR/.NAME.rawarray-parts`.
pub(crate) fn parts_prefix(path: &StorePath) -> StorePath {
    let mut parts: Vec<PathPart<'static>> =
        path.parts().map(|p| p.as_ref().to_owned().into()).collect();
    let name = parts
        .pop()
        .map(|p| p.as_ref().to_string())
        .unwrap_or_default();
    parts.push(format!(".{name}{PARTS_SUFFIX}").into());
    StorePath::from_iter(parts)
}

/// Removes every object under `prefix` (after `also(prefix)`), and says how many.
pub(crate) fn remove_under(
    handle: &Handle,
    store: &Arc<dyn ObjectStore>,
    prefix: &StorePath,
    also: impl FnOnce(&StorePath),
) -> std::result::Result<usize, object_store::Error> {
    also(prefix);
    let listed: Vec<ObjectMeta> = handle.block_on(store.list(Some(prefix)).try_collect())?;
    let n = listed.len();
    let stream = futures::stream::iter(listed.into_iter().map(|m| Ok(m.location))).boxed();
    handle.block_on(store.delete_stream(stream).try_collect::<Vec<_>>())?;
    Ok(n)
}

/// A block's object name: its ranges (file order), so that a block written again replaces it.
fn block_name(ranges: &[Range<u64>]) -> String {
    let r: Vec<String> = ranges
        .iter()
        .map(|r| format!("{}-{}", r.start, r.end))
        .collect();
    format!("b{}", r.join("_"))
}

/// A session name no other client picks: a hash of the time and process, seeded at random.
fn new_session() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(now);
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 5 << 20;

    fn sizes(plan: &[Part], head: u64, blocks: &[u64]) -> Vec<u64> {
        plan.iter()
            .map(|p| match p {
                Part::Copy { range, .. } => range.end - range.start,
                Part::Stream(ps) => ps
                    .iter()
                    .map(|p| match p {
                        Piece::Head(r) => {
                            assert!(r.end <= head);
                            r.end - r.start
                        }
                        Piece::Block { block, range } => {
                            assert!(range.end <= blocks[*block]);
                            range.end - range.start
                        }
                    })
                    .sum(),
            })
            .collect()
    }

    /// Every part but the last is at least 5 MiB, the parts hold every byte once in order,
    /// and blocks of 5 MiB or more are copied, not streamed, but for what fills a part.
    #[test]
    fn plans_keep_s3_rules_and_copy_large_blocks() {
        let cases: Vec<(u64, Vec<u64>)> = vec![
            (1000, vec![]),
            (1000, vec![10]),
            (1000, vec![20 * M, 7 * M, 100, 6 * M]),
            (1000, vec![M, M, M, M, M, M, M, M]),
            (1000, vec![12 * M + 3, 4 * M, 3, 5 * M]),
        ];
        for (head, blocks) in cases {
            let plan = plan_parts(head, &blocks, M);
            let s = sizes(&plan, head, &blocks);
            assert_eq!(s.iter().sum::<u64>(), head + blocks.iter().sum::<u64>());
            for x in &s[..s.len().saturating_sub(1)] {
                assert!(*x >= M, "{s:?} {plan:?}");
            }
            // The order of bytes: the head, then each block's ranges back to back.
            let mut next = vec![0u64; blocks.len()];
            let mut last = 0usize;
            for p in &plan {
                let pieces = match p {
                    Part::Copy { block, range } => vec![(*block, range.clone())],
                    Part::Stream(ps) => ps
                        .iter()
                        .filter_map(|p| match p {
                            Piece::Block { block, range } => Some((*block, range.clone())),
                            Piece::Head(_) => None,
                        })
                        .collect(),
                };
                for (b, r) in pieces {
                    assert!(b >= last && r.start == next[b], "{plan:?}");
                    last = b;
                    next[b] = r.end;
                }
            }
            assert_eq!(next, blocks);
        }
        // A 20 MiB block after the head: 5 MiB less the head streamed, the rest copied.
        let plan = plan_parts(1000, &[20 * M], M);
        assert_eq!(
            plan,
            vec![
                Part::Stream(vec![
                    Piece::Head(0..1000),
                    Piece::Block {
                        block: 0,
                        range: 0..M - 1000
                    }
                ]),
                Part::Copy {
                    block: 0,
                    range: M - 1000..20 * M
                },
            ]
        );
        // Parts of at most 5 GiB copied, the last one at least 5 MiB.
        let plan = plan_parts(0, &[MAX_COPY + 3], M);
        assert_eq!(sizes(&plan, 0, &[MAX_COPY + 3]), [MAX_COPY - M + 3, M]);
        assert!(part_floor(100 << 40) > M && part_floor(1 << 30) == M);
    }

    #[test]
    fn the_parts_folder_is_hidden_beside_the_object() {
        assert_eq!(
            parts_prefix(&"runs/a/out.ra".into()).as_ref(),
            "runs/a/.out.ra.rawarray-parts"
        );
        assert_eq!(
            parts_prefix(&"x.ra".into()).as_ref(),
            ".x.ra.rawarray-parts"
        );
        assert_eq!(block_name(&[0..4, 8..10]), "b0-4_8-10");
    }
}
