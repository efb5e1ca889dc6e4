//! [`WriteOptions`]: the one value that says how every writer stores a data section — plain,
//! whole-section LZ4, or chunked with its chunk shape, filter pipeline, codec, level, block
//! shape, statistics and threads — and in which byte order. Every writer takes it
//! (`RawArray::write_file_with`, `DynArray`, `ArrayWriter`, `RecordOptions::storage`,
//! `RaggedWriter`, `ra compress`, the Python writers), and every chunked config a writer makes
//! comes from [`WriteOptions::chunk_config`], which checks each setting against the codec table
//! ([`crate::codec::table`]) and names the one that is wrong.
//!
//! ```
//! use rawarray_serde::codec::{Codec, Filter};
//! use rawarray_serde::section::Storage;
//! use rawarray_serde::WriteOptions;
//! let plain = WriteOptions::new();
//! assert_eq!(plain.storage(), Storage::Plain);
//! let zstd = WriteOptions::new().codec(Codec::Zstd).level(5).filters([Filter::Shuffle]).chunks(vec![64, 64]);
//! assert_eq!(zstd.storage(), Storage::Chunked);
//! // A meaningless setting is an error naming it, when a writer asks for the config.
//! let lz4 = WriteOptions::new().codec(Codec::Lz4).level(9);
//! let header = rawarray_serde::Header::new(rawarray_serde::ElType::Float, 4, vec![100]).unwrap();
//! assert!(lz4.chunk_config(&header, None).unwrap_err().to_string().contains("no levels"));
//! ```

use crate::codec::config::{
    Blocks, Config, DEFAULT_VERSION, MAX_BLOCK_BYTES, MAX_BLOCK_BYTES_V2, MAX_FILTERS,
};
use crate::codec::grid::Grid;
use crate::codec::stats::StatField;
use crate::codec::table::{Codec, Filter, Shuffle};
use crate::error::{Error, Result};
use crate::header::{Flags, Header};
use crate::layout::Layout;
use crate::section::Storage;

/// Raw bytes per chunk the default chunk shape aims at.
pub const DEFAULT_CHUNK_BYTES: u64 = 1 << 20;

/// The raw bytes of a chunk below which writers keep one stream a block by default
/// ([`WriteOptions::split`]).
pub const SPLIT_MIN_CHUNK_BYTES: u64 = 32 << 10;

/// The least bytes of each byte stream for which records (elements over 16 bytes) are split by
/// default: a chunk of at least `elbyte` times this many bytes ([`WriteOptions::split`]).
pub const SPLIT_MIN_STREAM_BYTES: u64 = 4 << 10;

/// The raw bytes a block of records (elements over 16 bytes) split in byte streams aims at
/// by default: the whole default chunk, and at most what a reader's block cache keeps.
pub const SPLIT_RECORD_BLOCK_BYTES: u64 = 4 << 20;

/// The most chunks a writer makes: an index beyond this would cost more than any array
/// justifies (24 to 32 bytes a chunk, allocated whole by an `ArrayWriter`).
pub const MAX_CHUNKS: u64 = 1 << 40;

/// How to write a data section (see the module docs). The default writes what every reader
/// reads: little-endian, plain.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct WriteOptions {
    big_endian: bool,
    lz4_whole: bool,
    /// Whether a chunked setting was given (it selects the chunked layout).
    chunked: bool,
    codec: Option<Codec>,
    level: Option<i32>,
    filters: Option<Vec<Filter>>,
    chunks: Option<Vec<u64>>,
    blocks: Option<Vec<u64>>,
    block_bytes: Option<u64>,
    statistics: Option<bool>,
    split: Option<bool>,
    stream_crcs: Option<bool>,
    version: Option<u32>,
    threads: usize,
}

impl WriteOptions {
    /// Little-endian, plain.
    pub fn new() -> WriteOptions {
        WriteOptions::default()
    }

    /// The chunked layout with its defaults: zstd level 3, byte shuffle, chunks of about 1 MiB,
    /// statistics, layout version 2.
    pub fn chunked() -> WriteOptions {
        WriteOptions {
            chunked: true,
            ..WriteOptions::default()
        }
    }

