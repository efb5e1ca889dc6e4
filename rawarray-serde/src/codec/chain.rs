//! A chunk's stored bytes: its blocks ([`BlockGrid`]) each through the [`Pipeline`], behind
//! a block table (doc/chunked.md 5.5 and 6.3).
//!
//! The stored bytes of a chunk (unless stored raw) are a block table of one 12-byte entry per
//! block, `end u64` (the end of the block's payload, counted from the first byte after the
//! table) and `crc32 u32` (of the block's payload), then the payloads. Every decode checks the
//! CRC of each block it decodes.
//!
//! ```
//! use rawarray_serde::codec::{Blocks, Chain, Codec, Elements, Filter, Pipeline};
//! use rawarray_serde::ElType;
//! let el = Elements::new(ElType::Float, 4, false);
//! let chain = Chain::new(Pipeline::new(vec![Filter::Shuffle], Codec::Zstd, 3, el), Blocks::Shape(vec![50, 50]));
//! let raw: Vec<u8> = (0..10_000u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
//! let (stored, flags) = chain.encode_chunk(&raw, &[100, 100]).unwrap();
//! assert!(stored.len() < raw.len() / 2);
//! let mut back = vec![0u8; raw.len()];
//! chain.decode_chunk(0, &stored, flags, &[100, 100], &mut back).unwrap();
//! assert_eq!(back, raw);
//! ```

use super::blocks::{BlockGrid, BLOCK_ENTRY_LEN};
use super::config::{Blocks, Config};
use super::index::ENTRY_RAW;
use super::pipeline::Pipeline;
use super::stats::Folder;
use super::table::Codec;
use super::traits::Elements;
use crate::error::{ErrorKind, Result};
use crate::header::{le_u64, Header};

/// Blocks over this many raw bytes (only version 1 has them) are decoded as a stream.
pub const STREAM_BLOCK_BYTES: u64 = super::config::MAX_BLOCK_BYTES_V2;

/// The pipeline and block geometry of a chunked section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chain {
    pipeline: Pipeline,
    blocks: Blocks,
}

/// A chunk encoded by [`Chain::encode_chunk_into`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoredChunk {
    /// Bytes stored.
    pub len: usize,
    /// The entry flags: [`ENTRY_RAW`] when the chain does not shrink the chunk, or 0.
    pub flags: u32,
    /// CRC-32 of the stored bytes.
    pub crc: u32,
}

/// A block's place in its chunk's stored bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRef {
    /// Offset of the payload in the chunk's stored bytes.
    pub start: u64,
    /// Bytes of the payload.
    pub len: u64,
    /// CRC-32 of the payload.
    pub crc: u32,
}

impl Chain {
    /// A chain of `pipeline` over blocks `blocks`.
    pub fn new(pipeline: Pipeline, blocks: Blocks) -> Chain {
        Chain { pipeline, blocks }
    }

    /// The chain a config describes for a file of `header`.
    pub fn from_config(config: &Config, header: &Header) -> Result<Chain> {
        if config.stream_crcs && !config.split {
            return Err(crate::Error::msg(
                "config stream_crcs: expected byte streams (split) to carry them, found none",
            ));
        }
        let el = Elements::new(
            header.eltype,
            crate::data::to_usize(header.elbyte)?,
            header.flags.is_big_endian(),
        );
        Ok(Chain::new(
            Pipeline::new(config.filters.clone(), config.codec, config.level, el)
                .with_split(config.split)
                .with_stream_crcs(config.stream_crcs),
            config.blocks.clone(),
        ))
    }

    /// The pipeline.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The codec.
    pub fn codec(&self) -> Codec {
        self.pipeline.codec()
    }

    /// The block geometry.
    pub fn blocks(&self) -> &Blocks {
        &self.blocks
    }

    /// The blocks of a chunk stored at `extent` (`None` past `u64`: the index refuses such
    /// chunks before anything asks).
    pub fn block_grid(&self, extent: &[u64]) -> Option<BlockGrid> {
        BlockGrid::new(&self.blocks, extent, self.pipeline.elements().elbyte as u64)
    }

    fn grid_or_err(&self, chunk: u64, extent: &[u64]) -> Result<BlockGrid> {
        self.block_grid(extent)
            .ok_or_else(|| corrupt(chunk, format!("blocks of extent {extent:?} overflow")))
    }

