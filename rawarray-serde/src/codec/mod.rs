//! The codec layer: the chunked compressed layout (flag bit 2) and its filters and codecs.
//!
//! A chunked data section splits the array into n-d chunks, each split into blocks that are
//! filtered (byte or bit shuffle) and compressed (lz4, zstd) alone, behind an index that a
//! reader finds with one read after the header. So a reader decodes only what a subset
//! touches (one element: one block), writers append chunks and commit them with the header's
//! one `pwrite`, and a remote reader fetches header, config, index and the touched chunks.
//!
//! The data section (offsets relative to its first byte) is:
//!
//! ```text
//! [config][index segment 0][chunk payloads ... later index segments ...]
//! ```
//!
//! - [`config`]: magic `RACHUNK1`, filter, codec, level, block bytes, chunk shape, segment 0's
//!   capacity and the 64 index segment offsets ([`Config`]);
//! - [`index`]: 24-byte entries `(offset, stored length, crc32, flags)` per chunk ([`Entry`],
//!   [`Index`]), validated against the section before anything is read through them;
//! - [`grid`]: which chunk holds which elements ([`Grid`]), column-major chunk numbers;
//! - [`chain`]: a chunk's block table and blocks, filter then codec ([`Chain`]);
//! - the filters [`shuffle`], [`bitshuffle`] and the codecs [`lz4`], [`zstd`] (and [`none`]),
//!   one file each behind the [`Filter`] and [`BlockCodec`] traits: a new codec touches its file
//!   and one arm of [`Codec`];
//! - [`section`]: the section decoder over any [`ReadAt`] source ([`SectionReader`],
//!   [`decode_all`], [`decode_subset`]), and its sans-IO core ([`Layout`]) for readers that do
//!   their own I/O (object storage: fetch [`Layout::config_range`], then
//!   [`index::segment_reads`], then [`Layout::chunk_range`] of the touched chunks);
//! - [`encode`](mod@encode): the encoder ([`encode()`], [`ChunkOptions`]); [`writer`]: the appending
//!   writer's primitives and the commit order ([`ChunkWriter`]).
//!
//! The header keeps the logical eltype, elbyte and dims; `size` is the byte length of the
//! chunked section; decoded bytes are in the file's byte order (flag bit 0).
//!
//! ```
//! use rawarray_serde::codec::{self, ChunkOptions, Codec, Shuffle};
//! use rawarray_serde::{ElType, Header};
//! let header = Header::new(ElType::Float, 4, vec![100, 30]).unwrap();
//! let raw: Vec<u8> = (0..3000u32).flat_map(|i| (i as f32).sin().to_le_bytes()).collect();
//! let opts = ChunkOptions::new().codec(Codec::Zstd).shuffle(Shuffle::Byte).chunks(vec![100, 8]);
//! let (chunked, section) = codec::encode(&header, &raw, &opts).unwrap();
//! assert!(chunked.flags.is_chunked() && chunked.size == section.len() as u64);
//! // The whole file: header then section.
//! let mut file = chunked.encode();
//! file.extend_from_slice(&section);
//! assert_eq!(codec::decode_all(&chunked, &file[..]).unwrap(), raw);
//! // One element: one chunk, one block.
//! let mut one = [0u8; 4];
//! codec::decode_subset(&chunked, &file[..], &[7..8, 20..21], &mut one).unwrap();
//! assert_eq!(one, raw[(7 + 20 * 100) * 4..][..4]);
//! ```

pub mod bitshuffle;
pub mod chain;
pub mod config;
pub mod encode;
pub mod grid;
pub mod index;
pub mod lz4;
pub mod none;
pub mod section;
pub mod shuffle;
pub mod writer;
pub mod zstd;

pub use chain::Chain;
pub use config::Config;
pub use encode::{default_chunks, encode, ChunkOptions};
pub use grid::Grid;
pub use index::{Entry, Index};
pub use section::{
    decode_all, decode_subset, Layout, PendingIndex, ReadAt, SectionReader, SectionStats,
};
pub use writer::{ChunkWriter, Reclaimed};

use crate::error::{ErrorKind, Result};

/// Entry flag bit 0: the chunk is stored raw (its raw bytes, no block table).
pub const ENTRY_RAW: u32 = 1;

/// Entry flag bit 1: the chunk is stored at its full extent along the last dim
/// ([`Grid::full_raw_len`]), even where the dims clip it; readers use the prefix the dims give
/// it. A record file's last chunk is stored so while it fills: the records a flush adds to it
/// go into a new version of it, which readers of the old dims read a prefix of.
pub const ENTRY_FULL: u32 = 2;

/// Bytes of one block table entry: `end u64, crc32 u32`.
pub const BLOCK_ENTRY_LEN: u64 = 12;

/// Bytes of the block table of a chunk of `raw_len` bytes in blocks of `block_bytes`, or
/// `None` past `u64` (a hostile config: huge chunks in tiny blocks).
///
/// ```
/// use rawarray_serde::codec::block_table_len;
/// assert_eq!(block_table_len(100, 64), Some(24));
/// assert_eq!(block_table_len(1 << 62, 1), None);
/// ```
pub fn block_table_len(raw_len: u64, block_bytes: u64) -> Option<u64> {
    raw_len
        .div_ceil(block_bytes.max(1))
        .checked_mul(BLOCK_ENTRY_LEN)
}