    /// The options of a storage kind by the name users give it: `plain`, `lz4-whole`, or a
    /// chunked codec's name (`zstd`, `lz4`, `none`, ...), or an error listing them.
    pub fn for_name(name: &str) -> Result<WriteOptions> {
        match name {
            "plain" => Ok(WriteOptions::new()),
            crate::codec::table::LZ4_WHOLE => Ok(WriteOptions::new().compress(true)),
            _ => Codec::parse(name)
                .map(|c| WriteOptions::new().codec(c))
                .map_err(|_| {
                    Error::unsupported(format!(
                        "codec {name:?}: choose plain, {}, or a chunked codec ({})",
                        crate::codec::table::LZ4_WHOLE,
                        Codec::all().map(Codec::name).collect::<Vec<_>>().join(", ")
                    ))
                }),
        }
    }

    /// Write the data big-endian (flag bit 0).
    #[must_use]
    pub fn big_endian(mut self, on: bool) -> WriteOptions {
        self.big_endian = on;
        self
    }

    /// Compress the data as one raw LZ4 block (flag bit 1, `lz4-whole`), as the C reference
    /// does. Cannot be combined with a chunked setting.
    #[must_use]
    pub fn compress(mut self, on: bool) -> WriteOptions {
        self.lz4_whole = on;
        self
    }

    /// Write the chunked layout (flag bit 2) with this codec: n-d chunks compressed block by
    /// block, read back one block at a time ([`crate::codec`]). Defaults: zstd level 3, byte
    /// shuffle, chunks of about 1 MiB. Cannot be combined with [`WriteOptions::compress`].
    ///
    /// ```
    /// use rawarray_serde::{codec::Codec, RawArray, WriteOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("a.ra");
    /// let a = RawArray::from_shape_vec(vec![100, 100], vec![1.5f32; 10_000]).unwrap();
    /// a.write_file_with(&path, &WriteOptions::new().codec(Codec::Zstd).chunks(vec![100, 10])).unwrap();
    /// assert!(std::fs::metadata(&path).unwrap().len() < 10_000);
    /// assert_eq!(RawArray::<f32>::read_file(&path).unwrap(), a);
    /// ```
    #[must_use]
    pub fn codec(mut self, codec: Codec) -> WriteOptions {
        self.chunked = true;
        self.codec = Some(codec);
        self
    }

    /// The codec's level (selects the chunked layout). Only codecs with levels take one
    /// (zstd -7 ..= 22, default 3); others refuse it when the config is made.
    #[must_use]
    pub fn level(mut self, level: i32) -> WriteOptions {
        self.chunked = true;
        self.level = Some(level);
        self
    }

    /// The filter pipeline, in the order filters are applied when writing (selects the
    /// chunked layout; default `[shuffle]`). Lossy filters (`bitround`) must come first.
    #[must_use]
    pub fn filters(mut self, filters: impl IntoIterator<Item = Filter>) -> WriteOptions {
        self.chunked = true;
        self.filters = Some(filters.into_iter().collect());
        self
    }

    /// The one-filter shorthand: no filter, a byte or a bit shuffle (selects the chunked
    /// layout).
    #[must_use]
    pub fn shuffle(self, shuffle: Shuffle) -> WriteOptions {
        self.filters(shuffle.filters())
    }

    /// The chunk shape, in the header's dim order (selects the chunked layout). Each at least
    /// 1; it may exceed its dim.
    #[must_use]
    pub fn chunks(mut self, chunks: Vec<u64>) -> WriteOptions {
        self.chunked = true;
        self.chunks = Some(chunks);
        self
    }

    /// The n-d block shape inside each chunk, in the header's dim order (selects the chunked
    /// layout; layout version 2). Each 1 ..= the chunk's, at most 16 MiB a block.
    #[must_use]
    pub fn blocks(mut self, blocks: Vec<u64>) -> WriteOptions {
        self.chunked = true;
        self.blocks = Some(blocks);
        self
    }

