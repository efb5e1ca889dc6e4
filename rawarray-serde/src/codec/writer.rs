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
//! use rawarray_serde::codec::{self, ChunkOptions, ChunkWriter};
//! use rawarray_serde::{ElType, Header, RawArray};
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("grow.ra");
//! let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
//! // Records of 4 u32 (16 bytes), 8 records per chunk, none yet.
//! let h = Header::new(ElType::Uint, 4, vec![4, 0]).unwrap();
//! let mut w = ChunkWriter::create(&file, &h, &ChunkOptions::new().chunks(vec![4, 8]), 1).unwrap();
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

use super::config::{bad, Config, SEGMENTS};
use super::grid::Grid;
use super::index::{segment_span, Entry, ENTRY_LEN};
use super::section::SectionReader;
use super::{Chain, ChunkOptions};
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
    /// and dims (often 0 along the last dim): header, config and a zeroed index segment 0 of
    /// `s0` entries, committed. Chunks are then written with [`ChunkWriter::write_chunk`].
    pub fn create(
        file: &File,
        header: &Header,
        opts: &ChunkOptions,
        s0: u64,
    ) -> Result<ChunkWriter> {
        if s0 == 0 {
            return Err(bad("segment 0 capacity", "at least 1 entry", 0));
        }
        let config = opts.config(&header.dims, header.elbyte, s0)?;
        let mut h = header.clone();
        h.flags = h
            .flags
            .with(Flags::CHUNKED, true)
            .with(Flags::COMPRESSED, false);
        let cfg = config.encode();
        let index_len = s0
            .checked_mul(ENTRY_LEN)
            .ok_or_else(|| bad("segment 0 capacity", "fewer entries", s0))?;
        h.size = cfg.len() as u64 + index_len;
        let base = h.encoded_len() as u64;
        // Header last: a reader never sees a size whose bytes are not there.
        write_all_at(file, &cfg, base)?;
        write_zeros(file, base + cfg.len() as u64, index_len)?;
        file.sync_data()?;
        write_all_at(file, &h.encode(), 0)?;
        let grid = Grid::new(&h.dims, &config.chunk, h.elbyte)?;
        let chain = Chain::from_config(&config, h.elbyte)?;
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
        let reader = SectionReader::open(&h, file)?;
        let layout = reader.layout();
        let mut config = layout.config().clone();
        let base = h.encoded_len() as u64;
        let ndims = h.dims.len();
        let mut reclaimed = Reclaimed::default();
        // Segments past the committed size are not allocated, whatever their slot says.
        let mut allocated = SEGMENTS;
        for g in 1..SEGMENTS {
            let ok = segment_span(config.s0, g)
                .and_then(|(_, cap)| cap.checked_mul(ENTRY_LEN))
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
                    &0u64.to_le_bytes(),
                    base + Config::segment_slot_offset(ndims, g),
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
                .checked_mul(ENTRY_LEN)
                .and_then(|b| b.checked_add(start))
                .is_none_or(|end| end > h.size)
            {
                // Not inside the committed size (segment 0 of a hostile config): readers
                // ignore it whole, and nothing here is read through it.
                break;
            }
            let mut buf = vec![0u8; (cap.min(4096) * ENTRY_LEN) as usize];
            let mut done = 0u64;
            while done < cap {
                let take = (cap - done).min(4096);
                let bytes = &mut buf[..(take * ENTRY_LEN) as usize];
                let at = base + start + done * ENTRY_LEN;
                read_exact_at(file, bytes, at)?;
                for (i, e) in bytes.chunks_exact(ENTRY_LEN as usize).enumerate() {
                    let e = Entry::decode(e.try_into().expect("24 bytes"));
                    if !e.is_empty() && e.offset.checked_add(e.len).is_none_or(|end| end > h.size) {
                        write_all_at(file, &[0u8; ENTRY_LEN as usize], at + i as u64 * ENTRY_LEN)?;
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
            chain: *layout.chain(),
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
                bytes = bytes.saturating_add(cap.saturating_mul(ENTRY_LEN));
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
            return Ok(self.config.segments[g] + (n - first) * ENTRY_LEN);
        }
        Err(bad("chunk number", "within 64 index segments", n))
    }

    fn allocate(&mut self, file: &File, g: usize, cap: u64) -> Result<()> {
        let bytes = cap
            .checked_mul(ENTRY_LEN)
            .ok_or_else(|| bad("index segment", "a size within u64", g))?;
        let at = self.end;
        write_zeros(file, self.base + at, bytes)?;
        write_all_at(
            file,
            &at.to_le_bytes(),
            self.base + Config::segment_slot_offset(self.header.dims.len(), g),
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
        let (stored, flags) = self.chain.encode_chunk(raw)?;
        self.write_stored(file, n, &stored, flags)
    }

    /// Appends chunk `n` already encoded by this file's [`Chain`] (`stored` and the entry
    /// `flags` of [`Chain::encode_chunk`]) and writes its entry: for writers that compress
    /// outside the lock they commit under. The same refusals as [`ChunkWriter::write_chunk`].
    ///
    /// ```
    /// use rawarray_serde::codec::{Chain, ChunkOptions, ChunkWriter, Codec};
    /// use rawarray_serde::{ElType, Header, RawArray};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("pre.ra");
    /// let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
    /// let h = Header::new(ElType::Uint, 1, vec![8, 2]).unwrap();
    /// let opts = ChunkOptions::new().codec(Codec::Lz4).chunks(vec![8, 1]);
    /// let mut w = ChunkWriter::create(&file, &h, &opts, 2).unwrap();
    /// let chain = Chain::from_config(w.config(), 1).unwrap();
    /// let (stored, flags) = chain.encode_chunk(&[5u8; 8]).unwrap();
    /// w.write_stored(&file, 1, &stored, flags).unwrap();
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
    ) -> Result<Entry> {
        self.check_number(n)?;
        self.check_uncommitted(file, n)?;
        let (e, slot) = self.append(file, n, stored, flags)?;
        self.put_entry(file, slot, &e)?;
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
            let mut e = [0u8; ENTRY_LEN as usize];
            read_exact_at(file, &mut e, self.base + start + (n - first) * ENTRY_LEN)?;
            return Ok(self.counts(&Entry::decode(&e)));
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
        let mut old = [0u8; ENTRY_LEN as usize];
        read_exact_at(file, &mut old, self.base + slot)?;
        let old = Entry::decode(&old);
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

    /// Writes entry `e` at `slot` (a section offset from [`ChunkWriter::append`]) with one
    /// `pwrite`.
    pub fn put_entry(&self, file: &File, slot: u64, e: &Entry) -> Result<()> {
        write_all_at(file, &e.encode(), self.base + slot)?;
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
        if self.durable {
            file.sync_data()?;
        }
        self.header.size = self.end;
        write_all_at(file, &self.header.encode(), 0)?;
        self.committed = self.end;
        if sync {
            file.sync_data()?;
        }
        Ok(())
    }
}

/// Writes `len` zero bytes at `offset`, a bounded buffer at a time.
fn write_zeros(file: &File, offset: u64, len: u64) -> Result<()> {
    let buf = vec![0u8; len.min(1 << 20) as usize];
    let mut done = 0;
    while done < len {
        let take = (len - done).min(buf.len() as u64);
        write_all_at(file, &buf[..take as usize], offset + done)?;
        done += take;
    }
    Ok(())
}
