//! The appending writer's primitives: chunks appended to a chunked file, entered in its index
//! and committed with the header's one `pwrite`.
//!
//! The commit order, which every writer of a chunked file follows (and [`ChunkWriter`] does):
//!
//! 1. new chunk bytes and new (zeroed) index segments are written at the end of the section,
//!    past the committed `size`;
//! 2. their entries and segment slots are written in place (one `pwrite` each);
//! 3. all of it is made durable (`sync_data`);
//! 4. the header, with the new dims and `size`, is written with one `pwrite`: the commit.
//!
//! Until step 4, readers see the old header: entries and segment slots that point past its
//! `size` are ignored, so the new chunks read as never written and the old ones as before.
//! Whatever lies past `size` when a writer opens the file is reclaimed (overwritten).
//!
//! A committed chunk is never written again: [`ChunkWriter::write_chunk`] refuses a chunk
//! whose entry is committed. Replacing its entry in place at step 2 would make readers (and,
//! after a crash between 2 and 4, every later reader) see it past the committed size, as never
//! written. Writers write each chunk once (chunk-aligned blocks); a chunk written but not yet
//! committed may be written again. The one exception, a record file's partial last chunk, is
//! replaced through [`ChunkWriter::append`] and [`ChunkWriter::put_entry`] by the protocol of
//! doc/chunked.md ("A record file's last chunk"), which commits the new version's bytes (old
//! dims) before its entry points at them.
//!
//! Many writers (threads or processes) take turns under a lock: each opens the writer under
//! the lock ([`ChunkWriter::open`] re-reads the committed state), writes and commits.
//!
//! ```
//! use rawarray_serde::codec::ChunkWriter;
//! use rawarray_serde::{ElType, Header, RawArray, WriteOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("grow.ra");
//! let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
//! // Records of 4 u32 (16 bytes), 8 records per chunk, none yet.
//! let h = Header::new(ElType::Uint, 4, vec![4, 0]).unwrap();
//! let config = WriteOptions::new().chunks(vec![4, 8]).chunk_config(&h, None).unwrap();
//! let mut w = ChunkWriter::create(&file, &h, config).unwrap();
//! for c in 0..3u32 {
//!     let raw: Vec<u8> = (0..32u32).flat_map(|i| (c * 100 + i).to_le_bytes()).collect();
//!     w.set_dims(vec![4, 8 * u64::from(c + 1)]).unwrap();
//!     w.write_chunk(&file, u64::from(c), &raw).unwrap();
//!     w.commit(&file, true).unwrap();
//! }
//! let a: RawArray<u32> = RawArray::read_file(&path).unwrap();
//! assert_eq!(a.dims(), [4, 24]);
//! assert_eq!(a.get(&[1, 9]), Some(&105)); // chunk 1, its record 1, field 1
//! ```

use std::fs::File;

use super::chain::Chain;
use super::config::{bad, Config, SEGMENTS};
use super::grid::Grid;
use super::index::{segment_span, Entry};
use super::stats;
use crate::error::Result;
use crate::fileio::{read_exact_at, stable_header_any, write_all_at};
use crate::header::{Flags, Header};

/// Appends chunks to a chunked file and commits them (see the module docs).
#[derive(Debug)]
pub struct ChunkWriter {
    /// The header the next commit writes.
    header: Header,
    config: Config,
    grid: Grid,
    chain: Chain,
    /// The section's first byte in the file.
    base: u64,
    /// The first free byte of the section: the committed size, plus what was appended since.
    end: u64,
    /// The committed size: entries ending within it are committed and never replaced.
    committed: u64,
    /// Whether [`ChunkWriter::commit`] makes the appended bytes durable before the header.
    durable: bool,
    /// What [`ChunkWriter::open`] cleared: a dead writer's entries (by chunk) and segment slots.
    reclaimed: Reclaimed,
}

/// What [`ChunkWriter::open`] found left by a writer that died before its commit, and cleared:
/// index entries pointing past the committed size (by chunk number) and index segment slots
/// past it (by slot).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// Chunks whose index entries were cleared: they read as never written.
    pub chunks: Vec<u64>,
    /// Index segment slots that were cleared (segments allocated past the committed size).
    pub segments: Vec<usize>,
}