    /// Raw bytes a block aims at when no block shape is given (version 1: the block size,
    /// rounded down to whole elements). By default 128 KiB, and 256 KiB for zstd in one stream
    /// and pco ([`WriteOptions::split`]; doc/chunked.md 5.5).
    #[must_use]
    pub fn block_bytes(mut self, bytes: u64) -> WriteOptions {
        self.chunked = true;
        self.block_bytes = Some(bytes);
        self
    }

    /// Whether chunk entries carry statistics (min, max, NaN count) for queries to skip chunks
    /// (selects the chunked layout; default on, in layout version 2).
    #[must_use]
    pub fn statistics(mut self, on: bool) -> WriteOptions {
        self.chunked = true;
        self.statistics = Some(on);
        self
    }

    /// Whether each block is compressed as `elbyte` byte streams, each alone (layout version
    /// 2, doc/chunked.md 5.3; selects the chunked layout). By default on for zstd after a
    /// byte shuffle of elements of 2 to 16 bytes in chunks of at least 32 KiB
    /// ([`SPLIT_MIN_CHUNK_BYTES`]), with blocks of 128 KiB: each byte
    /// plane gets its own frame, and a plane of noise is stored as it is and read by a copy,
    /// as c-blosc2 does. Records of 17 to 256 bytes are split by default too, in chunks of at
    /// least `elbyte` x [`SPLIT_MIN_STREAM_BYTES`], with a block the whole chunk (up to
    /// [`SPLIT_RECORD_BLOCK_BYTES`], 4 MiB):
    /// a query of some of their fields then decodes only those fields' streams
    /// ([`Section::read_box_fields`](crate::section::Section::read_box_fields)).
    /// Readers older than this setting refuse its files, naming config
    /// features bit 1; `split(false)` writes version 2 files they read.
    ///
    /// ```
    /// use rawarray_serde::{ElType, Header, WriteOptions};
    /// let h = Header::new(ElType::Float, 4, vec![256, 256, 256]).unwrap();
    /// let split = WriteOptions::chunked().chunk_config(&h, None).unwrap();
    /// assert!(split.split);
    /// let one = WriteOptions::chunked().split(false).chunk_config(&h, None).unwrap();
    /// assert!(!one.split);
    /// ```
    #[must_use]
    pub fn split(mut self, on: bool) -> WriteOptions {
        self.chunked = true;
        self.split = Some(on);
        self
    }

    /// Whether each byte stream carries its own CRC-32 (layout version 2, config features bit
    /// 2, doc/chunked.md 5.3; only with [`WriteOptions::split`]). A read of some fields of
    /// records then reads and checks only their streams, instead of each block whole to check
    /// its CRC: the `GROUP BY` of two fields of the N-body records reads a fifth of the file.
    /// By default on for records (elements over 16 bytes) split in byte streams, and off
    /// otherwise (arrays are read whole, and readers older than this setting refuse its files,
    /// naming config features bit 2).
    ///
    /// ```
    /// use rawarray_serde::{ElType, Header, WriteOptions};
    /// let records = Header::new(ElType::User, 76, vec![1 << 20]).unwrap();
    /// assert!(WriteOptions::chunked().chunk_config(&records, None).unwrap().stream_crcs);
    /// let floats = Header::new(ElType::Float, 4, vec![256, 256, 256]).unwrap();
    /// assert!(!WriteOptions::chunked().chunk_config(&floats, None).unwrap().stream_crcs);
    /// let on = WriteOptions::chunked().stream_crcs(true).chunk_config(&floats, None).unwrap();
    /// assert!(on.split && on.stream_crcs);
    /// ```
    #[must_use]
    pub fn stream_crcs(mut self, on: bool) -> WriteOptions {
        self.chunked = true;
        self.stream_crcs = Some(on);
        self
    }

    /// The chunked layout version to write: 2 (the default) or 1, which releases that read
    /// only `RACHUNK1` read too (one shuffle filter, codecs none, lz4 and zstd, no n-d blocks,
    /// no statistics).
    #[must_use]
    pub fn layout_version(mut self, version: u32) -> WriteOptions {
        self.version = Some(version);
        self
    }

