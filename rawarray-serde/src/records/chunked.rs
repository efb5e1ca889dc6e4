//! Record files in the chunked layout (flag bit 2): records compressed a chunk at a time along
//! the last dim, committed at every flush without rewriting anything committed.
//!
//! A chunk holds whole records (`per_chunk` of them: the chunk shape covers every leading dim
//! whole), so chunk `k` holds records `k per_chunk ..`. Records appended go to the *tail*, the
//! raw bytes of the chunk being filled; each chunk that fills is encoded and appended at once
//! (uncommitted until the flush). A flush stores the tail padded with zeros to a whole chunk,
//! flagged [`ENTRY_FULL`]: readers use the prefix the header's dims give it. When a version of
//! the tail is already committed, its new version is committed by the protocol of
//! doc/chunked.md ("A record file's last chunk"): the new bytes past `size`, a header with the
//! larger `size` and the old dims, the entry pointed at the new version, a header with the new
//! dims. Old versions stay where they are (dead bytes): a reader that read the old entry still
//! finds them.

use std::fs::File;
use std::ops::Range;

use rayon::prelude::*;

use crate::codec::{ChunkWriter, Entry, ENTRY_FULL};
use crate::error::{Error, Result};
use crate::header::Header;
use crate::layout::Layout;
use crate::options::{WriteOptions, DEFAULT_CHUNK_BYTES};
use crate::section::chunked::in_pool;
use crate::section::Section;

/// Index entries in segment 0 of a new record file; later segments double, so a file of `c`
/// chunks has at most `log2(c / 64) + 2` segments.
const FIRST_SEGMENT: u64 = 64;

/// Full chunks encoded together (in parallel) per batch of appended bytes.
const BATCH_CHUNKS: usize = 8;

/// The chunked side of a record writer (see the module docs).
#[derive(Debug)]
pub(crate) struct Chunked {
    cw: ChunkWriter,
    /// Raw bytes of one chunk: `per_chunk` records.
    chunk_bytes: usize,
    /// The raw bytes of the chunk being filled, its committed records and those appended since.
    tail: Vec<u8>,
    /// That chunk's number (its index along the last dim).
    tail_chunk: u64,
    /// Whether a version of the tail chunk is committed: its next version replaces it.
    tail_committed: bool,
    /// A new version of a committed chunk, appended, where its entry goes, its number and its
    /// statistics:
    /// pointed at it by the next flush, between its two header commits.
    replacement: Option<(Entry, u64, u64, Vec<u8>)>,
    threads: usize,
}

/// Records of `record_bytes` in about [`DEFAULT_CHUNK_BYTES`].
pub(crate) fn default_records(record_bytes: u64) -> u64 {
    (DEFAULT_CHUNK_BYTES / record_bytes.max(1)).max(1)
}

/// The length of the section [`Chunked::create`] starts for `header` with `opts`: config and
/// segment 0.
pub(super) fn new_section_len(
    header: &Header,
    record_bytes: u64,
    opts: &WriteOptions,
    schema: Option<&Layout>,
) -> Result<u64> {
    let shape = chunk_shape(&header.dims, record_bytes, opts)?;
    let config = opts.clone().chunks(shape).chunk_config(header, schema)?;
    Ok(config.encoded_len() + FIRST_SEGMENT * config.entry_len())
}

/// The chunk shape of a record file of `dims` (the last counts records of `record_bytes`):
/// every leading dim whole, and `opts`' records per chunk along the last dim (its chunk shape
/// in full, or one entry: the records per chunk), or about [`DEFAULT_CHUNK_BYTES`] of records.
pub(crate) fn chunk_shape(
    dims: &[u64],
    record_bytes: u64,
    opts: &WriteOptions,
) -> Result<Vec<u64>> {
    let n = dims.len();
    // A leading dim of 0 (records of no values) still needs a chunk dim of at least 1.
    let mut shape: Vec<u64> = dims.iter().map(|&d| d.max(1)).collect();
    let per = match opts.get_chunks() {
        Some(&[per]) => per,
        Some(c) => {
            if c.len() != n || c[..n - 1].iter().zip(dims).any(|(c, d)| c < d) {
                return Err(Error::unsupported(format!(
                    "a record file's chunks hold whole records: a chunk shape of {n} dims whose \
                     leading dims cover {:?}, found {c:?}",
                    &dims[..n - 1]
                )));
            }
            c[n - 1]
        }
        None => default_records(record_bytes),
    };
    shape[n - 1] = per;
    Ok(shape)
}

