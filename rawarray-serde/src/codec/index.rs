//! The chunk index: one entry per chunk, in segments that grow by doubling (doc/chunked.md
//! sections 4, 5.4 and 6.2).
//!
//! Entry `n` (chunk `n`) holds the offset, stored length, CRC-32 and flags of the chunk's
//! stored bytes, offsets relative to the data section. Version 1 entries are those 24 bytes;
//! version 2 entries add a CRC of the entry (over its bytes and its chunk number) and of its
//! statistics, then the statistics. All zeros: the chunk was never written and reads as zeros.
//! Flag bit 0 ([`ENTRY_RAW`]): the stored bytes are the chunk's raw bytes. Flag bit 1
//! ([`ENTRY_FULL`]): the chunk is stored at its full extent along the last dim; readers use
//! its prefix. Segment 0 holds entries `0 .. S0`, segment `g >= 1` entries `S0 2^(g-1) .. S0
//! 2^g`.
//!
//! Validation happens once, before any chunk is read, from the segments' bytes alone: a
//! segment or entry that ends past the committed `size` is not committed yet and is ignored
//! (its chunks read as never written); a version 2 entry whose CRC fails is damage, an error
//! naming the chunk; every other entry must have known flags, a stored length that fits its
//! chunk, and no overlap with the config, a segment or another entry.
//!
//! ```
//! use rawarray_serde::codec::Entry;
//! let e = Entry { offset: 600, len: 40, crc: 7, flags: 0 };
//! assert_eq!(Entry::decode(&e.encode()), e);
//! assert!(Entry::default().is_empty());
//! // Version 2: the entry's CRC covers its chunk number, so an entry read in the wrong
//! // place is damage, not a chunk.
//! let v2 = e.encode_v2(5, &[]);
//! assert_eq!(Entry::decode_v2(&v2, 5).unwrap().0, e);
//! assert!(Entry::decode_v2(&v2, 6).is_err());
//! ```

use std::ops::Range;

use super::blocks::BlockGrid;
use super::config::{bad, Config, SEGMENTS};
use super::grid::Grid;
use crate::error::Result;
use crate::header::le_u64;

/// Entry flag bit 0: the chunk is stored raw (its raw bytes, no block table).
pub const ENTRY_RAW: u32 = 1;

/// Entry flag bit 1: the chunk is stored at its full extent along the last dim
/// ([`Grid::full_raw_len`](super::Grid::full_raw_len)), even where the dims clip it; readers use the prefix the dims give
/// it. A record file's last chunk is stored so while it fills: the records a flush adds to it
/// go into a new version of it, which readers of the old dims read a prefix of.
pub const ENTRY_FULL: u32 = 2;

/// Bytes of one version 1 index entry (a version 2 entry is [`Config::entry_len`]).
pub const ENTRY_LEN: u64 = 24;

/// Raw bytes chunk `n`'s stored bytes decode to, by its entry's flags: [`Grid::raw_len`], or
/// [`Grid::full_raw_len`] with [`ENTRY_FULL`] (`None` past `u64`).
///
/// ```
/// use rawarray_serde::codec::{index::stored_raw_len, Entry, Grid, ENTRY_FULL};
/// let g = Grid::new(&[4, 5], &[4, 8], 1).unwrap();
/// let e = Entry { offset: 600, len: 40, crc: 7, flags: ENTRY_FULL };
/// assert_eq!(stored_raw_len(&g, 0, &e), Some(32));
/// assert_eq!(stored_raw_len(&g, 0, &Entry { flags: 0, ..e }), Some(20));
/// ```
pub fn stored_raw_len(grid: &Grid, n: u64, e: &Entry) -> Option<u64> {
    if e.flags & ENTRY_FULL != 0 {
        grid.full_raw_len(n)
    } else {
        Some(grid.raw_len(n))
    }
}

/// One chunk's index entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Entry {
    /// Offset of the stored bytes in the data section.
    pub offset: u64,
    /// Stored bytes.
    pub len: u64,
    /// CRC-32 (IEEE) of the stored bytes.
    pub crc: u32,
    /// Bit 0: stored raw ([`ENTRY_RAW`]); bit 1: full extent ([`ENTRY_FULL`]).
    pub flags: u32,
}

/// CRC-32 of `bytes` then the chunk number as a `u64`.
fn crc_with(parts: &[&[u8]], n: u64) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for p in parts {
        h.update(p);
    }
    h.update(&n.to_le_bytes());
    h.finalize()
}

impl Entry {
    /// Whether this is the all-zero entry of a chunk never written.
    pub fn is_empty(&self) -> bool {
        *self == Entry::default()
    }