    /// Threads compressing chunks (0, the default: all cores). Alone, it selects nothing.
    #[must_use]
    pub fn threads(mut self, threads: usize) -> WriteOptions {
        self.threads = threads;
        self
    }

    /// The storage these options select.
    pub fn storage(&self) -> Storage {
        if self.chunked {
            Storage::Chunked
        } else if self.lz4_whole {
            Storage::Lz4Whole
        } else {
            Storage::Plain
        }
    }

    /// The chunked layout's settings these options ask for: the options themselves (codec,
    /// level, filters, chunk and block shapes, statistics, layout version, threads) if they
    /// select a storage of chunks behind an index ([`Storage::has_chunk_index`]), `None` if
    /// they select one without (plain, one LZ4 block). Writers ask this for the settings of
    /// the chunk index they make, not which storage is selected.
    ///
    /// ```
    /// use rawarray_serde::{codec::Codec, WriteOptions};
    /// assert!(WriteOptions::new().chunk_settings().is_none());
    /// assert!(WriteOptions::new().compress(true).chunk_settings().is_none());
    /// let zstd = WriteOptions::new().codec(Codec::Zstd).level(5);
    /// assert_eq!(zstd.chunk_settings().map(|o| o.get_level()), Some(5));
    /// ```
    pub fn chunk_settings(&self) -> Option<&WriteOptions> {
        self.chunked.then_some(self)
    }

    /// Whether these options round the values: a lossy filter (`bitround`) in the chunked
    /// pipeline. A file written with them says so in its trailer.
    ///
    /// ```
    /// use rawarray_serde::{codec::Filter, WriteOptions};
    /// assert!(!WriteOptions::chunked().is_lossy());
    /// let rounded = WriteOptions::new().filters([Filter::BitRound(10), Filter::Shuffle]);
    /// assert!(rounded.is_lossy());
    /// ```
    pub fn is_lossy(&self) -> bool {
        self.chunk_settings()
            .is_some_and(|o| o.get_filters().iter().any(|f| f.is_lossy()))
    }

    /// Whether a section stored as `storage` is already stored as these options would store
    /// it: the same storage, and no chunk settings (a chunked section's own, in its config,
    /// may differ from these). Rewriting it with them then changes nothing of its storage, and
    /// `ra compress` leaves it alone.
    ///
    /// ```
    /// use rawarray_serde::{codec::Codec, WriteOptions};
    /// let lz4 = WriteOptions::new().compress(true);
    /// assert!(lz4.stores_as(lz4.storage()));
    /// assert!(!WriteOptions::new().stores_as(lz4.storage()));
    /// let zstd = WriteOptions::new().codec(Codec::Zstd);
    /// assert!(!zstd.stores_as(zstd.storage()));
    /// ```
    pub fn stores_as(&self, storage: Storage) -> bool {
        self.chunk_settings().is_none() && storage == self.storage()
    }

    /// These options with the chunked layout selected (for writers that always write it).
    #[must_use]
    pub fn into_chunked(mut self) -> WriteOptions {
        self.chunked = true;
        self
    }

    /// Whether the data is written big-endian.
    pub fn is_big_endian(&self) -> bool {
        self.big_endian
    }

    /// Whether the data is written as one LZ4 block.
    pub fn is_compressed(&self) -> bool {
        self.lz4_whole
    }

    /// The codec (zstd if none was given).
    pub fn get_codec(&self) -> Codec {
        self.codec.unwrap_or_default()
    }

    /// The level (the codec's default if none was given).
    pub fn get_level(&self) -> i32 {
        self.level
            .unwrap_or_else(|| self.get_codec().default_level())
    }

    /// The filter pipeline (`[shuffle]` if none was given).
    pub fn get_filters(&self) -> Vec<Filter> {
        self.filters
            .clone()
            .unwrap_or_else(|| vec![Filter::Shuffle])
    }

    /// The one-filter shorthand of the pipeline, if it is one.
    pub fn get_shuffle(&self) -> Option<Shuffle> {
        Shuffle::of_filters(&self.get_filters())
    }