impl ChunkWriter {
    /// Starts a chunked file in `file` (from its first byte) for an array of `header`'s type
    /// and dims (often 0 along the last dim): header, `config` (from
    /// [`WriteOptions::chunk_config`](crate::WriteOptions::chunk_config); its `s0` entries
    /// make index segment 0, zeroed), committed. Chunks are then written with
    /// [`ChunkWriter::write_chunk`].
    pub fn create(file: &File, header: &Header, config: Config) -> Result<ChunkWriter> {
        let mut h = header.clone();
        h.flags = h
            .flags
            .with(Flags::CHUNKED, true)
            .with(Flags::COMPRESSED, false);
        let base = h.encoded_len() as u64;
        let w = ChunkWriter::create_in(file, &h, config, base)?;
        // Header last: a reader never sees a size whose bytes are not there.
        file.sync_data()?;
        write_all_at(file, &w.header.encode(), 0)?;
        Ok(w)
    }

    /// [`ChunkWriter::create`] of a section embedded at `base` in a file whose header is not
    /// the section's (a ragged file's values, doc/format.md section 10.2): config and zeroed
    /// segment 0 only; the owner writes its own header (and syncs) once they are there.
    pub(crate) fn create_in(
        file: &File,
        header: &Header,
        mut config: Config,
        base: u64,
    ) -> Result<ChunkWriter> {
        let s0 = config.s0;
        if s0 == 0 {
            return Err(bad("segment 0 capacity", "at least 1 entry", 0));
        }
        config.segments = Config::first_segment(
            config.version,
            header.dims.len(),
            config.filters.len(),
            config.stats.as_ref().map_or(0, Vec::len),
        );
        let mut h = header.clone();
        h.flags = h
            .flags
            .with(Flags::CHUNKED, true)
            .with(Flags::COMPRESSED, false);
        let cfg = config.encode();
        let index_len = s0
            .checked_mul(config.entry_len())
            .filter(|&b| b <= 1 << 44)
            .ok_or_else(|| bad("segment 0 capacity", "an index of at most 16 TiB", s0))?;
        h.size = cfg.len() as u64 + index_len;
        write_all_at(file, &cfg, base)?;
        write_zeros(file, base + cfg.len() as u64, index_len)?;
        let grid = Grid::new(&h.dims, &config.chunk, h.elbyte)?;
        let chain = Chain::from_config(&config, &h)?;
        Ok(ChunkWriter {
            end: h.size,
            committed: h.size,
            header: h,
            config,
            grid,
            chain,
            base,
            durable: true,
            reclaimed: Reclaimed::default(),
        })
    }

    /// Resumes writing the chunked file `file`: its committed header and config are read and
    /// checked (as a reader would); anything past the committed size is reclaimed.
    ///
    /// What a writer that died before its commit left behind is cleared on disk (and made
    /// durable) before anything is appended: segment slots and index entries pointing past the
    /// committed size. Left there, a later commit whose size covers them would make them count
    /// again, over bytes that now hold other chunks.
    pub fn open(file: &File) -> Result<ChunkWriter> {
        let h = stable_header_any(file)?;
        let base = h.encoded_len() as u64;
        ChunkWriter::open_in(file, h, base)
    }

    /// [`ChunkWriter::open`] of a section embedded at `base` in a file whose header is not the
    /// section's (a ragged file's values): `h` is the section's header, as its owner read it
    /// (flag bit 2, the section's dims, `size` its committed length).
    pub(crate) fn open_in(file: &File, h: Header, base: u64) -> Result<ChunkWriter> {
        let layout = crate::section::chunked::read_map(&h, file, base)?;
        let mut config = layout.config().clone();
        let elen = config.entry_len();
        let mut reclaimed = Reclaimed::default();
        // Segments past the committed size are not allocated, whatever their slot says.
        let mut allocated = SEGMENTS;
        for g in 1..SEGMENTS {
            let ok = segment_span(config.s0, g)
                .and_then(|(_, cap)| cap.checked_mul(elen))
                .and_then(|b| b.checked_add(config.segments[g]))
                .is_some_and(|end| config.segments[g] != 0 && end <= h.size);
            if !ok {
                allocated = g;
                break;
            }
        }
        for g in allocated..SEGMENTS {
            if config.segments[g] != 0 {
                write_all_at(
                    file,
                    &config.segment_slot(g, 0),
                    base + config.segment_slot_offset(g),
                )?;
                config.segments[g] = 0;
                reclaimed.segments.push(g);
            }
        }
        // Entries of the allocated segments that end past the committed size, a bounded read
        // at a time (segments lie inside the committed size, so this reads at most the file).
        for g in 0..allocated {
            let Some((first, cap)) = segment_span(config.s0, g) else {
                break;
            };
            let start = config.segments[g];
            if cap
                .checked_mul(elen)
                .and_then(|b| b.checked_add(start))
                .is_none_or(|end| end > h.size)
            {
                // Not inside the committed size (segment 0 of a hostile config): readers
                // ignore it whole, and nothing here is read through it.
                break;
            }
            let mut buf = vec![0u8; (cap.min(4096) * elen) as usize];
            let zeros = vec![0u8; elen as usize];
            let mut done = 0u64;
            while done < cap {
                let take = (cap - done).min(4096);
                let bytes = &mut buf[..(take * elen) as usize];
                let at = base + start + done * elen;
                read_exact_at(file, bytes, at)?;
                for (i, e) in bytes.chunks_exact(elen as usize).enumerate() {
                    let e = decode_entry(&config, e, first + done + i as u64)?;
                    if !e.is_empty() && e.offset.checked_add(e.len).is_none_or(|end| end > h.size) {
                        write_all_at(file, &zeros, at + i as u64 * elen)?;
                        reclaimed.chunks.push(first + done + i as u64);
                    }
                }
                done += take;
            }
        }
        if reclaimed != Reclaimed::default() {
            file.sync_data()?;
        }
        Ok(ChunkWriter {
            grid: layout.grid().clone(),
            chain: layout.chain().clone(),
            base,
            end: h.size,
            committed: h.size,
            header: h,
            config,
            durable: true,
            reclaimed,
        })
    }

