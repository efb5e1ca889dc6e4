//! The validated metadata of a chunked section, without I/O: [`ChunkMap`] (config, grid,
//! chain, index) says which stored bytes a chunk occupies, which blocks of it a box needs, and
//! how to decode and place them.
//!
//! A reader that does its own I/O (object storage) drives it directly: read the first
//! [`ChunkMap::config_probe`] bytes of the section, learn the config's length
//! ([`ChunkMap::config_len`]), read the config and [`ChunkMap::start`], fetch the
//! [`PendingIndex::segment_reads`], then [`PendingIndex::finish`]; then fetch
//! [`ChunkMap::chunk_range`] of the chunks a box touches. The section reader
//! ([`crate::section::Section`]) drives the same steps over a [`ReadAt`](crate::io::ReadAt).
//!
//! ```
//! use rawarray_serde::codec::{self, ChunkMap};
//! use rawarray_serde::{ElType, Header, WriteOptions};
//! let header = Header::new(ElType::Uint, 1, vec![8, 8]).unwrap();
//! let (h, section) = codec::encode(&header, &[3u8; 64], &WriteOptions::new().chunks(vec![8, 4])).unwrap();
//! let probe = &section[..ChunkMap::config_probe(&h).end as usize];
//! let len = ChunkMap::config_len(&h, probe).unwrap();
//! let pending = ChunkMap::start(&h, &section[..len as usize]).unwrap();
//! let segs: Vec<&[u8]> = pending
//!     .segment_reads()
//!     .iter()
//!     .map(|r| &section[r.bytes.start as usize..r.bytes.end as usize])
//!     .collect();
//! let map = pending.finish(&segs).unwrap();
//! assert_eq!(map.grid().count(), 2);
//! assert!(map.chunk_range(1).is_some());
//! ```

use std::ops::Range;

use super::blocks::BlockGrid;
use super::chain::{corrupt, Chain};
use super::config::{bad, Config};
use super::grid::{runs, CopyRuns, Grid, Place};
use super::index::{segment_reads, Entry, Index, SegmentRead};
use super::index::{ENTRY_FULL, ENTRY_RAW};
use crate::error::Result;
use crate::header::Header;

/// The validated metadata of a chunked section: config, grid, chain and index.
#[derive(Clone, Debug)]
pub struct ChunkMap {
    header: Header,
    config: Config,
    grid: Grid,
    chain: Chain,
    index: Index,
}

/// A config read and checked, waiting for its index segments ([`ChunkMap::start`]).
#[derive(Clone, Debug)]
pub struct PendingIndex {
    header: Header,
    config: Config,
    grid: Grid,
    reads: Vec<SegmentRead>,
}

impl PendingIndex {
    /// The byte ranges of the data section to fetch next, one per index segment.
    pub fn segment_reads(&self) -> &[SegmentRead] {
        &self.reads
    }

    /// The config.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The map, from the bytes of [`PendingIndex::segment_reads`], in order.
    pub fn finish(self, segments: &[&[u8]]) -> Result<ChunkMap> {
        let index = Index::decode(
            &self.config,
            &self.grid,
            self.header.size,
            &self.reads,
            segments,
        )?;
        let chain = Chain::from_config(&self.config, &self.header)?;
        Ok(ChunkMap {
            header: self.header,
            config: self.config,
            grid: self.grid,
            chain,
            index,
        })
    }
}

impl ChunkMap {
    /// The first bytes of the data section to read: enough to learn the config's length.
    pub fn config_probe(header: &Header) -> Range<u64> {
        0..Config::probe_len(header.dims.len()).min(header.size)
    }

    /// The config's length, from the bytes of [`ChunkMap::config_probe`].
    pub fn config_len(header: &Header, probe: &[u8]) -> Result<u64> {
        let len = Config::length_in(header, probe)?;
        if len > header.size {
            return Err(bad(
                "size",
                format!("at least {len} bytes (the config)"),
                header.size,
            ));
        }
        Ok(len)
    }