    /// The stored bytes of one chunk (`raw`, column-major over `extent`) and its entry flags
    /// ([`ENTRY_RAW`] when the chain does not shrink it, or the codec is `none`).
    pub fn encode_chunk(&self, raw: &[u8], extent: &[u64]) -> Result<(Vec<u8>, u32)> {
        let bound = self
            .stored_bound(extent)
            .ok_or_else(|| corrupt(0, format!("blocks of extent {extent:?} overflow")))?;
        // Zeroed by the allocator (fresh pages for a large chunk), written once.
        let mut out = vec![0u8; bound.max(raw.len())];
        let s = self.encode_chunk_into(raw, extent, &mut out)?;
        out.truncate(s.len);
        // Well compressed chunks keep no room they did not use (a shrink in place).
        out.shrink_to_fit();
        Ok((out, s.flags))
    }

    /// The bytes [`Chain::encode_chunk_into`] may use for a chunk stored at `extent` (`None`
    /// past `usize`): its raw bytes, its block table, and what one block's codec may write
    /// beyond its input before the chunk is found not to shrink.
    pub fn stored_bound(&self, extent: &[u64]) -> Option<usize> {
        let g = self.block_grid(extent)?;
        // Block 0 is the largest: every other block is at most the block shape.
        let slack = if g.count() == 0 {
            0
        } else {
            g.raw_len(0) / 8 + 64
        };
        let n = g
            .chunk_raw_len()
            .checked_add(g.table_len()?)?
            .checked_add(slack)?;
        usize::try_from(n).ok()
    }

    /// [`Chain::encode_chunk`] into `out` (at least `raw.len()` bytes; [`Chain::stored_bound`]
    /// bytes spare every copy): the stored bytes are `out[..len]`. With the stored bytes'
    /// CRC-32 (the index entry's), combined from the blocks' CRCs rather than read again.
    pub fn encode_chunk_into(
        &self,
        raw: &[u8],
        extent: &[u64],
        out: &mut [u8],
    ) -> Result<StoredChunk> {
        // Lossy filters come first in a pipeline and work element by element: the chunk is
        // rounded once here, so that a chunk stored raw holds the rounded values too.
        let rounded = self.pipeline.round(raw);
        self.encode_rounded_into(rounded.as_deref().unwrap_or(raw), extent, out, None)
    }

    /// [`Chain::encode_chunk_into`] of a chunk already through the pipeline's lossy filters
    /// ([`Pipeline::round`]), for a writer that keeps the rounded values. With `stats`, the
    /// chunk's statistics (of those values) are folded into it: each block right after it is
    /// encoded, while its bytes are still in cache, or the whole chunk when it is stored raw.
    pub(crate) fn encode_rounded_into(
        &self,
        raw: &[u8],
        extent: &[u64],
        out: &mut [u8],
        mut stats: Option<&mut Folder>,
    ) -> Result<StoredChunk> {
        if out.len() < raw.len() {
            return Err(crate::Error::msg(format!(
                "chunk of {} raw bytes encoded into {} bytes",
                raw.len(),
                out.len()
            )));
        }
        let stored_raw = |out: &mut [u8], stats: Option<&mut Folder>| {
            if let Some(s) = stats {
                // Blocks folded before the chain gave up are folded again with the rest.
                s.reset();
                s.fold(raw);
            }
            out[..raw.len()].copy_from_slice(raw);
            Ok(StoredChunk {
                len: raw.len(),
                flags: ENTRY_RAW,
                crc: crc32fast::hash(raw),
            })
        };
        if self.pipeline.codec() == Codec::None {
            return stored_raw(out, stats);
        }
        let g = self.grid_or_err(0, extent)?;
        let table = g.count() as usize * BLOCK_ENTRY_LEN as usize;
        if table >= raw.len() {
            return stored_raw(out, stats);
        }
        let mut payload_crc = crc32fast::Hasher::new();
        let mut pos = table;
        let mut gathered = Vec::new();
        for b in 0..g.count() {
            let block: &[u8] = if g.is_contiguous() {
                let start = g.contiguous_start(b) as usize;
                &raw[start..start + g.raw_len(b) as usize]
            } else {
                gathered.clear();
                gathered.resize(g.raw_len(b) as usize, 0);
                for (s, d, len) in g.block_to_chunk(b) {
                    gathered[s as usize..(s + len) as usize]
                        .copy_from_slice(&raw[d as usize..(d + len) as usize]);
                }
                &gathered
            };
            // A block that does not fit in `out` (at least the raw length) makes the stored
            // bytes longer than the raw ones.
            let Some(n) = self.pipeline.encode_block_into(block, &mut out[pos..])? else {
                return stored_raw(out, stats);
            };
            if let Some(s) = stats.as_deref_mut() {
                s.fold(block);
            }
            let crc = crc32fast::hash(&out[pos..pos + n]);
            payload_crc.combine(&crc32fast::Hasher::new_with_initial_len(crc, n as u64));
            pos += n;
            if pos >= raw.len() {
                return stored_raw(out, stats);
            }
            let end = (pos - table) as u64;
            let e = &mut out[b as usize * 12..b as usize * 12 + 12];
            e[..8].copy_from_slice(&end.to_le_bytes());
            e[8..].copy_from_slice(&crc.to_le_bytes());
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&out[..table]);
        crc.combine(&payload_crc);
        Ok(StoredChunk {
            len: pos,
            flags: 0,
            crc: crc.finalize(),
        })
    }