    /// The chunk shape given, if any.
    pub fn get_chunks(&self) -> Option<&[u64]> {
        self.chunks.as_deref()
    }

    /// The block shape given, if any.
    pub fn get_blocks(&self) -> Option<&[u64]> {
        self.blocks.as_deref()
    }

    /// The layout version that will be written.
    pub fn get_version(&self) -> u32 {
        self.version.unwrap_or(DEFAULT_VERSION)
    }

    /// The byte-streams setting given ([`WriteOptions::split`]), `None` for the default.
    pub fn get_split(&self) -> Option<bool> {
        self.split
    }

    /// Whether statistics will be written (layout version 2).
    pub fn get_statistics(&self) -> bool {
        self.get_version() >= 2 && self.statistics.unwrap_or(true)
    }

    /// The thread count (0: the global pool).
    pub fn get_threads(&self) -> usize {
        self.threads
    }

    /// The header flags of the storage and byte order (a chunked header's `size` is set by
    /// its writer).
    pub fn flags(&self) -> Result<Flags> {
        if self.chunked && self.lz4_whole {
            return Err(Error::unsupported(
                "compress(true) (the whole-section LZ4 block) and a chunked codec at once: choose one",
            ));
        }
        Ok(Flags::NONE
            .with(Flags::BIG_ENDIAN, self.big_endian)
            .with(Flags::COMPRESSED, self.lz4_whole)
            .with(Flags::CHUNKED, self.chunked))
    }