    /// The entry's 24 bytes (version 1, and the first 24 of version 2).
    pub fn encode(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.len.to_le_bytes());
        b[16..20].copy_from_slice(&self.crc.to_le_bytes());
        b[20..].copy_from_slice(&self.flags.to_le_bytes());
        b
    }

    /// An entry from its 24 bytes.
    pub fn decode(b: &[u8; 24]) -> Entry {
        Entry {
            offset: le_u64(&b[..8]),
            len: le_u64(&b[8..16]),
            crc: u32::from_le_bytes(b[16..20].try_into().expect("4 bytes")),
            flags: u32::from_le_bytes(b[20..].try_into().expect("4 bytes")),
        }
    }

    /// The version 2 bytes of this entry as chunk `n`'s, with statistics bytes `stats` (empty
    /// for none) and their CRC. Statistics that are all zero (a complex field without NaN has
    /// no other bytes) get their CRC too: only a CRC of 0 with zero bytes reads as absent. The
    /// empty entry encodes as zeros.
    ///
    /// ```
    /// use rawarray_serde::codec::Entry;
    /// let e = Entry { offset: 600, len: 40, crc: 7, flags: 0 };
    /// // One complex field's statistics record: no NaN, no min or max: all zero, yet present.
    /// let v2 = e.encode_v2(5, &[0; 8]);
    /// assert_ne!(v2[28..32], [0; 4]);
    /// assert_eq!(Entry::decode_v2(&v2, 5).unwrap().1, Some(true));
    /// ```
    pub fn encode_v2(&self, n: u64, stats: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; 32 + stats.len()];
        if self.is_empty() {
            return out;
        }
        let head = self.encode();
        out[..24].copy_from_slice(&head);
        out[24..28].copy_from_slice(&crc_with(&[&head], n).to_le_bytes());
        if !stats.is_empty() {
            out[28..32].copy_from_slice(&crc_with(&[stats, &head], n).to_le_bytes());
            out[32..].copy_from_slice(stats);
        }
        out
    }

    /// The entry of chunk `n` from its version 2 bytes, and whether its statistics (bytes 32
    /// ..) are readable (`Some(true)`), absent (`None`) or fail their CRC (`Some(false)`); an
    /// error when the entry's own CRC fails (damage).
    pub fn decode_v2(b: &[u8], n: u64) -> Result<(Entry, Option<bool>)> {
        if b.iter().all(|&x| x == 0) {
            return Ok((Entry::default(), None));
        }
        let head: &[u8; 24] = b[..24].try_into().expect("24 bytes");
        let crc = u32::from_le_bytes(b[24..28].try_into().expect("4 bytes"));
        let want = crc_with(&[head], n);
        if crc != want {
            return Err(bad(
                &format!("index entry of chunk {n}"),
                format!("entry crc {want:#010x} (of its bytes and chunk number)"),
                format!("{crc:#010x}: the index is damaged"),
            ));
        }
        let stats = &b[32..];
        let stats_crc = u32::from_le_bytes(b[28..32].try_into().expect("4 bytes"));
        let state = if stats.is_empty() || (stats_crc == 0 && stats.iter().all(|&x| x == 0)) {
            None
        } else {
            Some(stats_crc == crc_with(&[stats, head], n))
        };
        Ok((Entry::decode(head), state))
    }

    /// This entry's bytes as chunk `n`'s in a section of `config` (either version), with
    /// statistics bytes `stats`: the config's `T` bytes, or any other length (empty) for a
    /// chunk without statistics.
    pub fn encode_for(&self, config: &Config, n: u64, stats: &[u8]) -> Vec<u8> {
        if config.version == 1 {
            self.encode().to_vec()
        } else {
            let t = (config.entry_len() - 32) as usize;
            if stats.len() == t {
                return self.encode_v2(n, stats);
            }
            // No statistics for this chunk: absent, their CRC and bytes all zero.
            let mut out = self.encode_v2(n, &[]);
            out.resize(32 + t, 0);
            out
        }
    }

    /// Whether the stored bytes are the raw bytes.
    pub fn is_raw(&self) -> bool {
        self.flags & ENTRY_RAW != 0
    }

    fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.len)
    }
}

/// The first chunk number of segment `g` and its capacity, or `None` past `u64`.
pub fn segment_span(s0: u64, g: usize) -> Option<(u64, u64)> {
    if g == 0 {
        return Some((0, s0));
    }
    let cap = s0.checked_mul(1u64.checked_shl(g as u32 - 1)?)?;
    // Segments 0 .. g hold s0 2^(g-1) entries before this one.
    Some((cap, cap))
}