    /// The block table at the start of chunk `chunk`'s stored bytes (`stored_len` in all),
    /// checked: ends never decrease, the last one ends the stored bytes, and each block's
    /// claim fits what its codec can expand to.
    pub fn block_table(
        &self,
        chunk: u64,
        table: &[u8],
        grid: &BlockGrid,
        stored_len: u64,
    ) -> Result<Vec<BlockRef>> {
        let nb = grid.count();
        let tlen = nb.saturating_mul(BLOCK_ENTRY_LEN);
        // The table must be in hand before `nb` sizes anything: a hostile count is refused here.
        if (table.len() as u64) < tlen || stored_len < tlen {
            return Err(corrupt(
                chunk,
                format!(
                    "block table of {nb} blocks needs {tlen} bytes, found {}",
                    (table.len() as u64).min(stored_len)
                ),
            ));
        }
        let payload = stored_len - tlen;
        let max_ratio = self.pipeline.codec().block_codec().max_ratio();
        let mut prev = 0u64;
        let mut out = Vec::with_capacity(nb as usize);
        for b in 0..nb {
            let e = &table[(b * 12) as usize..(b * 12 + 12) as usize];
            let end = le_u64(&e[..8]);
            let crc = u32::from_le_bytes(e[8..].try_into().expect("4 bytes"));
            if end < prev || end > payload {
                return Err(corrupt(
                    chunk,
                    format!("block {b} ends at {end}: expected {prev}..={payload}"),
                ));
            }
            let claim = grid.raw_len(b);
            let len = end - prev;
            if claim > len.saturating_mul(max_ratio).saturating_add(64) {
                return Err(corrupt(
                    chunk,
                    format!(
                        "block {b} of {len} stored bytes cannot hold {claim} raw bytes ({})",
                        self.pipeline.codec().name()
                    ),
                ));
            }
            out.push(BlockRef {
                start: tlen + prev,
                len,
                crc,
            });
            prev = end;
        }
        if prev != payload {
            return Err(corrupt(
                chunk,
                format!("blocks end at {prev}, stored payload is {payload} bytes"),
            ));
        }
        Ok(out)
    }

    /// Decodes block `b` (its payload `stored`, its table entry `r`) of chunk `chunk` into
    /// `out` (exactly the block's raw length), checking its CRC.
    pub fn decode_block(
        &self,
        chunk: u64,
        b: u64,
        r: &BlockRef,
        stored: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.decode_block_opt(chunk, b, r, stored, out, true)
    }

    /// Decodes only byte planes `which` of block `b` (`len` raw bytes; its payload `stored`,
    /// its table entry `r`) of chunk `chunk` into `out` ([`Pipeline::decode_planes`]), after
    /// checking the whole payload's CRC as [`Chain::decode_block`] does.
    #[allow(clippy::too_many_arguments)]
    pub fn decode_block_planes(
        &self,
        chunk: u64,
        b: u64,
        r: &BlockRef,
        stored: &[u8],
        len: usize,
        which: &[usize],
        out: &mut [u8],
    ) -> Result<()> {
        check_block_crc(chunk, b, r, stored)?;
        self.pipeline
            .decode_planes(stored, len, which, out)
            .map_err(|e| corrupt(chunk, format!("block {b}: {e}")))
    }