    /// The chunked config these options give an array of `header`'s type and dims (`header`'s
    /// flags and size are ignored), with its index in one segment holding every chunk. `schema`
    /// (a record file's) says which fields statistics are kept for. Each setting is checked
    /// here, and an error names the one that is wrong.
    pub fn chunk_config(&self, header: &Header, schema: Option<&Layout>) -> Result<Config> {
        let dims = &header.dims;
        let elbyte = header.elbyte;
        let chunk = match &self.chunks {
            Some(c) => {
                if c.len() != dims.len() {
                    return Err(setting(
                        "chunks",
                        format!("one size per dim ({} dims {dims:?})", dims.len()),
                        format!("{c:?}"),
                    ));
                }
                if let Some(i) = c.iter().position(|&x| x == 0) {
                    return Err(setting(
                        "chunks",
                        format!("sizes of 1 or more (dim {i})"),
                        0,
                    ));
                }
                c.clone()
            }
            None => default_chunks(dims, elbyte),
        };
        let grid = Grid::new(dims, &chunk, elbyte)?;
        if grid.count() > MAX_CHUNKS {
            return Err(setting(
                "chunks",
                format!("at most {MAX_CHUNKS} chunks"),
                format!("{} chunks of {chunk:?} over dims {dims:?}", grid.count()),
            ));
        }
        let version = self.get_version();
        if !(1..=2).contains(&version) {
            return Err(setting("layout version", "1 or 2", version));
        }
        let codec = self.get_codec();
        if codec.info().since_version > version {
            return Err(setting(
                "codec",
                format!("a codec of layout version {version}"),
                format!("{codec} (layout version {})", codec.info().since_version),
            ));
        }
        codec.check_elements(header.eltype, elbyte)?;
        let level = match self.level {
            Some(l) => codec.check_level(l)?,
            None => codec.default_level(),
        };
        let filters = self.get_filters();
        if filters.len() > MAX_FILTERS {
            return Err(setting(
                "filters",
                format!("at most {MAX_FILTERS}"),
                filters.len(),
            ));
        }
        for (k, f) in filters.iter().enumerate() {
            f.check_elements(header.eltype, elbyte)?;
            if f.is_lossy() && filters[..k].iter().any(|g| !g.is_lossy()) {
                return Err(setting(
                    "filters",
                    format!("{f} before every lossless filter (it rounds the values themselves)"),
                    format!("{filters:?}"),
                ));
            }
            if f.info().since_version > version {
                return Err(setting(
                    "filters",
                    format!("filters of layout version {version}"),
                    format!("{f} (layout version {})", f.info().since_version),
                ));
            }
        }
        let split = match self.split {
            Some(true) if version == 1 => {
                return Err(setting(
                    "split",
                    "off (layout version 1 has one stream a block)",
                    "on",
                ))
            }
            Some(true) => {
                crate::codec::config::check_split(codec, elbyte)
                    .map_err(|e| setting("split", e, codec))?;
                true
            }
            Some(false) => false,
            // Byte streams pay 4 bytes a stream and a frame header each: worth it only where
            // each stream is kilobytes long, so not for small chunks.
            None => {
                let clipped = clipped_chunk_bytes(dims, &chunk, elbyte);
                version >= 2
                    && codec.info().split_block_bytes.is_some()
                    && ends_in_planes(&filters)
                    && match elbyte {
                        2..=16 => clipped >= SPLIT_MIN_CHUNK_BYTES,
                        // Records: whole chunks a block (below), a stream per byte of the
                        // record, each at least SPLIT_MIN_STREAM_BYTES.
                        17..=crate::codec::split::MAX_STREAMS => {
                            clipped >= elbyte.saturating_mul(SPLIT_MIN_STREAM_BYTES)
                        }
                        _ => false,
                    }
            }
        };
        let stream_crcs = match self.stream_crcs {
            Some(true) if !split => {
                return Err(setting(
                    "stream_crcs",
                    "byte streams (split) to carry them",
                    "blocks in one stream",
                ))
            }
            Some(on) => on,
            // Records are what a reader reads some fields of; arrays are read whole, and keep
            // the files readers of byte streams without CRCs read.
            None => split && elbyte > 16,
        };
        let target = self.block_bytes.unwrap_or_else(|| {
            if split && elbyte > 16 {
                // A record's byte streams are short at 128 KiB (1.7 KiB each for 76-byte
                // records: a frame header and a table each), so a block is the whole chunk
                // up to 4 MiB (the largest block the readers' cache keeps): measured on the
                // N-body records, a ratio of 1.815 against 1.753 in one stream of 256 KiB
                // blocks, 2.4x faster to write, as fast to read whole, and a query of two
                // fields decodes only their streams (2.9x faster). The price: one record
                // read alone decodes its chunk's block of 1 MiB, not 256 KiB.
                return SPLIT_RECORD_BLOCK_BYTES;
            }
            codec
                .info()
                .split_block_bytes
                .filter(|_| split)
                .unwrap_or_else(|| codec.default_block_bytes())
        });
        let (blocks, stats) = if version == 1 {
            if Shuffle::of_filters(&filters).is_none() {
                return Err(setting(
                    "filters",
                    "none or one shuffle (layout version 1)",
                    format!("{filters:?}"),
                ));
            }
            if self.blocks.is_some() {
                return Err(setting(
                    "blocks",
                    "none (layout version 1 has byte-run blocks)",
                    format!("{:?}", self.blocks),
                ));
            }
            if self.statistics == Some(true) {
                return Err(setting(
                    "statistics",
                    "off (layout version 1 has none)",
                    "on",
                ));
            }
            let bytes = (target / elbyte)
                .max(1)
                .min(MAX_BLOCK_BYTES / elbyte)
                .max(1)
                * elbyte;
            (Blocks::Bytes(bytes), None)
        } else {
            let shape = match &self.blocks {
                Some(b) => {
                    if b.len() != chunk.len() {
                        return Err(setting(
                            "blocks",
                            format!("one size per dim ({} dims)", chunk.len()),
                            format!("{b:?}"),
                        ));
                    }
                    for (i, (&bl, &c)) in b.iter().zip(&chunk).enumerate() {
                        if bl == 0 || bl > c {
                            return Err(setting(
                                "blocks",
                                format!("dim {i}: 1 ..= the chunk's {c}"),
                                bl,
                            ));
                        }
                    }
                    let bytes = b
                        .iter()
                        .try_fold(elbyte, |acc, &w| acc.checked_mul(w))
                        .unwrap_or(u64::MAX);
                    if bytes > MAX_BLOCK_BYTES_V2.max(elbyte) {
                        return Err(setting(
                            "blocks",
                            format!("at most {MAX_BLOCK_BYTES_V2} bytes a block"),
                            format!("{b:?} of {elbyte}-byte elements: {bytes} bytes"),
                        ));
                    }
                    b.clone()
                }
                None => default_blocks(dims, &chunk, elbyte, target.min(MAX_BLOCK_BYTES_V2)),
            };
            let stats = self
                .get_statistics()
                .then(|| StatField::for_elements(header.eltype, elbyte, schema))
                .filter(|f| !f.is_empty());
            (Blocks::Shape(shape), stats)
        };
        // A growing file (a last dim of 0) still has a first index segment to fill.
        let s0 = grid.count().max(1);
        let nstats = stats.as_ref().map_or(0, Vec::len);
        Ok(Config {
            version,
            codec,
            level,
            segments: Config::first_segment(version, dims.len(), filters.len(), nstats),
            filters,
            blocks,
            chunk,
            s0,
            stats,
            split,
            stream_crcs,
        })
    }
}

