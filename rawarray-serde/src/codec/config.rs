//! The chunked section's config: the first bytes of the data section.
//!
//! | offset      | bytes | field |
//! |-------------|-------|-------|
//! | 0           | 8     | magic `RACHUNK1` |
//! | 8           | 4     | filter id (u32): 0 none, 1 byte shuffle, 2 bit shuffle |
//! | 12          | 4     | codec id (u32): 0 none, 1 lz4, 2 zstd |
//! | 16          | 4     | codec level (i32) |
//! | 20          | 4     | reserved, 0 |
//! | 24          | 8     | block bytes: raw bytes per block, a multiple of elbyte |
//! | 32          | 8     | S0: entries of index segment 0 |
//! | 40          | 8     | ndims, equal to the header's |
//! | 48          | 8 n   | chunk shape, same order as dims, each >= 1 |
//! | 48 + 8n     | 4     | CRC-32 (IEEE) of bytes `0 .. 48 + 8n` |
//! | 52 + 8n     | 4     | reserved, 0 |
//! | 56 + 8n     | 512   | 64 index segment offsets (u64, 0 = not allocated) |
//!
//! All little-endian. The segment table is outside the CRC: a writer that allocates a segment
//! fills in one 8-byte slot with one `pwrite`, and a torn config cannot happen.

use super::{Codec, Shuffle};
use crate::error::{ErrorKind, Result};
use crate::header::{le_u64, Header};

/// The config's magic.
pub const CONFIG_MAGIC: &[u8; 8] = b"RACHUNK1";

/// Number of index segment slots.
pub const SEGMENTS: usize = 64;

/// The largest block a config may ask for (or one element, if larger): a block's buffer is
/// allocated before it is decoded.
pub const MAX_BLOCK_BYTES: u64 = 1 << 30;

/// The decoded chunking config (see the module docs for its bytes).
///
/// ```
/// use rawarray_serde::codec::{Codec, Config, Shuffle};
/// use rawarray_serde::{ElType, Flags, Header};
/// let mut h = Header::new(ElType::Float, 4, vec![10, 10]).unwrap();
/// let c = Config { shuffle: Shuffle::Byte, codec: Codec::Zstd, level: 3, block_bytes: 64,
///                  chunk: vec![10, 5], s0: 2, segments: Config::first_segment(2) };
/// let bytes = c.encode();
/// assert_eq!(bytes.len(), Config::encoded_len(2));
/// h.flags = Flags::CHUNKED;
/// h.size = bytes.len() as u64 + 2 * 24;
/// assert_eq!(Config::decode(&h, &bytes).unwrap(), c);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The filter applied to each block before the codec.
    pub shuffle: Shuffle,
    /// The codec of each block.
    pub codec: Codec,
    /// The codec's level (zstd; kept but unused by lz4 and none).
    pub level: i32,
    /// Raw bytes per block inside a chunk (the last block of a chunk may be shorter).
    pub block_bytes: u64,
    /// The chunk shape, one entry per dim, each at least 1.
    pub chunk: Vec<u64>,
    /// Entries of index segment 0; segment `g >= 1` holds `s0 * 2^(g-1)`.
    pub s0: u64,
    /// Offsets of the index segments in the data section, 0 where not allocated.
    pub segments: [u64; SEGMENTS],
}

impl Config {
    /// Bytes of the config for `ndims` dims.
    pub fn encoded_len(ndims: usize) -> usize {
        56 + 8 * ndims + 8 * SEGMENTS
    }

    /// A segment table with only segment 0, placed right after the config.
    pub fn first_segment(ndims: usize) -> [u64; SEGMENTS] {
        let mut t = [0u64; SEGMENTS];
        t[0] = Config::encoded_len(ndims) as u64;
        t
    }

    /// Offset in the config of segment slot `g`: a writer updates one slot in place.
    pub fn segment_slot_offset(ndims: usize, g: usize) -> u64 {
        (56 + 8 * ndims + 8 * g) as u64
    }