    /// What [`ChunkWriter::open`] cleared of a writer that died before its commit (nothing
    /// for a writer that [`ChunkWriter::create`]d the file).
    pub fn reclaimed(&self) -> &Reclaimed {
        &self.reclaimed
    }

    /// Whether [`ChunkWriter::commit`] syncs the appended bytes before writing the header (the
    /// default). Without it a killed process still loses nothing committed (the kernel keeps
    /// the writes in order) but a power cut may: for writers that sync at moments they choose
    /// ([`RecordWriter`](crate::RecordWriter) with [`Durability::NoFsync`](crate::Durability)).
    pub fn set_durable(&mut self, on: bool) {
        self.durable = on;
    }

    /// The section's first byte in the file.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// The section's first free byte: the committed size plus what was appended since.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The section bytes appending chunk `n` would add besides its stored bytes: the index
    /// segments it needs that are not allocated yet.
    pub fn segment_bytes_for(&self, n: u64) -> u64 {
        let mut bytes = 0u64;
        for g in 0..SEGMENTS {
            let Some((first, cap)) = segment_span(self.config.s0, g) else {
                break;
            };
            if first > n {
                break;
            }
            if self.config.segments[g] == 0 {
                bytes = bytes.saturating_add(cap.saturating_mul(self.config.entry_len()));
            }
        }
        bytes
    }

    /// The header the next commit writes.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The chunk grid of that header's dims.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// The config (with the segments allocated so far).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Sets the dims the next commit writes (same number of dims; usually the last one grows).
    pub fn set_dims(&mut self, dims: Vec<u64>) -> Result<()> {
        if dims.len() != self.header.dims.len() {
            return Err(bad(
                "dims",
                format!("{} dims", self.header.dims.len()),
                dims.len(),
            ));
        }
        self.grid = Grid::new(&dims, &self.config.chunk, self.header.elbyte)?;
        self.header.dims = dims;
        Ok(())
    }

    /// The section offset of chunk `n`'s entry, allocating its index segment (and any before
    /// it) at the end of the section if needed.
    fn entry_offset(&mut self, file: &File, n: u64) -> Result<u64> {
        let s0 = self.config.s0;
        for g in 0..SEGMENTS {
            let (first, cap) = segment_span(s0, g)
                .ok_or_else(|| bad("chunk number", "within 64 index segments", n))?;
            if n >= first.saturating_add(cap) {
                if self.config.segments[g] == 0 {
                    self.allocate(file, g, cap)?;
                }
                continue;
            }
            if self.config.segments[g] == 0 {
                self.allocate(file, g, cap)?;
            }
            return Ok(self.config.segments[g] + (n - first) * self.config.entry_len());
        }
        Err(bad("chunk number", "within 64 index segments", n))
    }

    fn allocate(&mut self, file: &File, g: usize, cap: u64) -> Result<()> {
        let bytes = cap
            .checked_mul(self.config.entry_len())
            .ok_or_else(|| bad("index segment", "a size within u64", g))?;
        let at = self.end;
        write_zeros(file, self.base + at, bytes)?;
        write_all_at(
            file,
            &self.config.segment_slot(g, at),
            self.base + self.config.segment_slot_offset(g),
        )?;
        self.config.segments[g] = at;
        self.end += bytes;
        Ok(())
    }