/// One index segment a reader needs: which slot, where its needed entries are, which chunks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentRead {
    /// The slot `g`.
    pub slot: usize,
    /// The bytes to read (data-section offsets): the entries of chunks `chunks`.
    pub bytes: Range<u64>,
    /// The chunk numbers those entries describe.
    pub chunks: Range<u64>,
    /// The whole segment's extent, for the overlap check.
    pub extent: Range<u64>,
}

/// The segments (and the part of each) a reader fetches for the grid's chunks, in order.
/// Segments not allocated, or not wholly inside the committed `size`, end the list: their
/// chunks read as never written.
pub fn segment_reads(config: &Config, grid: &Grid, size: u64) -> Vec<SegmentRead> {
    let mut out = Vec::new();
    let elen = config.entry_len();
    for g in 0..SEGMENTS {
        let Some((first, cap)) = segment_span(config.s0, g) else {
            break;
        };
        if first >= grid.count() || (g > 0 && cap == 0) {
            break;
        }
        let start = config.segments[g];
        let Some(end) = cap.checked_mul(elen).and_then(|b| b.checked_add(start)) else {
            break;
        };
        if start == 0 || end > size {
            break;
        }
        let needed = cap.min(grid.count() - first);
        out.push(SegmentRead {
            slot: g,
            bytes: start..start + needed * elen,
            chunks: first..first + needed,
            extent: start..end,
        });
    }
    out
}

/// The validated index of a chunked section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Index {
    /// Entries of chunks `0 .. entries.len()`; later chunks were never written.
    entries: Vec<Entry>,
    /// Chunks whose entry ends past the committed size, read as never written.
    uncommitted: Vec<u64>,
    /// Bytes of each chunk's statistics (0 without them).
    stats_len: usize,
    /// The statistics of chunks `0 .. entries.len()`, `stats_len` each.
    stats: Vec<u8>,
    /// Whether each chunk's statistics are present and readable.
    stats_ok: Vec<bool>,
    /// Chunks whose statistics fail their CRC (read as having none).
    stats_damaged: Vec<u64>,
}

/// A region of a chunked section, as [`Index::decode`] checks that none overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Region {
    Config,
    Segment(u64),
    Chunk(u64),
}

impl Region {
    /// Its name in an error.
    fn name(self) -> String {
        match self {
            Region::Config => "the config".into(),
            Region::Segment(slot) => format!("index segment {slot}"),
            Region::Chunk(n) => format!("chunk {n}"),
        }
    }
}

