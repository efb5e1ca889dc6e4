//! The encoder: a whole array's raw bytes to a chunked data section, chunks compressed in
//! parallel.
//!
//! The section is written as `[config][index segment 0 of S0 = chunk count entries][chunks in
//! chunk order]`: a fixed-size array has one index segment and no gaps.
//!
//! ```
//! use rawarray_serde::codec::{self, ChunkOptions, Codec, Shuffle};
//! use rawarray_serde::{ElType, Header};
//! let header = Header::new(ElType::Float, 8, vec![1000]).unwrap();
//! let raw: Vec<u8> = (0..1000).flat_map(|i| f64::from(i).to_le_bytes()).collect();
//! let opts = ChunkOptions::new().codec(Codec::Lz4).shuffle(Shuffle::Bit).chunks(vec![300]).threads(2);
//! let (h, section) = codec::encode(&header, &raw, &opts).unwrap();
//! assert!(h.size < raw.len() as u64);
//! let mut file = h.encode();
//! file.extend_from_slice(&section);
//! assert_eq!(codec::decode_all(&h, &file[..]).unwrap(), raw);
//! ```

use rayon::prelude::*;

use super::config::{bad, Config};
use super::grid::{runs, Grid, Place};
use super::index::{Entry, ENTRY_LEN};
use super::section::in_pool;
use super::{Chain, Codec, Shuffle};
use crate::error::Result;
use crate::header::{Flags, Header};

/// Raw bytes per chunk the default chunk shape aims at.
pub const DEFAULT_CHUNK_BYTES: u64 = 1 << 20;

/// Raw bytes per block by default for zstd (rounded down to whole elements): a one-element
/// read decodes this much. Halving it cost zstd 4-5% of its ratio on the compression bench's
/// fields, past the 2% of Blosc2's that is the bar.
pub const DEFAULT_BLOCK_BYTES: u64 = 256 << 10;

/// Raw bytes per block by default for lz4 and no codec: Blosc2's blocks for 1 MiB chunks of
/// `f32` (its blockshape `(8, 64, 64)` of a `(64, 64, 64)` chunk). LZ4's ratio is within 0.5%
/// of 256 KiB's, and a plane or an element decodes half as much.
pub const DEFAULT_FAST_BLOCK_BYTES: u64 = 128 << 10;

/// The zstd level used when none is given.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

/// How to write a chunked section: chunk shape, filter, codec, level, block size, threads.
///
/// ```
/// use rawarray_serde::codec::{ChunkOptions, Codec, Shuffle};
/// let o = ChunkOptions::new().codec(Codec::Zstd).level(5).shuffle(Shuffle::Bit).chunks(vec![64, 64]);
/// assert_eq!((o.get_codec(), o.get_level(), o.get_shuffle()), (Codec::Zstd, 5, Shuffle::Bit));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChunkOptions {
    chunks: Option<Vec<u64>>,
    codec: Codec,
    level: Option<i32>,
    shuffle: Shuffle,
    block_bytes: Option<u64>,
    threads: usize,
}

impl Default for ChunkOptions {
    fn default() -> ChunkOptions {
        ChunkOptions::new()
    }
}

impl ChunkOptions {
    /// zstd level 3, byte shuffle, the default chunk shape ([`default_chunks`]), all cores.
    pub fn new() -> ChunkOptions {
        ChunkOptions {
            chunks: None,
            codec: Codec::Zstd,
            level: None,
            shuffle: Shuffle::Byte,
            block_bytes: None,
            threads: 0,
        }
    }

    /// The chunk shape, one entry per dim in the header's order (each >= 1; may exceed its dim).
    #[must_use]
    pub fn chunks(mut self, chunks: Vec<u64>) -> ChunkOptions {
        self.chunks = Some(chunks);
        self
    }

    /// The codec.
    #[must_use]
    pub fn codec(mut self, codec: Codec) -> ChunkOptions {
        self.codec = codec;
        self
    }

    /// The codec's level (zstd: `zstd::level_range()`; default 3).
    #[must_use]
    pub fn level(mut self, level: i32) -> ChunkOptions {
        self.level = Some(level);
        self
    }

    /// The filter.
    #[must_use]
    pub fn shuffle(mut self, shuffle: Shuffle) -> ChunkOptions {
        self.shuffle = shuffle;
        self
    }

    /// Raw bytes per block (rounded down to whole elements, at least one); by default
    /// 256 KiB for zstd, 128 KiB for lz4 and none.
    #[must_use]
    pub fn block_bytes(mut self, bytes: u64) -> ChunkOptions {
        self.block_bytes = Some(bytes);
        self
    }

    /// Threads compressing chunks (0: rayon's global pool, all cores).
    #[must_use]
    pub fn threads(mut self, threads: usize) -> ChunkOptions {
        self.threads = threads;
        self
    }

    /// The chunk shape asked for, if any.
    pub fn get_chunks(&self) -> Option<&[u64]> {
        self.chunks.as_deref()
    }

    /// The codec.
    pub fn get_codec(&self) -> Codec {
        self.codec
    }

    /// The level (the codec's default if not set).
    pub fn get_level(&self) -> i32 {
        self.level.unwrap_or(match self.codec {
            Codec::Zstd => DEFAULT_ZSTD_LEVEL,
            _ => 0,
        })
    }