    /// Encodes chunk `n` (its raw bytes, in the file's byte order, as many as the grid of the
    /// current dims says), appends it and writes its entry. Readers see it after
    /// [`ChunkWriter::commit`]. A chunk already committed is an error naming it: its entry is
    /// never replaced (see the module docs).
    pub fn write_chunk(&mut self, file: &File, n: u64, raw: &[u8]) -> Result<Entry> {
        self.check_number(n)?;
        let want = self.grid.raw_len(n);
        if raw.len() as u64 != want {
            return Err(bad(&format!("raw bytes of chunk {n}"), want, raw.len()));
        }
        self.check_uncommitted(file, n)?;
        let (stored, flags) = self.chain.encode_chunk(raw, &self.grid.shape(n))?;
        let st = self.stats_of(raw);
        self.write_stored(file, n, &stored, flags, &st)
    }

    /// The statistics bytes of a chunk of raw bytes `raw` (empty where the file keeps none):
    /// of the values stored, rounded ones where a lossy filter runs.
    pub fn stats_of(&self, raw: &[u8]) -> Vec<u8> {
        match &self.config.stats {
            Some(fields) => {
                let rounded = self.chain.pipeline().round(raw);
                stats::compute(
                    fields,
                    rounded.as_deref().unwrap_or(raw),
                    self.header.elbyte,
                    self.header.flags.is_big_endian(),
                )
            }
            None => Vec::new(),
        }
    }

    /// Appends chunk `n` already encoded by this file's [`Chain`] (`stored` and the entry
    /// `flags` of [`Chain::encode_chunk`], `stats` of [`ChunkWriter::stats_of`]) and writes its
    /// entry: for writers that compress outside the lock they commit under. The same refusals
    /// as [`ChunkWriter::write_chunk`].
    ///
    /// ```
    /// use rawarray_serde::codec::{ChunkWriter, Codec};
    /// use rawarray_serde::{ElType, Header, RawArray, WriteOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("pre.ra");
    /// let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
    /// let h = Header::new(ElType::Uint, 1, vec![8, 2]).unwrap();
    /// let opts = WriteOptions::new().codec(Codec::Lz4).chunks(vec![8, 1]);
    /// let mut w = ChunkWriter::create(&file, &h, opts.chunk_config(&h, None).unwrap()).unwrap();
    /// let (stored, flags) = w.chain().encode_chunk(&[5u8; 8], &[8, 1]).unwrap();
    /// let stats = w.stats_of(&[5u8; 8]);
    /// w.write_stored(&file, 1, &stored, flags, &stats).unwrap();
    /// w.commit(&file, true).unwrap();
    /// assert!(w.is_committed(&file, 1).unwrap() && !w.is_committed(&file, 0).unwrap());
    /// let a: RawArray<u8> = RawArray::read_file(&path).unwrap();
    /// assert_eq!(a.as_slice(), [[0u8; 8], [5; 8]].concat());
    /// ```
    pub fn write_stored(
        &mut self,
        file: &File,
        n: u64,
        stored: &[u8],
        flags: u32,
        stats: &[u8],
    ) -> Result<Entry> {
        self.check_number(n)?;
        self.check_uncommitted(file, n)?;
        let (e, slot) = self.append(file, n, stored, flags)?;
        self.put_entry(file, slot, n, &e, stats)?;
        Ok(e)
    }

    /// Whether chunk `n` is committed (its entry is written and lies within the committed
    /// size): such a chunk is never written again.
    pub fn is_committed(&self, file: &File, n: u64) -> Result<bool> {
        self.check_number(n)?;
        let s0 = self.config.s0;
        for g in 0..SEGMENTS {
            let Some((first, cap)) = segment_span(s0, g) else {
                break;
            };
            if n >= first.saturating_add(cap) {
                continue;
            }
            let start = self.config.segments[g];
            if start == 0 {
                return Ok(false);
            }
            let elen = self.config.entry_len();
            let mut e = vec![0u8; elen as usize];
            read_exact_at(file, &mut e, self.base + start + (n - first) * elen)?;
            return Ok(self.counts(&decode_entry(&self.config, &e, n)?));
        }
        Ok(false)
    }

    /// Whether the entry `e` is committed: written, and ending within the committed size.
    fn counts(&self, e: &Entry) -> bool {
        !e.is_empty()
            && e.offset
                .checked_add(e.len)
                .is_some_and(|end| end <= self.committed)
    }

    /// An error unless `n` is a chunk of the current grid.
    fn check_number(&self, n: u64) -> Result<()> {
        if n >= self.grid.count() {
            return Err(bad(
                "chunk number",
                format!(
                    "below {} (the grid of dims {:?})",
                    self.grid.count(),
                    self.header.dims
                ),
                n,
            ));
        }
        Ok(())
    }