    /// The config's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Config::encoded_len(self.chunk.len()));
        out.extend_from_slice(CONFIG_MAGIC);
        out.extend_from_slice(&self.shuffle.id().to_le_bytes());
        out.extend_from_slice(&self.codec.id().to_le_bytes());
        out.extend_from_slice(&self.level.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        for w in [self.block_bytes, self.s0, self.chunk.len() as u64]
            .into_iter()
            .chain(self.chunk.iter().copied())
        {
            out.extend_from_slice(&w.to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        for s in self.segments {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out
    }

    /// Decodes and validates the config at the start of `bytes` for a chunked `header`.
    ///
    /// Checks, each an error naming the field: the header's size holds the config, the magic,
    /// ndims, the CRC, known filter and codec ids, reserved words 0, chunk dims >= 1, a block
    /// size that is a positive multiple of elbyte and at most [`MAX_BLOCK_BYTES`] (or one
    /// element), and segment 0 placed right after the config.
    pub fn decode(header: &Header, bytes: &[u8]) -> Result<Config> {
        let n = header.dims.len();
        let len = Config::encoded_len(n);
        if header.size < len as u64 {
            return Err(bad(
                "size",
                format!("at least {len} bytes (the config)"),
                header.size,
            ));
        }
        let Some(b) = bytes.get(..len) else {
            return Err(bad("config", format!("{len} bytes"), bytes.len()));
        };
        if &b[..8] != CONFIG_MAGIC {
            return Err(bad(
                "config magic",
                "RACHUNK1",
                format!("{:?}", String::from_utf8_lossy(&b[..8])),
            ));
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| le_u64(&b[i..i + 8]);
        if u64_at(40) != n as u64 {
            return Err(bad(
                "config ndims",
                format!("{n} (the header's)"),
                u64_at(40),
            ));
        }
        let crc = crc32fast::hash(&b[..48 + 8 * n]);
        if u32_at(48 + 8 * n) != crc {
            return Err(bad(
                "config crc",
                format!("{crc:#010x}"),
                format!("{:#010x}", u32_at(48 + 8 * n)),
            ));
        }
        if u32_at(20) != 0 || u32_at(52 + 8 * n) != 0 {
            return Err(bad(
                "config reserved words",
                "0",
                format!("{} and {}", u32_at(20), u32_at(52 + 8 * n)),
            ));
        }
        let shuffle = Shuffle::from_id(u32_at(8))?;
        let codec = Codec::from_id(u32_at(12))?;
        let level = i32::from_le_bytes(b[16..20].try_into().expect("4 bytes"));
        let block_bytes = u64_at(24);
        let elbyte = header.elbyte;
        if block_bytes == 0
            || block_bytes % elbyte != 0
            || block_bytes > MAX_BLOCK_BYTES.max(elbyte)
        {
            return Err(bad(
                "config block bytes",
                format!(
                    "a positive multiple of elbyte {elbyte}, at most {}",
                    MAX_BLOCK_BYTES.max(elbyte)
                ),
                block_bytes,
            ));
        }
        let chunk: Vec<u64> = (0..n).map(|i| u64_at(48 + 8 * i)).collect();
        if let Some(i) = chunk.iter().position(|&c| c == 0) {
            return Err(bad(
                &format!("config chunk shape, dim {i}"),
                "at least 1",
                0,
            ));
        }
        let mut segments = [0u64; SEGMENTS];
        for (g, s) in segments.iter_mut().enumerate() {
            *s = u64_at(56 + 8 * n + 8 * g);
        }
        if segments[0] != len as u64 {
            return Err(bad(
                "index segment 0 offset",
                format!("{len} (right after the config)"),
                segments[0],
            ));
        }
        Ok(Config {
            shuffle,
            codec,
            level,
            block_bytes,
            chunk,
            s0: u64_at(32),
            segments,
        })
    }
}

/// A [`ErrorKind::ChunkLayout`] error.
pub(crate) fn bad(
    field: &str,
    expected: impl std::fmt::Display,
    found: impl std::fmt::Display,
) -> crate::Error {
    ErrorKind::ChunkLayout {
        field: field.to_string(),
        expected: expected.to_string(),
        found: found.to_string(),
    }
    .into()
}