    /// The filter.
    pub fn get_shuffle(&self) -> Shuffle {
        self.shuffle
    }

    /// The thread count (0: the global pool).
    pub fn get_threads(&self) -> usize {
        self.threads
    }

    /// The config these options give an array of `dims` x `elbyte`, with segment 0 holding
    /// `s0` entries. Errors name a bad chunk shape or level.
    pub fn config(&self, dims: &[u64], elbyte: u64, s0: u64) -> Result<Config> {
        let chunk = match &self.chunks {
            Some(c) => c.clone(),
            None => default_chunks(dims, elbyte),
        };
        Grid::new(dims, &chunk, elbyte)?;
        let level = self.get_level();
        if self.codec == Codec::Zstd && !super::zstd::level_range().contains(&level) {
            let r = super::zstd::level_range();
            return Err(bad(
                "zstd level",
                format!("{}..={}", r.start(), r.end()),
                level,
            ));
        }
        let bb = self.block_bytes.unwrap_or(match self.codec {
            Codec::Zstd => DEFAULT_BLOCK_BYTES,
            Codec::Lz4 | Codec::None => DEFAULT_FAST_BLOCK_BYTES,
        });
        let block_bytes = (bb / elbyte)
            .max(1)
            .min(super::config::MAX_BLOCK_BYTES / elbyte)
            .max(1)
            * elbyte;
        Ok(Config {
            shuffle: self.shuffle,
            codec: self.codec,
            level,
            block_bytes,
            chunk: chunk.clone(),
            s0,
            segments: Config::first_segment(chunk.len()),
        })
    }
}

/// The default chunk shape: about [`DEFAULT_CHUNK_BYTES`] of raw bytes, whole leading dims
/// first (so a chunk is one contiguous run of the array, and a record file's chunks are runs
/// of whole records), then as much of the next dim as fits, then 1.
///
/// ```
/// use rawarray_serde::codec::default_chunks;
/// assert_eq!(default_chunks(&[256, 256, 256], 4), [256, 256, 4]);
/// assert_eq!(default_chunks(&[10], 8), [10]);
/// ```
pub fn default_chunks(dims: &[u64], elbyte: u64) -> Vec<u64> {
    let mut left = (DEFAULT_CHUNK_BYTES / elbyte.max(1)).max(1);
    dims.iter()
        .map(|&d| {
            let c = d.max(1).min(left).max(1);
            left = (left / c).max(1);
            c
        })
        .collect()
}

/// Encodes a whole array: `raw` is its data section uncompressed (`header.data_len()` bytes, in
/// the byte order `header` says), `header` a plain (not compressed, not chunked) header.
/// Returns the chunked header (flag bit 2, `size` the section's length) and the section.
pub fn encode(header: &Header, raw: &[u8], opts: &ChunkOptions) -> Result<(Header, Vec<u8>)> {
    if header.flags.is_compressed() || header.flags.is_chunked() {
        return Err(crate::Error::unsupported(
            "encode takes a plain data section: the header says compressed or chunked",
        ));
    }
    if raw.len() as u64 != header.data_len() {
        return Err(bad(
            "raw data",
            format!("{} bytes (dims x elbyte)", header.data_len()),
            raw.len(),
        ));
    }
    let grid = Grid::new(
        &header.dims,
        &opts.get_chunks().map_or_else(
            || default_chunks(&header.dims, header.elbyte),
            <[u64]>::to_vec,
        ),
        header.elbyte,
    )?;
    let config = opts.config(&header.dims, header.elbyte, grid.count())?;
    let chain = Chain::from_config(&config, header.elbyte)?;
    let layout_runs = |n: u64| {
        let (o, s) = (grid.origin(n), grid.shape(n));
        runs(
            &s,
            header.elbyte,
            Place {
                dims: &header.dims,
                at: &o,
            },
            Place {
                dims: &s,
                at: &vec![0; s.len()],
            },
        )
    };
    let stored: Vec<(Vec<u8>, u32)> = in_pool(opts.threads, || {
        (0..grid.count())
            .into_par_iter()
            .map(|n| {
                let len = grid.raw_len(n) as usize;
                let mut buf = vec![0u8; len];
                for (s, d, l) in layout_runs(n) {
                    buf[d as usize..(d + l) as usize]
                        .copy_from_slice(&raw[s as usize..(s + l) as usize]);
                }
                chain.encode_chunk(&buf)
            })
            .collect::<Result<Vec<_>>>()
    })??;
    let config_len = Config::encoded_len(header.dims.len()) as u64;
    let index_len = grid.count() * ENTRY_LEN;
    let total: u64 =
        config_len + index_len + stored.iter().map(|(s, _)| s.len() as u64).sum::<u64>();
    let mut section = Vec::with_capacity(crate::data::to_usize(total)?);
    section.extend_from_slice(&config.encode());
    let mut at = config_len + index_len;
    for (s, flags) in &stored {
        let e = Entry {
            offset: at,
            len: s.len() as u64,
            crc: crc32fast::hash(s),
            flags: *flags,
        };
        section.extend_from_slice(&e.encode());
        at += s.len() as u64;
    }
    for (s, _) in &stored {
        section.extend_from_slice(s);
    }
    let mut h = header.clone();
    h.flags = h.flags.with(Flags::CHUNKED, true);
    h.size = section.len() as u64;
    Ok((h, section))
}
