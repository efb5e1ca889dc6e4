//! The chain that turns a chunk's raw bytes into its stored bytes and back: blocks, each
//! filtered then compressed alone, behind a block table.
//!
//! A chunk's stored bytes (unless stored raw) are a block table of `nb = ceil(raw / block
//! bytes)` entries of 12 bytes, `end u64` (the end of the block's payload, counted from the
//! first byte after the table) and `crc32 u32` (of the block's payload), then the payloads.
//! Block `b` holds raw bytes `b * block_bytes ..` (the last one may be shorter, always whole
//! elements), and decodes alone: reading one element decodes one block.
//!
//! ```
//! use rawarray_serde::codec::{Chain, Codec, Shuffle};
//! let chain = Chain::new(Shuffle::Byte, Codec::Zstd, 3, 4, 4096).unwrap();
//! let raw: Vec<u8> = (0..10_000u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
//! let (stored, flags) = chain.encode_chunk(&raw).unwrap();
//! assert!(stored.len() < raw.len() / 2);
//! let mut back = vec![0u8; raw.len()];
//! chain.decode_chunk(0, &stored, flags, &mut back).unwrap();
//! assert_eq!(back, raw);
//! ```

use super::{BlockCodec, Codec, Filter, Shuffle, BLOCK_ENTRY_LEN, ENTRY_RAW};
use crate::error::{ErrorKind, Result};
use crate::header::le_u64;