    /// The section offset of chunk `n`'s entry (allocating its segment), or an error naming
    /// the chunk if it is committed.
    fn check_uncommitted(&mut self, file: &File, n: u64) -> Result<u64> {
        let slot = self.entry_offset(file, n)?;
        let mut old = vec![0u8; self.config.entry_len() as usize];
        read_exact_at(file, &mut old, self.base + slot)?;
        let old = decode_entry(&self.config, &old, n)?;
        if self.counts(&old) {
            return Err(bad(
                &format!("chunk {n}"),
                "a chunk not committed yet (a committed chunk is written once)",
                format!("committed at {}..{}", old.offset, old.offset + old.len),
            ));
        }
        Ok(slot)
    }

    /// Appends stored bytes for chunk `n` (encoded by [`ChunkWriter::chain`], entry `flags`)
    /// after the section's end, allocating its index segment if needed, and returns its entry
    /// and where that entry goes, without writing it: [`ChunkWriter::put_entry`] does. For
    /// writers that replace a committed chunk by the protocol of doc/chunked.md ("A record
    /// file's last chunk"), which commits the new bytes before the entry points at them.
    pub fn append(
        &mut self,
        file: &File,
        n: u64,
        stored: &[u8],
        flags: u32,
    ) -> Result<(Entry, u64)> {
        let slot = self.entry_offset(file, n)?;
        let e = Entry {
            offset: self.end,
            len: stored.len() as u64,
            crc: crc32fast::hash(stored),
            flags,
        };
        write_all_at(file, stored, self.base + e.offset)?;
        self.end += e.len;
        Ok((e, slot))
    }

    /// Writes entry `e` of chunk `n`, with its statistics bytes `stats`, at `slot` (a section
    /// offset from [`ChunkWriter::append`]) with one `pwrite`.
    pub fn put_entry(&self, file: &File, slot: u64, n: u64, e: &Entry, stats: &[u8]) -> Result<()> {
        write_all_at(
            file,
            &e.encode_for(&self.config, n, stats),
            self.base + slot,
        )?;
        Ok(())
    }

    /// The filter and codec chunks are encoded with.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// Commits: makes everything written durable (unless [`ChunkWriter::set_durable`] said
    /// not to), then writes the header (dims and size) with one `pwrite`; with `sync`, makes
    /// that durable too.
    pub fn commit(&mut self, file: &File, sync: bool) -> Result<()> {
        self.commit_with(file, sync, &mut |h| Ok(write_all_at(file, &h.encode(), 0)?))
    }

    /// [`ChunkWriter::commit`] whose one header `pwrite` is `write_header`'s, given the
    /// section's header: for a section embedded in a file with a header of its own (a ragged
    /// file's values), which commits by writing that header.
    pub(crate) fn commit_with(
        &mut self,
        file: &File,
        sync: bool,
        write_header: &mut dyn FnMut(&Header) -> Result<()>,
    ) -> Result<()> {
        if self.durable {
            file.sync_data()?;
        }
        self.header.size = self.end;
        write_header(&self.header)?;
        self.committed = self.end;
        if sync {
            file.sync_data()?;
        }
        Ok(())
    }
}

/// Chunk `n`'s entry from its bytes in a section of `config`: a damaged version 2 entry is an
/// error (a writer never appends over damage; `recover` deals with it).
fn decode_entry(config: &Config, bytes: &[u8], n: u64) -> Result<Entry> {
    if config.version == 1 {
        Ok(Entry::decode(bytes[..24].try_into().expect("24 bytes")))
    } else {
        Ok(Entry::decode_v2(bytes, n)?.0)
    }
}

/// Writes `len` zero bytes at `offset`, a bounded buffer at a time.
fn write_zeros(file: &File, offset: u64, len: u64) -> Result<()> {
    // Past the file's end, zeros are what growing the file gives (a hole, where the file
    // system makes one): a large index costs no writes. Only what lies within the file (a dead
    // writer's leftovers being reclaimed) is written over.
    let file_len = file.metadata()?.len();
    let end = offset.saturating_add(len);
    if end > file_len && offset >= file_len {
        file.set_len(end)?;
        return Ok(());
    }
    let within = end.min(file_len).saturating_sub(offset);
    if end > file_len {
        file.set_len(end)?;
    }
    let len = within;
    let buf = vec![0u8; len.min(1 << 20) as usize];
    let mut done = 0;
    while done < len {
        let take = (len - done).min(buf.len() as u64);
        write_all_at(file, &buf[..take as usize], offset + done)?;
        done += take;
    }
    Ok(())
}