    /// Decodes only byte planes `which` (sorted, distinct, each below elbyte) of block `b` of
    /// chunk `chunk` (`r` in its table, `len` raw bytes), reading its payload piece by piece
    /// with `read(offset, len)` (offsets in the payload): the head of stream lengths and CRCs,
    /// then the stored bytes of each run of consecutive planes in one read, each stream checked
    /// against its own CRC before it is decoded. `out` as in [`Chain::decode_block_planes`].
    /// Only where each stream has its CRC ([`Pipeline::has_stream_crcs`]) and
    /// [`Pipeline::decodes_by_plane`]: a read of some streams cannot check the block's CRC,
    /// which covers them all.
    #[allow(clippy::too_many_arguments)]
    pub fn read_block_planes<'a>(
        &self,
        chunk: u64,
        b: u64,
        r: &BlockRef,
        len: usize,
        which: &[usize],
        read: &mut dyn FnMut(u64, u64) -> Result<std::borrow::Cow<'a, [u8]>>,
        out: &mut [u8],
    ) -> Result<()> {
        let p = &self.pipeline;
        let el = p.elements();
        let bad = |e: String| corrupt(chunk, format!("block {b}: {e}"));
        if !p.decodes_by_plane() || !p.has_stream_crcs() {
            return Err(crate::Error::msg(format!(
                "planes read alone: the pipeline {:?} (split {}, stream CRCs {}) does not \
                 store checked byte planes",
                p.filters(),
                p.is_split(),
                p.has_stream_crcs()
            )));
        }
        let m = len / el.elbyte.max(1);
        if which.windows(2).any(|w| w[0] >= w[1]) || out.len() != which.len() * m {
            return Err(crate::Error::msg(format!(
                "planes {which:?} (sorted, distinct) of {m} bytes read into {} bytes",
                out.len()
            )));
        }
        // At most the payload: a payload shorter than its head is an error of `plane_runs`,
        // never a read into the next block.
        let head = read(0, (self.stream_head_len() as u64).min(r.len))?;
        let (streams, runs) = self.plane_runs(chunk, b, r, len, which, &head)?;
        let codec = p.codec().block_codec();
        for (planes, bytes) in runs {
            // A run of consecutive planes is one read: their streams lie next to each other.
            let at = bytes.start;
            let got = read(at as u64, (bytes.end - at) as u64)?;
            for i in planes {
                let j = which[i];
                let s = &streams[j];
                let stored = got
                    .get(s.range.start - at..s.range.end - at)
                    .ok_or_else(|| bad(format!("split stream {j}: read short")))?;
                super::split::decode_stream(codec, s, j, stored, el, &mut out[i * m..(i + 1) * m])
                    .map_err(bad)?;
            }
        }
        p.finish_planes(len, which, out);
        Ok(())
    }

    /// The bytes at the start of a block stored as byte streams with their CRCs that say where
    /// each stream lies: what [`Chain::read_block_planes`] reads first.
    pub fn stream_head_len(&self) -> usize {
        super::split::head_len(self.pipeline.elements(), true)
    }

    /// The byte ranges of block `b` (offsets in its payload) that [`Chain::read_block_planes`]
    /// of the planes `which` reads after its head `head` (the payload's first
    /// [`Chain::stream_head_len`] bytes): a reader with I/O of its own fetches these first.
    pub fn block_plane_reads(
        &self,
        chunk: u64,
        b: u64,
        r: &BlockRef,
        len: usize,
        which: &[usize],
        head: &[u8],
    ) -> Result<Vec<std::ops::Range<usize>>> {
        let (_, runs) = self.plane_runs(chunk, b, r, len, which, head)?;
        Ok(runs.into_iter().map(|(_, bytes)| bytes).collect())
    }

    /// The streams of block `b` as its head `head` places them (checked against the payload's
    /// length), and the planes `which` grouped in runs of consecutive planes, each with the
    /// indices into `which` it covers and the payload's bytes that hold its streams: one read
    /// each.
    #[allow(clippy::type_complexity)]
    fn plane_runs(
        &self,
        chunk: u64,
        b: u64,
        r: &BlockRef,
        len: usize,
        which: &[usize],
        head: &[u8],
    ) -> Result<(
        Vec<super::split::Stream>,
        Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
    )> {
        let el = self.pipeline.elements();
        let bad = |e: String| corrupt(chunk, format!("block {b}: {e}"));
        let payload = crate::data::to_usize(r.len)?;
        let hl = self.stream_head_len();
        if payload < hl || head.len() < hl {
            return Err(bad(format!(
                "split payload of {payload} bytes (head read: {}): expected at least its head \
                 of {hl}",
                head.len()
            )));
        }
        let streams = super::split::streams_of(&head[..hl], payload, el, len, true).map_err(bad)?;
        let mut runs = Vec::new();
        let mut k = 0;
        while k < which.len() {
            let mut end = k + 1;
            while end < which.len() && which[end - 1].checked_add(1) == Some(which[end]) {
                end += 1;
            }
            let (Some(first), Some(last)) = (streams.get(which[k]), streams.get(which[end - 1]))
            else {
                return Err(crate::Error::msg(format!(
                    "planes {which:?} of {} streams",
                    streams.len()
                )));
            };
            runs.push((k..end, first.range.start..last.range.end));
            k = end;
        }
        Ok((streams, runs))
    }

    /// Checks each byte stream of block `b` of chunk `chunk` (its whole stored payload
    /// `stored`, `len` raw bytes) against its own CRC, where the pipeline stores them
    /// ([`Pipeline::has_stream_crcs`]; nothing to check otherwise).
    pub fn check_stream_crcs(&self, chunk: u64, b: u64, stored: &[u8], len: usize) -> Result<()> {
        if !self.pipeline.has_stream_crcs() {
            return Ok(());
        }
        super::split::check_stream_crcs(stored, self.pipeline.elements(), len)
            .map_err(|e| corrupt(chunk, format!("block {b}: {e}")))
    }

    /// [`Chain::decode_block`], checking the CRC only when `check`.
    fn decode_block_opt(
        &self,
        chunk: u64,
        b: u64,
        r: &BlockRef,
        stored: &[u8],
        out: &mut [u8],
        check: bool,
    ) -> Result<()> {
        if check {
            check_block_crc(chunk, b, r, stored)?;
        }
        self.pipeline
            .decode_block(stored, out)
            .map_err(|e| corrupt(chunk, format!("block {b}: {e}")))
    }

    /// Decodes raw bytes `want` of block `b` (`len` raw bytes; its payload `stored`, its table
    /// entry `r`) of chunk `chunk` into `out`, checking the payload's CRC. A block over 16 MiB
    /// (version 1 allows 2^30) is decoded as a stream ([`super::stream`]), keeping only what
    /// `want` needs.
    #[allow(clippy::too_many_arguments)]
    pub fn decode_block_range(
        &self,
        chunk: u64,
        b: u64,
        r: &BlockRef,
        stored: &[u8],
        len: u64,
        want: std::ops::Range<u64>,
        out: &mut [u8],
    ) -> Result<()> {
        if len <= STREAM_BLOCK_BYTES {
            let mut whole = vec![0u8; crate::data::to_usize(len)?];
            self.decode_block(chunk, b, r, stored, &mut whole)?;
            out.copy_from_slice(&whole[want.start as usize..want.end as usize]);
            return Ok(());
        }
        check_block_crc(chunk, b, r, stored)?;
        super::stream::decode_range(&self.pipeline, stored, len, want, out)
            .map_err(|e| corrupt(chunk, format!("block {b}: {e}")))
    }

    /// The CRC-32 of chunk `chunk`'s stored bytes (entry `flags`, stored `extent`), computed
    /// in one pass that also checks each block's payload against its table entry: each
    /// block's CRC is computed once and the chunk's is combined from them (`crc32fast`'s
    /// `combine`), where checking the index entry and then every block would read the stored
    /// bytes twice (7% of a whole shuffle + zstd read). Returns the CRC and the first fault
    /// found in the blocks (a table that does not parse, or a block whose CRC differs), so
    /// that the caller reports a wrong index entry first, as a plain check of the whole
    /// would; after `(crc, None)` the chunk map decodes the blocks without hashing them again.
    pub fn stored_crc(
        &self,
        chunk: u64,
        stored: &[u8],
        flags: u32,
        extent: &[u64],
    ) -> (u32, Option<crate::Error>) {
        let blocks = if flags & ENTRY_RAW != 0 {
            Ok(None)
        } else {
            self.grid_or_err(chunk, extent).and_then(|g| {
                self.block_table(chunk, stored, &g, stored.len() as u64)
                    .map(Some)
            })
        };
        let blocks = match blocks {
            Ok(Some(b)) => b,
            Ok(None) => return (crc32fast::hash(stored), None),
            Err(e) => return (crc32fast::hash(stored), Some(e)),
        };
        let table = blocks.first().map_or(stored.len(), |r| r.start as usize);
        let mut crc = crc32fast::Hasher::new();
        crc.update(&stored[..table]);
        let mut fault = None;
        for (b, r) in blocks.iter().enumerate() {
            let payload = &stored[r.start as usize..(r.start + r.len) as usize];
            let c = crc32fast::hash(payload);
            if c != r.crc && fault.is_none() {
                fault = Some(block_crc_error(chunk, b as u64, r, c));
            }
            crc.combine(&crc32fast::Hasher::new_with_initial_len(c, r.len));
        }
        (crc.finalize(), fault)
    }

    /// [`Chain::decode_chunk_prefix`] of a chunk whose every block's CRC was checked by
    /// [`Chain::stored_crc`]: the blocks are decoded without hashing them again. Crate-private,
    /// so that no caller outside can decode bytes it did not check.
    pub(crate) fn decode_checked_chunk_prefix(
        &self,
        chunk: u64,
        stored: &[u8],
        flags: u32,
        extent: &[u64],
        out: &mut [u8],
    ) -> Result<()> {
        self.decode_prefix(chunk, stored, flags, extent, out, false)
    }

    /// Decodes all of chunk `chunk` (its stored bytes, entry flags and stored `extent`) into
    /// `out` (exactly its raw length). The caller has checked the entry's CRC; each block's
    /// CRC is checked here.
    pub fn decode_chunk(
        &self,
        chunk: u64,
        stored: &[u8],
        flags: u32,
        extent: &[u64],
        out: &mut [u8],
    ) -> Result<()> {
        self.decode_chunk_prefix(chunk, stored, flags, extent, out)
    }

    /// Decodes the first `out.len()` raw bytes of chunk `chunk`, stored at `extent` (larger,
    /// for a chunk stored at its full extent, [`ENTRY_FULL`](super::ENTRY_FULL)): only the
    /// blocks that hold them are decoded, and nothing of the whole extent is allocated. The
    /// caller has checked the entry's CRC; each block's CRC is checked here.
    pub fn decode_chunk_prefix(
        &self,
        chunk: u64,
        stored: &[u8],
        flags: u32,
        extent: &[u64],
        out: &mut [u8],
    ) -> Result<()> {
        self.decode_prefix(chunk, stored, flags, extent, out, true)
    }

    /// [`Chain::decode_chunk_prefix`], checking each block's CRC when `check` (else the caller
    /// has, by [`Chain::stored_crc`]).
    fn decode_prefix(
        &self,
        chunk: u64,
        stored: &[u8],
        flags: u32,
        extent: &[u64],
        out: &mut [u8],
        check: bool,
    ) -> Result<()> {
        let g = self.grid_or_err(chunk, extent)?;
        let raw_len = g.chunk_raw_len();
        let want = out.len() as u64;
        if want > raw_len {
            return Err(corrupt(
                chunk,
                format!("{want} raw bytes asked of a chunk of {raw_len}"),
            ));
        }
        if flags & ENTRY_RAW != 0 {
            if stored.len() as u64 != raw_len {
                return Err(corrupt(
                    chunk,
                    format!("raw chunk of {} bytes, expected {raw_len}", stored.len()),
                ));
            }
            out.copy_from_slice(&stored[..out.len()]);
            return Ok(());
        }
        let blocks = self.block_table(chunk, stored, &g, stored.len() as u64)?;
        let used = g.prefix_blocks(want);
        let mut whole = Vec::new();
        for (b, r) in blocks.iter().enumerate().take(used as usize) {
            let b = b as u64;
            let payload = &stored[r.start as usize..(r.start + r.len) as usize];
            let len = g.raw_len(b);
            if len > STREAM_BLOCK_BYTES && g.is_contiguous() {
                // A version 1 block over 16 MiB: streamed into its part of the prefix.
                let start = g.contiguous_start(b);
                let end = (start + len).min(want);
                self.decode_block_range(
                    chunk,
                    b,
                    r,
                    payload,
                    len,
                    0..end - start,
                    &mut out[start as usize..end as usize],
                )?;
                continue;
            }
            if g.is_contiguous() {
                let start = g.contiguous_start(b);
                if start + len <= want {
                    self.decode_block_opt(
                        chunk,
                        b,
                        r,
                        payload,
                        &mut out[start as usize..(start + len) as usize],
                        check,
                    )?;
                    continue;
                }
            }
            // A block that is not a run of the output, or the one the prefix ends in: decoded
            // whole (a block decodes alone), its bytes placed where they belong in the prefix.
            whole.clear();
            whole.resize(len as usize, 0);
            self.decode_block_opt(chunk, b, r, payload, &mut whole, check)?;
            for (s, d, n) in g.block_to_chunk(b) {
                if d >= want {
                    continue;
                }
                let n = n.min(want - d);
                out[d as usize..(d + n) as usize]
                    .copy_from_slice(&whole[s as usize..(s + n) as usize]);
            }
        }
        Ok(())
    }
}