impl Index {
    /// The index from the bytes of [`segment_reads`]' segments (in that order), validated
    /// against the config, the grid and the committed `size` (see the module docs).
    pub fn decode(
        config: &Config,
        grid: &Grid,
        size: u64,
        reads: &[SegmentRead],
        bytes: &[&[u8]],
    ) -> Result<Index> {
        let elen = config.entry_len() as usize;
        let stats_len = elen.saturating_sub(32) * usize::from(config.version != 1);
        let mut index = Index {
            stats_len,
            ..Index::default()
        };
        let config_len = config.encoded_len();
        // (start, end, what) of every region the section holds; named only for an error (a
        // name per chunk was an eighth of an open's time).
        let mut regions: Vec<(u64, u64, Region)> = vec![(0, config_len, Region::Config)];
        // The block table's length by chunk extent: every interior chunk has the same one.
        let mut last_table: Option<(Vec<u64>, Option<u64>)> = None;
        for (read, b) in reads.iter().zip(bytes) {
            let want = (read.bytes.end - read.bytes.start) as usize;
            if b.len() != want {
                return Err(bad(
                    &format!("index segment {}", read.slot),
                    format!("{want} bytes"),
                    b.len(),
                ));
            }
            regions.push((
                read.extent.start,
                read.extent.end,
                Region::Segment(read.slot as u64),
            ));
            for (k, e) in b.chunks_exact(elen).enumerate() {
                let n = read.chunks.start + k as u64;
                if config.version == 1 {
                    index
                        .entries
                        .push(Entry::decode(e.try_into().expect("24 bytes")));
                    index.stats_ok.push(false);
                } else {
                    let (entry, state) = Entry::decode_v2(e, n)?;
                    index.entries.push(entry);
                    index.stats.extend_from_slice(&e[32..]);
                    index.stats_ok.push(state == Some(true));
                    if state == Some(false) {
                        index.stats_damaged.push(n);
                    }
                }
            }
        }
        for (n, e) in index.entries.iter_mut().enumerate() {
            let n = n as u64;
            if e.is_empty() {
                continue;
            }
            // Not committed: written past `size` by a writer that has not committed it yet.
            if e.end().is_none_or(|end| end > size) {
                *e = Entry::default();
                index.stats_ok[n as usize] = false;
                index.uncommitted.push(n);
                continue;
            }
            let field = || format!("index entry of chunk {n}");
            if e.flags & !(ENTRY_RAW | ENTRY_FULL) != 0 {
                return Err(bad(
                    &field(),
                    "flags within 3 (bit 0 raw, bit 1 full extent)",
                    e.flags,
                ));
            }
            let Some(raw) = stored_raw_len(grid, n, e) else {
                return Err(bad(
                    &field(),
                    "a full extent whose raw bytes fit in u64",
                    format!("chunk shape {:?}", grid.chunk()),
                ));
            };
            if e.is_raw() {
                if e.len != raw {
                    return Err(bad(
                        &field(),
                        format!("{raw} stored bytes (raw chunk)"),
                        e.len,
                    ));
                }
            } else {
                let full = e.flags & ENTRY_FULL != 0;
                let table = match &last_table {
                    Some((seen, table)) if grid.stored_extent_is(n, full, seen) => *table,
                    _ => {
                        let extent = grid.stored_extent(n, full);
                        let table = BlockGrid::new(&config.blocks, &extent, grid.elbyte())
                            .and_then(|b| b.table_len());
                        last_table = Some((extent, table));
                        table
                    }
                };
                let Some(table) = table else {
                    return Err(bad(
                        &field(),
                        format!("a block table that fits in u64 bytes ({raw} raw bytes)"),
                        format!("blocks {:?}", config.blocks),
                    ));
                };
                if e.len <= table {
                    return Err(bad(
                        &field(),
                        format!("more than {table} stored bytes (its block table)"),
                        e.len,
                    ));
                }
            }
            regions.push((e.offset, e.offset + e.len, Region::Chunk(n)));
        }
        regions.sort_unstable();
        for w in regions.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(bad(
                    &format!("{} at {}..{}", w[1].2.name(), w[1].0, w[1].1),
                    "no overlap",
                    format!("overlaps {} at {}..{}", w[0].2.name(), w[0].0, w[0].1),
                ));
            }
        }
        Ok(index)
    }

    /// An index of the given entries (chunks `0 ..`), as an encoder builds it.
    pub fn from_entries(entries: Vec<Entry>) -> Index {
        Index {
            stats_ok: vec![false; entries.len()],
            entries,
            ..Index::default()
        }
    }

    /// The chunks whose entry ends past the committed size, in order: they read as never
    /// written. A writer's work not committed yet, or one left by a writer that died before
    /// its commit; in a version 1 file (entries without a CRC) also a damaged entry, which is
    /// why version 1 readers warn about them.
    ///
    /// ```
    /// use rawarray_serde::codec::{self, Codec, Config};
    /// use rawarray_serde::section::Section as SectionReader;
    /// use rawarray_serde::{ElType, Header, WriteOptions};
    /// let header = Header::new(ElType::Uint, 1, vec![4, 4]).unwrap();
    /// let opts = WriteOptions::new().codec(Codec::None).chunks(vec![4, 2]).layout_version(1);
    /// let (h, section) = codec::encode(&header, &[7u8; 16], &opts).unwrap();
    /// let mut file = h.encode();
    /// file.extend_from_slice(&section);
    /// // Chunk 1's entry (the second after the config) pointed far away.
    /// let at = h.encoded_len() + Config::encoded_len_v1(2) + 24;
    /// file[at + 7] = 0x40;
    /// let reader = SectionReader::open(&h, &file[..]).unwrap();
    /// assert_eq!(reader.chunk_map().unwrap().index().uncommitted(), [1]);
    /// ```
    pub fn uncommitted(&self) -> &[u64] {
        &self.uncommitted
    }

    /// Chunk `n`'s entry (empty if never written).
    pub fn entry(&self, n: u64) -> Entry {
        usize::try_from(n)
            .ok()
            .and_then(|i| self.entries.get(i))
            .copied()
            .unwrap_or_default()
    }

    /// The entries known (chunks `0 .. len`).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Chunk `n`'s statistics bytes, when present and readable.
    pub fn stats(&self, n: u64) -> Option<&[u8]> {
        let i = usize::try_from(n).ok()?;
        if !*self.stats_ok.get(i)? {
            return None;
        }
        self.stats.get(i * self.stats_len..(i + 1) * self.stats_len)
    }

    /// Chunks whose statistics fail their CRC (they are read as having none).
    pub fn stats_damaged(&self) -> &[u64] {
        &self.stats_damaged
    }

    /// Total stored bytes of the written chunks.
    pub fn stored_bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.len).sum()
    }
}
