//! The chunk index: one 24-byte entry per chunk, in segments that grow by doubling.
//!
//! Entry `n` (chunk `n`) is `offset u64, stored length u64, crc32 u32, flags u32`, offsets
//! relative to the data section. All zeros: the chunk was never written and reads as zeros.
//! Flag bit 0 ([`ENTRY_RAW`]): the stored bytes are the chunk's raw bytes (no block table, no
//! filter, no codec). Flag bit 1 ([`ENTRY_FULL`]): the chunk is stored at its full extent
//! along the last dim ([`Grid::full_raw_len`]); readers use its prefix. Segment 0 holds entries `0 .. S0`, segment `g >= 1` entries
//! `S0 2^(g-1) .. S0 2^g`.
//!
//! Validation happens once, before any chunk is read, from the segments' bytes alone: a
//! segment or entry that ends past the committed `size` is not committed yet and is ignored
//! (its chunks read as never written); every other entry must have known flags, a stored
//! length that fits its chunk, and no overlap with the config, a segment or another entry.
//!
//! ```
//! use rawarray_serde::codec::Entry;
//! let e = Entry { offset: 600, len: 40, crc: 7, flags: 0 };
//! assert_eq!(Entry::decode(&e.encode()), e);
//! assert!(Entry::default().is_empty());
//! ```

use std::ops::Range;

use super::config::{bad, Config, SEGMENTS};
use super::grid::Grid;
use super::{block_table_len, ENTRY_FULL, ENTRY_RAW};
use crate::error::Result;
use crate::header::le_u64;

/// Bytes of one index entry.
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
    /// Bit 0: stored raw ([`ENTRY_RAW`]).
    pub flags: u32,
}

impl Entry {
    /// Whether this is the all-zero entry of a chunk never written.
    pub fn is_empty(&self) -> bool {
        *self == Entry::default()
    }

    /// The entry's 24 bytes.
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
    for g in 0..SEGMENTS {
        let Some((first, cap)) = segment_span(config.s0, g) else {
            break;
        };
        if first >= grid.count() || (g > 0 && cap == 0) {
            break;
        }
        let start = config.segments[g];
        let Some(end) = cap
            .checked_mul(ENTRY_LEN)
            .and_then(|b| b.checked_add(start))
        else {
            break;
        };
        if start == 0 || end > size {
            break;
        }
        let needed = cap.min(grid.count() - first);
        out.push(SegmentRead {
            slot: g,
            bytes: start..start + needed * ENTRY_LEN,
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
        let mut entries = Vec::new();
        let config_len = Config::encoded_len(grid.dims().len()) as u64;
        // (start, end, what) of every region the section holds.
        let mut regions: Vec<(u64, u64, String)> = vec![(0, config_len, "the config".into())];
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
                format!("index segment {}", read.slot),
            ));
            entries.extend(
                b.chunks_exact(ENTRY_LEN as usize)
                    .map(|e| Entry::decode(e.try_into().expect("24 bytes"))),
            );
        }
        let block_bytes = config.block_bytes;
        let mut uncommitted = Vec::new();
        for (n, e) in entries.iter_mut().enumerate() {
            let n = n as u64;
            if e.is_empty() {
                continue;
            }
            // Not committed: written past `size` by a writer that has not committed it yet.
            if e.end().is_none_or(|end| end > size) {
                *e = Entry::default();
                uncommitted.push(n);
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
                let Some(table) = block_table_len(raw, block_bytes) else {
                    return Err(bad(
                        &field(),
                        format!("a block table that fits in u64 bytes ({raw} raw bytes in blocks of {block_bytes})"),
                        format!("{} blocks", raw.div_ceil(block_bytes)),
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
            regions.push((e.offset, e.offset + e.len, format!("chunk {n}")));
        }
        regions.sort_unstable();
        for w in regions.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(bad(
                    &format!("{} at {}..{}", w[1].2, w[1].0, w[1].1),
                    "no overlap",
                    format!("overlaps {} at {}..{}", w[0].2, w[0].0, w[0].1),
                ));
            }
        }
        Ok(Index {
            entries,
            uncommitted,
        })
    }

    /// An index of the given entries (chunks `0 ..`), as an encoder builds it.
    pub fn from_entries(entries: Vec<Entry>) -> Index {
        Index {
            entries,
            uncommitted: Vec::new(),
        }
    }

    /// The chunks whose entry ends past the committed size, in order: they read as never
    /// written. A writer's work not committed yet (or left by a writer that died before its
    /// commit), or a corrupt entry (entries have no CRC: a flipped bit in an offset lands
    /// here), so checkers report them.
    ///
    /// ```
    /// use rawarray_serde::codec::{self, ChunkOptions, Codec, SectionReader};
    /// use rawarray_serde::{ElType, Header};
    /// let header = Header::new(ElType::Uint, 1, vec![4, 4]).unwrap();
    /// let opts = ChunkOptions::new().codec(Codec::None).chunks(vec![4, 2]);
    /// let (h, section) = codec::encode(&header, &[7u8; 16], &opts).unwrap();
    /// let mut file = h.encode();
    /// file.extend_from_slice(&section);
    /// // Chunk 1's entry (the second after the config) pointed far away.
    /// let at = h.encoded_len() + codec::Config::encoded_len(2) + 24;
    /// file[at + 7] = 0x40;
    /// let reader = SectionReader::open(&h, &file[..]).unwrap();
    /// assert_eq!(reader.layout().index().uncommitted(), [1]);
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

    /// Total stored bytes of the written chunks.
    pub fn stored_bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.len).sum()
    }
}