impl Chunked {
    /// Starts a chunked record file in `file` (no records) with `opts`; returns its header.
    pub(super) fn create(
        file: &File,
        header: &Header,
        record_bytes: u64,
        opts: &WriteOptions,
        schema: Option<&Layout>,
    ) -> Result<Header> {
        let config = Chunked::config(header, record_bytes, opts, schema)?;
        let w = ChunkWriter::create(file, header, config)?;
        Ok(w.header().clone())
    }

    /// The config of a new appendable section of `header`'s dims (the last counting records of
    /// `record_bytes`) with `opts`: [`chunk_shape`], and a first index segment of
    /// [`FIRST_SEGMENT`] entries.
    pub(crate) fn config(
        header: &Header,
        record_bytes: u64,
        opts: &WriteOptions,
        schema: Option<&Layout>,
    ) -> Result<crate::codec::Config> {
        let shape = chunk_shape(&header.dims, record_bytes, opts)?;
        let mut config = opts.clone().chunks(shape).chunk_config(header, schema)?;
        config.s0 = FIRST_SEGMENT;
        Ok(config)
    }

    /// Resumes the chunked record file `file`, whose committed header is `header`: what lies
    /// past its `size` is reclaimed ([`ChunkWriter::open`]) and the committed records of its
    /// last chunk, if it is partial, are decoded to continue it.
    pub(super) fn open(
        file: &File,
        header: &Header,
        record_bytes: u64,
        threads: usize,
        durable: bool,
    ) -> Result<Chunked> {
        let _ = header; // the committed header, which the writer reads again under the lock
        let cw = ChunkWriter::open(file)?;
        Chunked::resume(file, cw, record_bytes, threads, durable)
    }

