//! The codec layer: the chunked layout's filters and codecs (doc/chunked.md), one file each
//! behind one trait, and the format logic of a chunked section (config, grid, index, blocks,
//! statistics), without I/O.
//!
//! A chunked data section splits the array into n-d chunks, each cut into blocks that are
//! filtered and compressed alone, behind an index that a reader finds with one read after the
//! header. So a reader decodes only what a box touches (one element: one block), writers
//! append chunks and commit them with the header's one `pwrite`, and a remote reader fetches
//! header, config, index and the touched blocks.
//!
//! - [`table`]: the one table of codecs, filters and storage names ([`Codec`], [`Filter`],
//!   [`Shuffle`]): ids, names, levels, default block sizes, element types taken;
//! - [`traits`]: [`ByteFilter`] (a filter) and [`BlockCodec`] (a codec), each implemented by
//!   one file: [`shuffle`], [`bitshuffle`], [`delta`], [`bytedelta`], [`bitround`]; [`none`],
//!   [`lz4`], [`zstd`], [`pco`], [`huffman`];
//! - [`pipeline`]: one block through the filters and the codec ([`Pipeline`]); [`split`]: the
//!   codec over a block's byte streams, each alone (config features bit 1);
//! - [`config`]: the section's config in either layout version ([`Config`], [`Blocks`]);
//! - [`grid`]: which chunk holds which elements ([`Grid`]); [`blocks`]: which block of a chunk
//!   holds which elements ([`BlockGrid`]);
//! - [`index`]: the chunk entries ([`Entry`], [`Index`]); [`stats`]: per-chunk statistics;
//! - [`chain`]: a chunk's block table and blocks ([`Chain`]); [`map`]: the validated metadata
//!   of a section, sans I/O ([`ChunkMap`]);
//! - [`encode`](mod@encode): a whole array to a section ([`encode()`]); [`writer`]: the
//!   appending writer and its commit order ([`ChunkWriter`]).
//!
//! Reading goes through [`crate::section::Section`], which drives [`ChunkMap`] over any
//! [`ReadAt`] source.
//!
//! ```
//! use rawarray_serde::codec::{self, Codec, Shuffle};
//! use rawarray_serde::section::Section;
//! use rawarray_serde::{ElType, Header, WriteOptions};
//! let header = Header::new(ElType::Float, 4, vec![100, 30]).unwrap();
//! let raw: Vec<u8> = (0..3000u32).flat_map(|i| (i as f32).sin().to_le_bytes()).collect();
//! let opts = WriteOptions::new().codec(Codec::Zstd).shuffle(Shuffle::Byte).chunks(vec![100, 8]);
//! let (chunked, section) = codec::encode(&header, &raw, &opts).unwrap();
//! assert!(chunked.flags.is_chunked() && chunked.size == section.len() as u64);
//! // The whole file: header then section.
//! let mut file = chunked.encode();
//! file.extend_from_slice(&section);
//! assert_eq!(Section::open(&chunked, &file[..]).unwrap().read_all().unwrap(), raw);
//! // One element: one chunk, one block.
//! let s = Section::open(&chunked, &file[..]).unwrap();
//! let mut one = [0u8; 4];
//! s.read_box(&[7..8, 20..21], &mut one).unwrap();
//! assert_eq!(one, raw[(7 + 20 * 100) * 4..][..4]);
//! assert_eq!(s.stats().blocks_decoded, 1);
//! ```

pub mod bitround;
pub mod bitshuffle;
pub mod blocks;
pub mod bytedelta;
pub mod chain;
pub mod config;
pub mod delta;
pub mod encode;
pub mod grid;
pub mod huffman;
pub mod index;
pub mod lz4;
pub mod map;
pub mod none;
pub mod pco;
pub mod pipeline;
pub mod shuffle;
pub mod split;
pub mod stats;
pub mod stream;
pub mod table;
pub mod traits;
pub mod writer;
pub mod zstd;

mod words;

pub use blocks::BlockGrid;
pub use chain::Chain;
pub use config::{Blocks, Config};
pub use encode::{encode, encode_streamed, encode_with, section_head_len};
pub use grid::Grid;
pub use index::{Entry, Index, ENTRY_FULL, ENTRY_RAW};
pub use map::{ChunkMap, PendingIndex};
pub use pipeline::Pipeline;
pub use table::{Codec, Filter, Shuffle};
pub use traits::{BlockCodec, ByteFilter, Elements};
pub use writer::{ChunkWriter, Reclaimed};

/// The write options of the chunked layout: [`WriteOptions`](crate::WriteOptions), which
/// carry every storage kind now.
#[deprecated(note = "use rawarray_serde::WriteOptions (one options value for every writer)")]
#[doc(hidden)]
pub type ChunkOptions = crate::options::WriteOptions;

/// The section reader: [`Section`](crate::section::Section), which reads every storage kind.
#[deprecated(note = "use rawarray_serde::section::Section")]
#[doc(hidden)]
pub type SectionReader<S> = crate::section::Section<S>;

/// The sans-IO metadata of a chunked section: [`ChunkMap`].
#[deprecated(note = "use rawarray_serde::codec::ChunkMap")]
#[doc(hidden)]
pub type Layout = ChunkMap;

/// The positioned-read trait, now [`crate::io::ReadAt`].
#[doc(hidden)]
pub use crate::io::ReadAt;

/// What a section has read, now [`crate::section::SectionStats`].
#[doc(hidden)]
pub use crate::section::SectionStats;

/// The default chunk shape, now [`crate::options::default_chunks`].
#[doc(hidden)]
pub use crate::options::default_chunks;

/// The whole chunked section of `source` decoded.
#[deprecated(note = "use Section::open(header, source)?.read_all()")]
#[doc(hidden)]
pub fn decode_all<S: crate::io::ReadAt>(
    header: &crate::Header,
    source: S,
) -> crate::Result<Vec<u8>> {
    crate::section::Section::open(header, source)?.read_all()
}

/// Decodes a box of the chunked file `source` into `out`.
#[deprecated(note = "use Section::open(header, source)?.read_box(ranges, out)")]
#[doc(hidden)]
pub fn decode_subset<S: crate::io::ReadAt>(
    header: &crate::Header,
    source: S,
    ranges: &[std::ops::Range<u64>],
    out: &mut [u8],
) -> crate::Result<()> {
    crate::section::Section::open(header, source)?.read_box(ranges, out)
}