/// A filter and a codec with their parameters: what a config says about each block.
#[derive(Clone, Copy)]
pub struct Chain {
    shuffle: Shuffle,
    codec: Codec,
    level: i32,
    elbyte: usize,
    block_bytes: usize,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field("shuffle", &self.shuffle)
            .field("codec", &self.codec)
            .field("level", &self.level)
            .field("elbyte", &self.elbyte)
            .field("block_bytes", &self.block_bytes)
            .finish()
    }
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
    /// A chain; `block_bytes` must be a positive multiple of `elbyte` that fits in memory.
    pub fn new(
        shuffle: Shuffle,
        codec: Codec,
        level: i32,
        elbyte: u64,
        block_bytes: u64,
    ) -> Result<Chain> {
        let eb = crate::data::to_usize(elbyte)?;
        let bb = crate::data::to_usize(block_bytes)?;
        if eb == 0 || bb == 0 || bb % eb != 0 {
            return Err(super::config::bad(
                "block bytes",
                format!("a positive multiple of elbyte {elbyte}"),
                block_bytes,
            ));
        }
        Ok(Chain {
            shuffle,
            codec,
            level,
            elbyte: eb,
            block_bytes: bb,
        })
    }

    /// The chain a config describes.
    pub fn from_config(config: &super::Config, elbyte: u64) -> Result<Chain> {
        Chain::new(
            config.shuffle,
            config.codec,
            config.level,
            elbyte,
            config.block_bytes,
        )
    }

    /// The filter.
    pub fn shuffle(&self) -> Shuffle {
        self.shuffle
    }

    /// The codec.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// Raw bytes per block.
    pub fn block_bytes(&self) -> u64 {
        self.block_bytes as u64
    }

    fn filter(&self) -> &'static dyn Filter {
        self.shuffle.filter()
    }

    fn block_codec(&self) -> &'static dyn BlockCodec {
        self.codec.block_codec()
    }

    /// Blocks in a chunk of `raw_len` bytes.
    pub fn block_count(&self, raw_len: u64) -> u64 {
        raw_len.div_ceil(self.block_bytes as u64)
    }

    /// Raw byte range of block `b` in a chunk of `raw_len` bytes.
    pub fn block_range(&self, raw_len: u64, b: u64) -> std::ops::Range<u64> {
        let bb = self.block_bytes as u64;
        b * bb..((b + 1) * bb).min(raw_len)
    }

    /// The stored bytes of one chunk and its entry flags ([`ENTRY_RAW`] when the chain does
    /// not shrink it, or the codec is `none`).
    pub fn encode_chunk(&self, raw: &[u8]) -> Result<(Vec<u8>, u32)> {
        if self.codec == Codec::None {
            return Ok((raw.to_vec(), ENTRY_RAW));
        }
        let nb = self.block_count(raw.len() as u64) as usize;
        let table = nb * BLOCK_ENTRY_LEN as usize;
        let mut out = vec![0u8; table];
        let mut filtered = vec![0u8; self.block_bytes.min(raw.len())];
        for (b, block) in raw.chunks(self.block_bytes).enumerate() {
            let tmp = &mut filtered[..block.len()];
            self.filter().encode(block, self.elbyte, tmp);
            let start = out.len();
            self.block_codec().compress(tmp, self.level, &mut out)?;
            if out.len() - table >= raw.len() {
                return Ok((raw.to_vec(), ENTRY_RAW));
            }
            let crc = crc32fast::hash(&out[start..]);
            let end = (out.len() - table) as u64;
            let e = &mut out[b * 12..b * 12 + 12];
            e[..8].copy_from_slice(&end.to_le_bytes());
            e[8..].copy_from_slice(&crc.to_le_bytes());
        }
        if out.len() >= raw.len() {
            return Ok((raw.to_vec(), ENTRY_RAW));
        }
        Ok((out, 0))
    }

    /// The block table at the start of chunk `chunk`'s stored bytes (`stored_len` in all),
    /// checked: ends never decrease, the last one ends the stored bytes, and each block's
    /// claim fits what its codec can expand to.
    pub fn block_table(
        &self,
        chunk: u64,
        table: &[u8],
        raw_len: u64,
        stored_len: u64,
    ) -> Result<Vec<BlockRef>> {
        let nb = self.block_count(raw_len);
        let tlen = nb.saturating_mul(BLOCK_ENTRY_LEN);
        // The table must be in hand before `nb` sizes anything: a hostile count is refused here.
        if (table.len() as u64) < tlen || stored_len < tlen {
            return Err(corrupt(
                chunk,
                format!(
                    "block table of {nb} blocks needs {tlen} bytes, found {}",
                    table.len().min(stored_len as usize)
                ),
            ));
        }
        let payload = stored_len - tlen;
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
            let r = self.block_range(raw_len, b);
            let claim = r.end - r.start;
            let len = end - prev;
            if claim
                > len
                    .saturating_mul(self.block_codec().max_ratio())
                    .saturating_add(64)
            {
                return Err(corrupt(
                    chunk,
                    format!(
                        "block {b} of {len} stored bytes cannot hold {claim} raw bytes ({})",
                        self.codec.name()
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
        let crc = crc32fast::hash(stored);
        if crc != r.crc {
            return Err(corrupt(
                chunk,
                format!("block {b}: crc32 {crc:#010x}, index says {:#010x}", r.crc),
            ));
        }
        self.decode_checked_block(chunk, b, stored, out)
    }

    /// [`Chain::decode_block`] once the payload's bytes are known good (a whole chunk whose
    /// entry CRC matched).
    fn decode_checked_block(
        &self,
        chunk: u64,
        b: u64,
        stored: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        if self.shuffle == Shuffle::None || out.len() <= self.elbyte {
            return self
                .block_codec()
                .decompress(stored, out)
                .map_err(|e| corrupt(chunk, format!("block {b}: {e}")));
        }
        // The codec's output before the filter is undone: a buffer per thread, reused, since
        // a whole read decodes thousands of blocks.
        SCRATCH.with(|scratch| {
            let mut tmp = scratch.borrow_mut();
            if tmp.len() < out.len() {
                tmp.resize(out.len(), 0);
            }
            let tmp = &mut tmp[..out.len()];
            self.block_codec()
                .decompress(stored, tmp)
                .map_err(|e| corrupt(chunk, format!("block {b}: {e}")))?;
            self.filter().decode(tmp, self.elbyte, out);
            Ok(())
        })
    }

    /// Decodes all of chunk `chunk` (its stored bytes and entry flags) into `out` (exactly its
    /// raw length). The caller has checked the entry's CRC.
    pub fn decode_chunk(
        &self,
        chunk: u64,
        stored: &[u8],
        flags: u32,
        out: &mut [u8],
    ) -> Result<()> {
        self.decode_chunk_prefix(chunk, stored, flags, out.len() as u64, out)
    }

    /// Decodes the first `out.len()` raw bytes of chunk `chunk`, whose stored bytes decode to
    /// `raw_len` (more, for a chunk stored at its full extent, [`ENTRY_FULL`](super::ENTRY_FULL)):
    /// only the blocks that hold them are decoded, and nothing of `raw_len` is allocated. The
    /// caller has checked the entry's CRC.
    pub fn decode_chunk_prefix(
        &self,
        chunk: u64,
        stored: &[u8],
        flags: u32,
        raw_len: u64,
        out: &mut [u8],
    ) -> Result<()> {
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
        let blocks = self.block_table(chunk, stored, raw_len, stored.len() as u64)?;
        for (b, r) in blocks.iter().enumerate() {
            let range = self.block_range(raw_len, b as u64);
            if range.start >= want {
                break;
            }
            let payload = &stored[r.start as usize..(r.start + r.len) as usize];
            if range.end <= want {
                self.decode_checked_block(
                    chunk,
                    b as u64,
                    payload,
                    &mut out[range.start as usize..range.end as usize],
                )?;
            } else {
                // The block the prefix ends in: decoded whole (a block decodes alone), its
                // head kept.
                let mut whole = vec![0u8; (range.end - range.start) as usize];
                self.decode_checked_block(chunk, b as u64, payload, &mut whole)?;
                out[range.start as usize..]
                    .copy_from_slice(&whole[..(want - range.start) as usize]);
            }
        }
        Ok(())
    }
}

thread_local! {
    /// [`Chain::decode_block`]'s codec output, per thread.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

pub(crate) fn corrupt(chunk: u64, what: String) -> crate::Error {
    ErrorKind::ChunkCorrupt { chunk, what }.into()
}