    /// Checks a chunked header and its config's bytes (all [`ChunkMap::config_len`] of them).
    pub fn start(header: &Header, config_bytes: &[u8]) -> Result<PendingIndex> {
        if !header.flags.is_chunked() {
            return Err(bad(
                "header flags",
                "bit 2 (chunked) set",
                header.flags.bits(),
            ));
        }
        let config = Config::decode(header, config_bytes)?;
        let grid = Grid::new(&header.dims, &config.chunk, header.elbyte)?;
        let reads = segment_reads(&config, &grid, header.size);
        Ok(PendingIndex {
            header: header.clone(),
            config,
            grid,
            reads,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The config.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The chunk grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// The filters, codec and blocks.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// The index.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Chunk `n`'s stored bytes in the data section, `None` if it was never written.
    pub fn chunk_range(&self, n: u64) -> Option<Range<u64>> {
        let e = self.index.entry(n);
        (!e.is_empty()).then(|| e.offset..e.offset + e.len)
    }

    /// The extent chunk `n` is stored at (its clipped shape, or its full extent along the
    /// last dim for a full-extent entry).
    pub fn stored_extent(&self, n: u64) -> Vec<u64> {
        let e = self.index.entry(n);
        self.grid.stored_extent(n, e.flags & ENTRY_FULL != 0)
    }

    /// The blocks of chunk `n` as stored.
    pub fn block_grid(&self, n: u64) -> Result<BlockGrid> {
        let extent = self.stored_extent(n);
        self.chain
            .block_grid(&extent)
            .ok_or_else(|| corrupt(n, format!("blocks of extent {extent:?} overflow")))
    }

    /// Decodes chunk `n` from all its stored bytes into `out` (its raw length in the grid,
    /// a prefix of a full-extent chunk), checking the entry's CRC and every block's.
    pub fn decode_chunk(&self, n: u64, stored: &[u8], out: &mut [u8]) -> Result<()> {
        let e = self.index.entry(n);
        let extent = self.stored_extent(n);
        // One pass of CRC over the stored bytes checks both the entry and every block.
        let (crc, fault) = self.chain.stored_crc(n, stored, e.flags, &extent);
        self.check_stored_crc(n, stored, crc)?;
        if let Some(fault) = fault {
            return Err(fault);
        }
        self.chain
            .decode_checked_chunk_prefix(n, stored, e.flags, &extent, out)
    }

    /// [`ChunkMap::decode_chunk`], then [`ChunkMap::check_stream_crcs`]: every checksum chunk
    /// `n` has, as a verifier (`Section::verify`, `ra verify`) checks them.
    pub fn verify_chunk(&self, n: u64, stored: &[u8], out: &mut [u8]) -> Result<()> {
        self.decode_chunk(n, stored, out)?;
        self.check_stream_crcs(n, stored)
    }

    /// Checks each byte stream of chunk `n` (all its stored bytes, `stored`) against its own
    /// CRC, where the streams carry one (config features bit 2; nothing to check otherwise or
    /// for a chunk stored raw). A whole decode ([`ChunkMap::decode_chunk`]) does not look at
    /// them, since the block's CRC covers them; a read of some fields relies on them, so a
    /// verifier checks both ([`Section::verify`](crate::section::Section::verify), `ra verify`).
    pub fn check_stream_crcs(&self, n: u64, stored: &[u8]) -> Result<()> {
        let e = self.index.entry(n);
        if !self.chain.pipeline().has_stream_crcs() || e.flags & ENTRY_RAW != 0 || e.is_empty() {
            return Ok(());
        }
        let g = self.block_grid(n)?;
        let table = self.chain.block_table(n, stored, &g, stored.len() as u64)?;
        for (b, r) in table.iter().enumerate() {
            let payload = usize::try_from(r.start)
                .ok()
                .zip(usize::try_from(r.start + r.len).ok())
                .and_then(|(lo, hi)| stored.get(lo..hi))
                .ok_or_else(|| corrupt(n, format!("block {b}: past the chunk's stored bytes")))?;
            let len = crate::data::to_usize(g.raw_len(b as u64))?;
            self.chain.check_stream_crcs(n, b as u64, payload, len)?;
        }
        Ok(())
    }

    /// Checks chunk `n`'s stored bytes against its index entry: their length and CRC-32.
    pub fn check_stored(&self, n: u64, stored: &[u8]) -> Result<()> {
        self.check_stored_crc(n, stored, crc32fast::hash(stored))
    }

    /// [`ChunkMap::check_stored`] of bytes whose CRC-32 is `crc`.
    fn check_stored_crc(&self, n: u64, stored: &[u8], crc: u32) -> Result<()> {
        let e = self.index.entry(n);
        if stored.len() as u64 != e.len || crc != e.crc {
            return Err(corrupt(
                n,
                format!(
                    "crc32 {crc:#010x} of {} stored bytes, index says {:#010x} of {}",
                    stored.len(),
                    e.crc,
                    e.len
                ),
            ));
        }
        Ok(())
    }

    /// Raw bytes chunk `n`'s stored bytes decode to: [`Grid::raw_len`], or more for a chunk
    /// stored at its full extent ([`super::ENTRY_FULL`]; its entry was validated with it).
    pub fn stored_raw_len(&self, n: u64) -> u64 {
        super::index::stored_raw_len(&self.grid, n, &self.index.entry(n))
            .unwrap_or_else(|| self.grid.raw_len(n))
    }

    /// Chunk `n`'s entry.
    pub fn entry(&self, n: u64) -> Entry {
        self.index.entry(n)
    }

    /// Chunk `n`'s part of the box `ranges` in the chunk's own coordinates, and where that
    /// part starts in a buffer of the box's shape.
    pub fn local_box(&self, n: u64, ranges: &[Range<u64>]) -> (Vec<Range<u64>>, Vec<u64>) {
        let (o, s) = (self.grid.origin(n), self.grid.shape(n));
        let local: Vec<Range<u64>> = ranges
            .iter()
            .zip(o.iter().zip(&s))
            .map(|(r, (&o, &s))| r.start.max(o) - o..r.end.min(o + s).max(r.start.max(o)) - o)
            .collect();
        let at: Vec<u64> = local
            .iter()
            .zip(o.iter().zip(ranges))
            .map(|(l, (&o, r))| l.start + o - r.start)
            .collect();
        (local, at)
    }

    /// The runs `(chunk raw byte, out byte, bytes)` that place chunk `n`'s part of the box
    /// `ranges` in a buffer of the box's shape, from the chunk's raw bytes (its clipped
    /// extent, or the prefix of its full extent).
    pub fn subset_runs(&self, n: u64, ranges: &[Range<u64>]) -> CopyRuns {
        let s = self.grid.shape(n);
        let (local, at_dst) = self.local_box(n, ranges);
        let extent: Vec<u64> = local.iter().map(|r| r.end - r.start).collect();
        let at_src: Vec<u64> = local.iter().map(|r| r.start).collect();
        let sub: Vec<u64> = ranges.iter().map(|r| r.end - r.start).collect();
        runs(
            &extent,
            self.grid.elbyte(),
            Place {
                dims: &s,
                at: &at_src,
            },
            Place {
                dims: &sub,
                at: &at_dst,
            },
        )
    }
}