/// A filter: bytes to bytes of the same length, by element width.
///
/// ```
/// use rawarray_serde::codec::{Filter, Shuffle};
/// let f = Shuffle::Byte.filter();
/// let mut out = [0u8; 4];
/// f.encode(&[1, 2, 3, 4], 2, &mut out);
/// assert_eq!(out, [1, 3, 2, 4]);
/// ```
pub trait Filter: Send + Sync {
    /// The id stored in the config.
    fn id(&self) -> u32;
    /// Filters `src` (elements of `elbyte` bytes) into `dst`, the same length.
    fn encode(&self, src: &[u8], elbyte: usize, dst: &mut [u8]);
    /// Undoes [`Filter::encode`].
    fn decode(&self, src: &[u8], elbyte: usize, dst: &mut [u8]);
}

/// A codec: one block's bytes to its stored bytes and back, with a known decoded size.
///
/// ```
/// use rawarray_serde::codec::{BlockCodec, Codec};
/// let c = Codec::Lz4.block_codec();
/// let mut packed = Vec::new();
/// c.compress(&[0u8; 4096], 0, &mut packed).unwrap();
/// let mut back = vec![1u8; 4096];
/// c.decompress(&packed, &mut back).unwrap();
/// assert!(back.iter().all(|&b| b == 0));
/// ```
pub trait BlockCodec: Send + Sync {
    /// The id stored in the config.
    fn id(&self) -> u32;
    /// The most raw bytes one stored byte can decode to (a block claiming more is refused).
    fn max_ratio(&self) -> u64;
    /// Appends the compressed form of `src` to `out`.
    fn compress(&self, src: &[u8], level: i32, out: &mut Vec<u8>) -> Result<()>;
    /// Decompresses `src` into exactly `dst.len()` bytes; anything else is an error (in words).
    fn decompress(&self, src: &[u8], dst: &mut [u8]) -> std::result::Result<(), String>;
}

/// The filter applied to each block before its codec.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Shuffle {
    /// No filter (id 0).
    None,
    /// Byte shuffle by elbyte (id 1): a record is shuffled as a whole.
    #[default]
    Byte,
    /// Bit shuffle by elbyte (id 2).
    Bit,
}

impl Shuffle {
    /// The config's id.
    pub fn id(self) -> u32 {
        match self {
            Shuffle::None => 0,
            Shuffle::Byte => 1,
            Shuffle::Bit => 2,
        }
    }

    /// The filter of a config id, or an error naming it.
    pub fn from_id(id: u32) -> Result<Shuffle> {
        match id {
            0 => Ok(Shuffle::None),
            1 => Ok(Shuffle::Byte),
            2 => Ok(Shuffle::Bit),
            _ => Err(ErrorKind::UnknownCodecId {
                what: "filter",
                id: u64::from(id),
                known: "0 none, 1 byte shuffle, 2 bit shuffle",
            }
            .into()),
        }
    }

    /// Its name: `none`, `byte`, `bit`.
    pub fn name(self) -> &'static str {
        match self {
            Shuffle::None => "none",
            Shuffle::Byte => "byte",
            Shuffle::Bit => "bit",
        }
    }

    /// The filter's implementation.
    pub fn filter(self) -> &'static dyn Filter {
        match self {
            Shuffle::None => &none::NoFilter,
            Shuffle::Byte => &shuffle::ByteShuffle,
            Shuffle::Bit => &bitshuffle::BitShuffle,
        }
    }
}

/// The codec of each block. Choosing one in [`WriteOptions`](crate::WriteOptions) selects
/// the chunked layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Codec {
    /// Stored raw (id 0).
    None,
    /// Raw LZ4 blocks (id 1).
    Lz4,
    /// zstd frames (id 2).
    #[default]
    Zstd,
}

impl Codec {
    /// The config's id.
    pub fn id(self) -> u32 {
        match self {
            Codec::None => 0,
            Codec::Lz4 => 1,
            Codec::Zstd => 2,
        }
    }

    /// The codec of a config id, or an error naming it.
    pub fn from_id(id: u32) -> Result<Codec> {
        match id {
            0 => Ok(Codec::None),
            1 => Ok(Codec::Lz4),
            2 => Ok(Codec::Zstd),
            _ => Err(ErrorKind::UnknownCodecId {
                what: "codec",
                id: u64::from(id),
                known: "0 none, 1 lz4, 2 zstd",
            }
            .into()),
        }
    }

    /// Its name: `none`, `lz4`, `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }

    /// The codec's implementation.
    pub fn block_codec(self) -> &'static dyn BlockCodec {
        match self {
            Codec::None => &none::NoCodec,
            Codec::Lz4 => &lz4::Lz4,
            Codec::Zstd => &zstd::Zstd,
        }
    }
}