    /// [`Chunked::open`] with the section's writer already opened (for a section embedded in
    /// a ragged file: [`ChunkWriter::open_in`]).
    pub(crate) fn resume(
        file: &File,
        mut cw: ChunkWriter,
        record_bytes: u64,
        threads: usize,
        durable: bool,
    ) -> Result<Chunked> {
        cw.set_durable(durable);
        let header = &cw.header().clone();
        let chunk = &cw.config().chunk;
        let n = header.dims.len();
        if chunk[..n - 1].iter().zip(&header.dims).any(|(c, d)| c < d) {
            return Err(Error::unsupported(format!(
                "appending to a chunked file whose chunks ({chunk:?}) split its records \
                 (dims {:?}): a record file's chunks hold whole records",
                header.dims
            )));
        }
        let per = chunk[n - 1];
        let chunk_bytes = per
            .checked_mul(record_bytes)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| {
                Error::unsupported(format!("chunks of {per} records of {record_bytes} bytes"))
            })?;
        let records = header.dims[n - 1];
        let tail_chunk = records / per;
        let held = records % per;
        // Sized by the records its header claims, allocated fallibly (a file's dims, so
        // untrusted), never by the chunk shape.
        let mut tail = Vec::new();
        if held > 0 {
            let reader = Section::open_at(header, file, cw.base())?;
            let ranges: Vec<Range<u64>> = header.dims[..n - 1]
                .iter()
                .map(|&d| 0..d)
                .chain(std::iter::once(tail_chunk * per..records))
                .collect();
            tail = crate::data::try_zeroed_bytes(held.saturating_mul(record_bytes))?;
            reader.read_box(&ranges, &mut tail)?;
        }
        Ok(Chunked {
            cw,
            chunk_bytes,
            tail,
            tail_chunk,
            tail_committed: held > 0,
            replacement: None,
            threads,
        })
    }

    /// Takes appended record bytes (in the file's byte order): each chunk they fill is encoded
    /// (a batch in parallel) and appended, uncommitted. `reserve(end)` keeps the file's bytes
    /// up to `end` clear of the spare trailer copy.
    pub(crate) fn feed(
        &mut self,
        file: &File,
        mut bytes: &[u8],
        reserve: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        while !bytes.is_empty() {
            let room = self.chunk_bytes * BATCH_CHUNKS - self.tail.len() % self.chunk_bytes;
            let take = bytes.len().min(room);
            self.tail.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            let full = self.tail.len() / self.chunk_bytes * self.chunk_bytes;
            if full == 0 {
                continue;
            }
            let cw = &self.cw;
            let extent = self.extent();
            let cb = self.chunk_bytes;
            let tail = &self.tail[..full];
            let encode = |raw: &[u8]| {
                let (s, flags) = cw.chain().encode_chunk(raw, &extent)?;
                Ok((s, flags, cw.stats_of(raw)))
            };
            // One thread: on this one, rather than a pool started (and its thread scheduled)
            // for every batch.
            let stored = if self.threads == 1 {
                tail.chunks(cb).map(encode).collect::<Result<Vec<_>>>()?
            } else {
                in_pool(self.threads, || {
                    tail.par_chunks(cb).map(encode).collect::<Result<Vec<_>>>()
                })??
            };
            for (s, flags, st) in stored {
                self.put(file, &s, flags, &st, reserve)?;
                self.tail_chunk += 1;
                self.tail_committed = false;
            }
            self.tail.drain(..full);
        }
        Ok(())
    }

    /// Appends a version of the tail chunk: its entry written at once if no version of it is
    /// committed, kept for the flush's protocol otherwise.
    fn put(
        &mut self,
        file: &File,
        stored: &[u8],
        flags: u32,
        stats: &[u8],
        reserve: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        let n = self.tail_chunk;
        let base = self.cw.base();
        reserve(base + self.cw.end() + self.cw.segment_bytes_for(n) + stored.len() as u64)?;
        if self.tail_committed {
            // Readers of the old dims take a prefix of it once its entry points there.
            let (e, slot) = self.cw.append(file, n, stored, flags | ENTRY_FULL)?;
            self.replacement = Some((e, slot, n, stats.to_vec()));
        } else {
            let (e, slot) = self.cw.append(file, n, stored, flags)?;
            self.cw.put_entry(file, slot, n, &e, stats)?;
        }
        Ok(())
    }

    /// The extent every chunk is encoded at: the leading dims whole, the chunk's records (a
    /// partial last chunk is padded to it, entry flag [`ENTRY_FULL`]).
    fn extent(&self) -> Vec<u64> {
        let dims = &self.cw.header().dims;
        let n = dims.len();
        let mut e = dims.clone();
        e[n - 1] = self.cw.config().chunk[n - 1];
        e
    }

    /// Commits `records` records: the tail (padded to a whole chunk, [`ENTRY_FULL`]), then
    /// `write_block(end)` (the trailer block at the new data end), then the headers (two when
    /// a committed chunk is replaced), each by `write_header` given the section's header (the
    /// first with the old record count). Returns the header committed.
    pub(crate) fn flush(
        &mut self,
        file: &File,
        records: u64,
        sync: bool,
        reserve: &mut dyn FnMut(u64) -> Result<()>,
        write_block: &mut dyn FnMut(u64) -> Result<()>,
        write_header: &mut dyn FnMut(&Header) -> Result<()>,
    ) -> Result<Header> {
        self.cw.set_durable(sync);
        if !self.tail.is_empty() {
            let mut padded = crate::data::try_zeroed_bytes(self.chunk_bytes as u64)?;
            padded[..self.tail.len()].copy_from_slice(&self.tail);
            let (s, flags) = self.cw.chain().encode_chunk(&padded, &self.extent())?;
            // Statistics of the records, not of the zeros padding them.
            let st = self.cw.stats_of(&self.tail);
            self.put(file, &s, flags | ENTRY_FULL, &st, reserve)?;
        }
        write_block(self.cw.base() + self.cw.end())?;
        if let Some((e, slot, n, st)) = self.replacement.take() {
            // The new version inside the committed size first (old dims: readers still use
            // the old entry), then the entry, then the dims.
            if let Err(err) = self.cw.commit_with(file, sync, write_header) {
                self.replacement = Some((e, slot, n, st));
                return Err(err);
            }
            self.cw.put_entry(file, slot, n, &e, &st)?;
        }
        let mut dims = self.cw.header().dims.clone();
        *dims.last_mut().expect("record files have a last dim") = records;
        self.cw.set_dims(dims)?;
        self.cw.commit_with(file, sync, write_header)?;
        self.tail_committed = !self.tail.is_empty();
        Ok(self.cw.header().clone())
    }
}