/// Checks the payload `stored` of block `b` of chunk `chunk` against its table entry's CRC.
fn check_block_crc(chunk: u64, b: u64, r: &BlockRef, stored: &[u8]) -> Result<()> {
    let crc = crc32fast::hash(stored);
    if crc != r.crc {
        return Err(block_crc_error(chunk, b, r, crc));
    }
    Ok(())
}

/// The error of block `b` of chunk `chunk` whose payload's CRC is `crc`, not its table's.
fn block_crc_error(chunk: u64, b: u64, r: &BlockRef, crc: u32) -> crate::Error {
    corrupt(
        chunk,
        format!(
            "block {b}: crc32 {crc:#010x}, block table says {:#010x}",
            r.crc
        ),
    )
}

pub(crate) fn corrupt(chunk: u64, what: String) -> crate::Error {
    ErrorKind::ChunkCorrupt { chunk, what }.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Elements, Filter};
    use crate::eltype::ElType;

    fn chain(codec: Codec, blocks: Blocks) -> Chain {
        let el = Elements::new(ElType::Float, 4, false);
        Chain::new(Pipeline::new(vec![Filter::Shuffle], codec, 0, el), blocks)
    }

    /// Floats that compress (a ramp) or do not (noise), `n` of them.
    fn floats(n: usize, noise: bool) -> Vec<u8> {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        (0..n)
            .flat_map(|i| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let v = if noise {
                    f32::from_bits(seed as u32)
                } else {
                    i as f32
                };
                v.to_le_bytes()
            })
            .collect()
    }

    // Statistics folded block by block while a chunk is encoded are those of the whole chunk:
    // blocks in place and gathered, chunks that shrink and chunks that fall back to raw
    // after some blocks were folded, and codec `none`.
    #[test]
    fn statistics_folded_by_block_are_the_chunks() {
        let extent = [40u64, 30];
        let fields = [super::super::stats::StatField::scalar(ElType::Float, 4)];
        for codec in [Codec::Lz4, Codec::Zstd, Codec::None] {
            for blocks in [Blocks::Shape(vec![40, 7]), Blocks::Shape(vec![16, 16])] {
                let c = chain(codec, blocks);
                // A ramp, noise, and a ramp's first block before noise (the chain gives up
                // after folding a block).
                for kind in 0..3 {
                    let noise = kind > 0;
                    let mut raw = floats(1200, noise);
                    if kind == 2 {
                        raw[..4 * 280].copy_from_slice(&floats(280, false));
                    }
                    // The ramp's least value is a zero: some -0.0 after it.
                    raw[4 * 700..4 * 701].copy_from_slice(&(-0.0f32).to_le_bytes());
                    let mut out = vec![0u8; c.stored_bound(&extent).unwrap()];
                    let mut folder = Folder::new(&fields, 4, false);
                    c.encode_rounded_into(&raw, &extent, &mut out, Some(&mut folder))
                        .unwrap();
                    assert_eq!(
                        folder.finish(),
                        super::super::stats::compute(&fields, &raw, 4, false),
                        "{codec:?} kind {kind}"
                    );
                }
            }
        }
    }

    // The stored bytes written into a slice are those of `encode_chunk`, the CRC is of them,
    // and a chunk that does not shrink is stored raw, whatever room it is given.
    #[test]
    fn encode_into_matches_encode_and_its_crc() {
        let extent = [40u64, 30];
        for codec in [Codec::Lz4, Codec::Zstd] {
            // Contiguous blocks (whole rows) and blocks that are gathered.
            for blocks in [Blocks::Shape(vec![40, 7]), Blocks::Shape(vec![16, 16])] {
                let c = chain(codec, blocks);
                for noise in [false, true] {
                    let raw = floats(1200, noise);
                    let (want, flags) = c.encode_chunk(&raw, &extent).unwrap();
                    assert_eq!(flags == ENTRY_RAW, noise, "{codec:?} noise {noise}");
                    let bound = c.stored_bound(&extent).unwrap();
                    for room in [bound, raw.len()] {
                        let mut out = vec![0u8; room];
                        let s = c.encode_chunk_into(&raw, &extent, &mut out).unwrap();
                        assert_eq!((&out[..s.len], s.flags), (&want[..], flags));
                        assert_eq!(s.crc, crc32fast::hash(&want));
                    }
                    let mut back = vec![0u8; raw.len()];
                    c.decode_chunk(0, &want, flags, &extent, &mut back).unwrap();
                    assert_eq!(back, raw);
                }
            }
        }
    }

    // The one-pass CRC is the CRC of all the stored bytes; a flipped payload byte is found in
    // its block (and changes the chunk's CRC); a table that does not parse is reported
    // beside the plain CRC; a raw chunk is hashed whole.
    #[test]
    fn stored_crc_is_the_whole_crc_and_finds_the_block() {
        let extent = [40u64, 30];
        for blocks in [Blocks::Shape(vec![40, 7]), Blocks::Shape(vec![16, 16])] {
            let c = chain(Codec::Zstd, blocks);
            for noise in [false, true] {
                let raw = floats(1200, noise);
                let (stored, flags) = c.encode_chunk(&raw, &extent).unwrap();
                let (crc, fault) = c.stored_crc(0, &stored, flags, &extent);
                assert_eq!(crc, crc32fast::hash(&stored));
                assert!(fault.is_none());
                if noise {
                    continue; // stored raw: no blocks to find
                }
                let table = c
                    .block_table(
                        0,
                        &stored,
                        &c.block_grid(&extent).unwrap(),
                        stored.len() as u64,
                    )
                    .unwrap();
                let mut bad = stored.clone();
                let last = table.last().unwrap();
                bad[last.start as usize + 1] ^= 4;
                let (crc, fault) = c.stored_crc(0, &bad, flags, &extent);
                assert_eq!(crc, crc32fast::hash(&bad));
                let want = format!("block {}: crc32", table.len() - 1);
                assert!(fault.unwrap().to_string().contains(&want));
                // The first block's end pointed past the payload.
                let mut bad = stored.clone();
                bad[7] = 0x40;
                let (crc, fault) = c.stored_crc(0, &bad, flags, &extent);
                assert_eq!(crc, crc32fast::hash(&bad));
                assert!(fault.unwrap().to_string().contains("block 0 ends at"));
                // Decoding after the check gives the raw bytes.
                let mut back = vec![0u8; raw.len()];
                c.decode_checked_chunk_prefix(0, &stored, flags, &extent, &mut back)
                    .unwrap();
                assert_eq!(back, raw);
            }
        }
    }

    // Less room than the raw bytes is refused, not written past.
    #[test]
    fn encode_into_refuses_less_room_than_raw() {
        let c = chain(Codec::Lz4, Blocks::Shape(vec![40, 10]));
        let raw = floats(1200, false);
        let mut out = vec![0u8; raw.len() - 1];
        assert!(c.encode_chunk_into(&raw, &[40, 30], &mut out).is_err());
    }
}