fn setting(name: &str, expected: impl std::fmt::Display, found: impl std::fmt::Display) -> Error {
    Error::unsupported(format!(
        "write option {name}: expected {expected}, found {found}"
    ))
}

/// Whether a block through `filters` ends as byte planes: a byte shuffle, followed by nothing
/// but `bytedelta` (which keeps the planes). Byte streams split such blocks by default.
fn ends_in_planes(filters: &[Filter]) -> bool {
    filters
        .iter()
        .rposition(|f| *f == Filter::Shuffle)
        .is_some_and(|i| {
            filters[i + 1..]
                .iter()
                .all(|f| f.bytedelta_mask().is_some())
        })
}

/// The raw bytes of a chunk of `chunk` over `dims`, each dim but the last (which a growing
/// file fills) clipped to the array's.
fn clipped_chunk_bytes(dims: &[u64], chunk: &[u64], elbyte: u64) -> u64 {
    let n = chunk.len();
    chunk.iter().enumerate().fold(elbyte, |acc, (i, &c)| {
        let c = if i + 1 == n { c } else { c.min(dims[i].max(1)) };
        acc.saturating_mul(c)
    })
}

/// The default chunk shape: about [`DEFAULT_CHUNK_BYTES`] of raw bytes, whole leading dims
/// first (so a chunk is one contiguous run of the array, and a record file's chunks are runs
/// of whole records), then as much of the next dim as fits, then 1.
///
/// ```
/// use rawarray_serde::options::default_chunks;
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

/// The default block shape of `chunk` over `dims` (doc/chunked.md 5.5): the chunk's extent
/// (the last dim's chunk size, which a growing file fills), its slowest dim halved first (the
/// last, then the one before it, ...) until a block holds at most `target` bytes, or one
/// element. The fastest dims stay whole, as Blosc2's B2ND keeps them: a block is a run of whole
/// rows (planes), which shuffles and codecs see as long runs, and a plane across a slow dim
/// decodes the fewest blocks.
///
/// ```
/// use rawarray_serde::options::default_blocks;
/// assert_eq!(default_blocks(&[64, 64, 64], &[64, 64, 64], 4, 256 << 10), [64, 64, 16]);
/// assert_eq!(default_blocks(&[512, 512, 1024], &[512, 512, 1], 4, 256 << 10), [512, 128, 1]);
/// assert_eq!(default_blocks(&[10], &[10], 8, 256 << 10), [10]);
/// ```
pub fn default_blocks(dims: &[u64], chunk: &[u64], elbyte: u64, target: u64) -> Vec<u64> {
    let n = chunk.len();
    let mut b: Vec<u64> = (0..n)
        .map(|i| {
            if i + 1 == n {
                chunk[i]
            } else {
                chunk[i].min(dims[i].max(1))
            }
        })
        .collect();
    let bytes = |b: &[u64]| b.iter().fold(elbyte, |acc, &w| acc.saturating_mul(w));
    for i in (0..n).rev() {
        while bytes(&b) > target.max(elbyte) && b[i] > 1 {
            b[i] = b[i].div_ceil(2);
        }
    }
    b
}
