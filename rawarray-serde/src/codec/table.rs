//! The one table of codecs, filters and storage kinds: names, ids, levels, default block sizes
//! and the element types each takes. The spec (doc/chunked.md 5.2 and 5.3), the `ra` tool's
//! value lists and the Python package's keywords all derive from [`CODECS`], [`FILTERS`] and
//! [`STORAGES`]; adding a codec is its own file, one row here and one arm in
//! [`Codec::block_codec`].
//!
//! ```
//! use rawarray_serde::codec::{Codec, Filter};
//! assert_eq!(Codec::parse("zstd").unwrap(), Codec::Zstd);
//! assert_eq!(Codec::Zstd.default_level(), 3);
//! assert!(Codec::Lz4.check_level(5).is_err());            // lz4 has no levels
//! assert_eq!(Filter::parse("bitround:10").unwrap(), Filter::BitRound(10));
//! assert!(Filter::BitRound(10).is_lossy());
//! ```

use std::ops::RangeInclusive;

use crate::eltype::ElType;
use crate::error::{Error, ErrorKind, Result};

/// A row of the codec table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodecInfo {
    /// The codec.
    pub codec: Codec,
    /// Its name, as `--codec` and `codec=` take it.
    pub name: &'static str,
    /// Its id in the chunked config.
    pub id: u32,
    /// The levels it takes (`None`: it has none, and a level is an error).
    pub levels: Option<(i32, i32)>,
    /// The level used when none is given (0 for codecs without levels).
    pub default_level: i32,
    /// The raw bytes per block a writer aims at when none are given (blocks of one stream).
    pub default_block_bytes: u64,
    /// Whether its blocks may be compressed as byte streams (config features bit 1,
    /// [`split`](super::split)).
    pub splits: bool,
    /// The raw bytes per block version 2 writers aim at when they split by default (blocks of
    /// byte-shuffled elements of 2 to 16 bytes, as c-blosc2 does; records take whole chunks,
    /// `options::SPLIT_RECORD_BLOCK_BYTES`), or `None` if they do not.
    pub split_block_bytes: Option<u64>,
    /// The first layout version that can hold it.
    pub since_version: u32,
    /// One line for help texts.
    pub help: &'static str,
}

/// Every codec of the chunked layout, by id.
pub const CODECS: &[CodecInfo] = &[
    CodecInfo {
        codec: Codec::None,
        name: "none",
        id: 0,
        levels: None,
        default_level: 0,
        default_block_bytes: 128 << 10,
        splits: false,
        split_block_bytes: None,
        since_version: 1,
        help: "chunks stored as they are (the index and chunks still apply)",
    },
    CodecInfo {
        codec: Codec::Lz4,
        name: "lz4",
        id: 1,
        levels: None,
        default_level: 0,
        default_block_bytes: 128 << 10,
        splits: true,
        split_block_bytes: None,
        since_version: 1,
        help: "each block a raw LZ4 block: the fastest to decode",
    },
    CodecInfo {
        codec: Codec::Zstd,
        name: "zstd",
        id: 2,
        levels: Some((-7, 22)),
        default_level: 3,
        default_block_bytes: 256 << 10,
        splits: true,
        split_block_bytes: Some(128 << 10),
        since_version: 1,
        help: "each block a zstd frame: a good ratio at a good speed (the default)",
    },
    CodecInfo {
        codec: Codec::Pco,
        name: "pco",
        id: 3,
        levels: Some((0, 12)),
        default_level: 8,
        default_block_bytes: 256 << 10,
        splits: false,
        split_block_bytes: None,
        since_version: 2,
        help: "each block a pco (pcodec) file of its numbers: the best ratio for smooth ints and floats of 2, 4 or 8 bytes",
    },
    CodecInfo {
        codec: Codec::Huffman,
        name: "huffman",
        id: 4,
        levels: Some((-7, 22)),
        default_level: 3,
        // Blocks of 1 MiB: each stream's decoding tables (2,048 entries of two kinds, built
        // for each stream decoded) take about 5 microseconds, a quarter of the decoding of a
        // 32 KiB stream of 4-bit noise; at 1 MiB they are lost in the noise (doc/benchmarks.md:
        // the smooth field's whole read 36 ms at 1 MiB against 48 at 256 KiB in one round).
        default_block_bytes: 1 << 20,
        splits: true,
        split_block_bytes: Some(1 << 20),
        since_version: 2,
        help: "each block (or byte plane) Huffman codes, or a zstd frame at the level where a tenth smaller: fast decoding of noisy planes (little-endian float32: shuffle, bytedelta:4, bytedelta:4)",
    },
];

/// A row of the filter table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilterInfo {
    /// Its name, as `--filter` and `filters=` take it.
    pub name: &'static str,
    /// Its id in the chunked config.
    pub id: u32,
    /// The name of its parameter (`None`: it takes none, and the stored parameter is 0).
    pub param: Option<&'static str>,
    /// Whether the parameter may be left out (then it is 0).
    pub param_optional: bool,
    /// Whether it changes values (a lossy filter is applied only when asked for by name).
    pub lossy: bool,
    /// Whether decoding it is a copy: what it stored is what a reader returns (bitround's
    /// rounding is its whole effect). A reader of byte planes skips such filters
    /// ([`Pipeline::decodes_by_plane`](super::Pipeline::decodes_by_plane)).
    pub decodes_as_copy: bool,
    /// The first layout version that can hold it.
    pub since_version: u32,
    /// One line for help texts.
    pub help: &'static str,
}

/// Every filter of the chunked layout, by id.
pub const FILTERS: &[FilterInfo] = &[
    FilterInfo {
        name: "shuffle",
        param_optional: false,
        id: 1,
        param: None,
        lossy: false,
        decodes_as_copy: false,
        since_version: 1,
        help: "byte shuffle: byte j of every element together (a record as a whole)",
    },
    FilterInfo {
        name: "bitshuffle",
        param_optional: false,
        id: 2,
        param: None,
        lossy: false,
        decodes_as_copy: false,
        since_version: 1,
        help: "bit shuffle: bit b of byte j of every element together",
    },
    FilterInfo {
        name: "delta",
        param_optional: false,
        id: 3,
        param: None,
        lossy: false,
        decodes_as_copy: false,
        since_version: 2,
        help: "each scalar minus the one before it (integers exactly; floats by their bits)",
    },
    FilterInfo {
        name: "bytedelta",
        param_optional: true,
        id: 4,
        param: Some("mask"),
        lossy: false,
        decodes_as_copy: false,
        since_version: 2,
        help: "Blosc2's bytedelta: byte differences within each byte plane (after shuffle); bytedelta:MASK only in the planes of MASK's bits (4: plane 2, byte 2 of each element as stored)",
    },
    FilterInfo {
        name: "bitround",
        param_optional: false,
        id: 5,
        param: Some("keepbits"),
        lossy: true,
        decodes_as_copy: true,
        since_version: 2,
        help: "LOSSY: floats keep KEEPBITS mantissa bits, rounded to nearest (bitround:10)",
    },
];

/// A row of the storage table: how a data section is stored, by the name users give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorageInfo {
    /// The name, as `ra compress --codec` and Python's `codec=` take it (`plain` is what `ra
    /// decompress` writes).
    pub name: &'static str,
    /// One line for help texts.
    pub help: &'static str,
}

/// The storage kinds that are not a chunked codec. A chunked file is named by its codec
/// ([`CODECS`]).
pub const STORAGES: &[StorageInfo] = &[
    StorageInfo {
        name: "plain",
        help: "the elements as they are: every reader of .ra files reads them",
    },
    StorageInfo {
        name: "lz4-whole",
        help: "the whole data section as one raw LZ4 block (flag bit 1), as the C reference and Julia read it: at most 2,113,929,216 plain bytes; no chunks, no random access",
    },
];

/// The name of whole-section LZ4 in [`STORAGES`].
pub const LZ4_WHOLE: &str = "lz4-whole";

/// The codec of each block of a chunked file. Choosing one in
/// [`WriteOptions`](crate::WriteOptions) selects the chunked layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Codec {
    /// Stored raw (id 0).
    None,
    /// Raw LZ4 blocks (id 1).
    Lz4,
    /// zstd frames (id 2).
    #[default]
    Zstd,
    /// pco (pcodec) standalone files of the block's numbers (id 3; layout version 2).
    Pco,
    /// Huffman-coded bytes, no matches (id 4; layout version 2).
    Huffman,
}

impl Codec {
    /// Every codec, by id.
    pub fn all() -> impl Iterator<Item = Codec> {
        CODECS.iter().map(|c| c.codec)
    }

    /// Its row of [`CODECS`].
    pub fn info(self) -> &'static CodecInfo {
        CODECS
            .iter()
            .find(|c| c.codec == self)
            .expect("every codec has a row")
    }

    /// The config's id.
    pub fn id(self) -> u32 {
        self.info().id
    }

    /// Its name: `none`, `lz4`, `zstd`.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The codec of a config id, or an error naming it and the ids known.
    pub fn from_id(id: u32) -> Result<Codec> {
        CODECS
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.codec)
            .ok_or_else(|| {
                ErrorKind::UnknownCodecId {
                    what: "codec",
                    id: u64::from(id),
                    known: known_ids(CODECS.iter().map(|c| (c.id, c.name))),
                }
                .into()
            })
    }

    /// The codec of a name, or an error listing the names (and saying where `lz4-whole`
    /// belongs, which is a storage, not a chunked codec).
    pub fn parse(name: &str) -> Result<Codec> {
        if let Some(c) = CODECS.iter().find(|c| c.name.eq_ignore_ascii_case(name)) {
            return Ok(c.codec);
        }
        Err(Error::unsupported(format!(
            "codec {name:?}: the chunked codecs are {}{}",
            names(CODECS.iter().map(|c| c.name)),
            if name == LZ4_WHOLE {
                " (lz4-whole is the whole-section LZ4 block, not a chunked codec)"
            } else {
                ""
            }
        )))
    }

    /// The levels it takes, `None` if it has none.
    pub fn levels(self) -> Option<RangeInclusive<i32>> {
        self.info().levels.map(|(a, b)| a..=b)
    }

    /// The level used when none is given.
    pub fn default_level(self) -> i32 {
        self.info().default_level
    }

    /// The raw bytes per block a writer aims at when none are given.
    pub fn default_block_bytes(self) -> u64 {
        self.info().default_block_bytes
    }

    /// Whether its blocks may be compressed as byte streams (config features bit 1).
    pub fn splits(self) -> bool {
        self.info().splits
    }

    /// `level` if this codec takes it, else an error naming the setting.
    pub fn check_level(self, level: i32) -> Result<i32> {
        match self.levels() {
            None if level == 0 => Ok(0),
            None => Err(Error::unsupported(format!(
                "level {level} for codec {}: it has no levels (give none)",
                self.name()
            ))),
            Some(r) if r.contains(&level) => Ok(level),
            Some(r) => Err(Error::unsupported(format!(
                "level {level} for codec {}: it takes {} ..= {}",
                self.name(),
                r.start(),
                r.end()
            ))),
        }
    }

    /// Whether this codec takes elements of `eltype`/`elbyte`, or an error naming them.
    pub fn check_elements(self, eltype: ElType, elbyte: u64) -> Result<()> {
        // A block holds one element at least, and a huffman block is decoded whole (never as
        // a stream, as zstd's and lz4's larger blocks are): its elements fit the largest block.
        let most = super::huffman::MAX_BLOCK_BYTES;
        if self == Codec::Huffman && elbyte > most {
            return Err(Error::unsupported(format!(
                "codec huffman takes elements of at most {most} bytes (a block holds one); the \
                 elements are {}: choose zstd or lz4 for them",
                crate::eltype::type_label(eltype, elbyte)
            )));
        }
        if self == Codec::Pco && super::pco::num_kind(eltype.code(), elbyte).is_none() {
            return Err(Error::unsupported(format!(
                "codec pco takes int and uint of 2, 4 or 8 bytes and float16, float32, float64; \
                 the elements are {}: choose zstd or lz4 for them",
                crate::eltype::type_label(eltype, elbyte)
            )));
        }
        Ok(())
    }

    /// The codec's implementation.
    pub fn block_codec(self) -> &'static dyn super::BlockCodec {
        match self {
            Codec::None => &super::none::NoCodec,
            Codec::Lz4 => &super::lz4::Lz4,
            Codec::Zstd => &super::zstd::Zstd,
            Codec::Pco => &super::pco::Pco,
            Codec::Huffman => &super::huffman::Huffman,
        }
    }
}

impl std::fmt::Display for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One filter of a chunked file's pipeline, with its parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Filter {
    /// Byte shuffle by elbyte (id 1).
    Shuffle,
    /// Bit shuffle by elbyte (id 2).
    BitShuffle,
    /// Each scalar minus the one before it (id 3).
    Delta,
    /// Blosc2's bytedelta (id 4, parameter 0): byte differences in every byte plane.
    ByteDelta,
    /// bytedelta in the byte planes whose bits are set in the mask (id 4, the mask its
    /// parameter, not 0): `ByteDeltaPlanes(0b0100)` is plane 2 alone.
    ByteDeltaPlanes(u32),
    /// Floats rounded to this many mantissa bits (id 5; lossy).
    BitRound(u32),
}

impl Filter {
    /// Its row of [`FILTERS`].
    pub fn info(self) -> &'static FilterInfo {
        let id = self.id();
        FILTERS
            .iter()
            .find(|f| f.id == id)
            .expect("every filter has a row")
    }

    /// The config's id.
    pub fn id(self) -> u32 {
        match self {
            Filter::Shuffle => 1,
            Filter::BitShuffle => 2,
            Filter::Delta => 3,
            Filter::ByteDelta | Filter::ByteDeltaPlanes(_) => 4,
            Filter::BitRound(_) => 5,
        }
    }

    /// The config's parameter.
    pub fn param(self) -> u32 {
        match self {
            Filter::BitRound(k) | Filter::ByteDeltaPlanes(k) => k,
            _ => 0,
        }
    }

    /// The byte planes a bytedelta works on, as a mask ([`bytedelta::ALL`](super::bytedelta::ALL)
    /// for every plane), or `None` for the other filters.
    pub fn bytedelta_mask(self) -> Option<u32> {
        match self {
            Filter::ByteDelta => Some(super::bytedelta::ALL),
            Filter::ByteDeltaPlanes(m) => Some(m),
            _ => None,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Whether it changes values.
    pub fn is_lossy(self) -> bool {
        self.info().lossy
    }

    /// Whether decoding it is a copy ([`FilterInfo::decodes_as_copy`]).
    pub fn decodes_as_copy(self) -> bool {
        self.info().decodes_as_copy
    }

    /// The mantissa bits a rounding filter keeps, `None` for lossless filters.
    pub fn kept_bits(self) -> Option<u32> {
        match self {
            Filter::BitRound(k) => Some(k),
            _ => None,
        }
    }

    /// The filter of a config's id and parameter, or an error naming what is wrong.
    pub fn from_id(id: u32, param: u32) -> Result<Filter> {
        let Some(info) = FILTERS.iter().find(|f| f.id == id) else {
            return Err(ErrorKind::UnknownCodecId {
                what: "filter",
                id: u64::from(id),
                known: known_ids(FILTERS.iter().map(|f| (f.id, f.name))),
            }
            .into());
        };
        Filter::with_param(info, Some(param))
    }

    fn with_param(info: &FilterInfo, param: Option<u32>) -> Result<Filter> {
        match (info.param, param) {
            (None, None | Some(0)) => {}
            (None, Some(p)) => {
                return Err(Error::unsupported(format!(
                    "filter {} takes no parameter, found {p}",
                    info.name
                )))
            }
            (Some(what), None) if !info.param_optional => {
                return Err(Error::unsupported(format!(
                    "filter {} needs its {what}: give it as {}:{what}",
                    info.name, info.name
                )))
            }
            (Some(_), _) => {}
        }
        Ok(match info.id {
            1 => Filter::Shuffle,
            2 => Filter::BitShuffle,
            3 => Filter::Delta,
            4 => match param.unwrap_or(0) {
                0 => Filter::ByteDelta,
                mask => Filter::ByteDeltaPlanes(mask),
            },
            _ => Filter::BitRound(param.unwrap_or(0)),
        })
    }

    /// A filter from its name and optional parameter, `NAME` or `NAME:PARAM` (as `ra compress
    /// --filter` takes it), or an error listing the names.
    pub fn parse(spec: &str) -> Result<Filter> {
        let (name, param) = match spec.split_once(':') {
            Some((n, p)) => {
                let p = p.trim().parse::<u32>().map_err(|_| {
                    Error::unsupported(format!(
                        "filter {spec:?}: the parameter after ':' must be a whole number from 0 to 4294967295"
                    ))
                })?;
                (n.trim(), Some(p))
            }
            None => (spec.trim(), None),
        };
        let Some(info) = FILTERS.iter().find(|f| f.name.eq_ignore_ascii_case(name)) else {
            return Err(Error::unsupported(format!(
                "filter {name:?}: the filters are {}",
                names(FILTERS.iter().map(|f| f.name))
            )));
        };
        Filter::with_param(info, param)
    }

    /// Whether this filter takes elements of `eltype`/`elbyte` (and its parameter fits them),
    /// or an error naming both.
    pub fn check_elements(self, eltype: ElType, elbyte: u64) -> Result<()> {
        let label = || crate::eltype::type_label(eltype, elbyte);
        match self {
            Filter::Delta if matches!(eltype, ElType::User) => Err(Error::unsupported(format!(
                "filter delta takes numbers (int, uint, float, complex, bfloat16); the elements are {}",
                label()
            ))),
            Filter::ByteDeltaPlanes(0) => Err(Error::unsupported(
                "filter bytedelta: Filter::ByteDeltaPlanes needs a mask other than 0, found 0 \
                 (every byte plane is Filter::ByteDelta)"
                    .to_string(),
            )),
            Filter::ByteDeltaPlanes(mask) => {
                let planes = usize::try_from(elbyte).unwrap_or(usize::MAX);
                match (0..32).find(|&j| mask >> j & 1 == 1 && j >= planes) {
                    Some(j) => Err(Error::unsupported(format!(
                        "filter bytedelta:{mask}: the mask selects byte plane {j}; {} has {planes} byte planes (0 to {})",
                        label(),
                        planes.saturating_sub(1)
                    ))),
                    None => Ok(()),
                }
            }
            Filter::BitRound(k) => {
                let Some(format) = super::bitround::format_of(eltype, elbyte) else {
                    return Err(Error::unsupported(format!(
                        "filter bitround takes float16/32/64, bfloat16 and complex of them; the elements are {}",
                        label()
                    )));
                };
                let m = format.mantissa_bits();
                if k > m {
                    return Err(Error::unsupported(format!(
                        "filter bitround:{k}: {} has {m} mantissa bits; keep at most {m}",
                        label()
                    )));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The filter's implementation.
    pub fn implementation(self) -> Box<dyn super::ByteFilter> {
        match self {
            Filter::Shuffle => Box::new(super::shuffle::ByteShuffle),
            Filter::BitShuffle => Box::new(super::bitshuffle::BitShuffle),
            Filter::Delta => Box::new(super::delta::Delta),
            Filter::ByteDelta | Filter::ByteDeltaPlanes(_) => {
                Box::new(super::bytedelta::ByteDelta { mask: self.param() })
            }
            Filter::BitRound(keepbits) => Box::new(super::bitround::BitRound { keepbits }),
        }
    }
}

impl std::fmt::Display for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Filter::BitRound(p) | Filter::ByteDeltaPlanes(p) => write!(f, "{}:{p}", self.name()),
            _ => f.write_str(self.name()),
        }
    }
}

/// The one-filter shorthand of version 1 files and of `shuffle=` options: no filter, a byte
/// shuffle or a bit shuffle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Shuffle {
    /// No filter (version 1 id 0).
    None,
    /// Byte shuffle by elbyte (id 1): a record is shuffled as a whole.
    #[default]
    Byte,
    /// Bit shuffle by elbyte (id 2).
    Bit,
}

impl Shuffle {
    /// The version 1 config's filter id.
    pub fn id(self) -> u32 {
        match self {
            Shuffle::None => 0,
            Shuffle::Byte => 1,
            Shuffle::Bit => 2,
        }
    }

    /// The shorthand of a version 1 filter id, or an error naming it.
    pub fn from_id(id: u32) -> Result<Shuffle> {
        match id {
            0 => Ok(Shuffle::None),
            1 => Ok(Shuffle::Byte),
            2 => Ok(Shuffle::Bit),
            _ => Err(ErrorKind::UnknownCodecId {
                what: "filter",
                id: u64::from(id),
                known: "0 none, 1 byte shuffle, 2 bit shuffle".into(),
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

    /// The shorthand of a name (`none`, `byte`, `bit`), or an error listing them.
    pub fn parse(name: &str) -> Result<Shuffle> {
        [Shuffle::None, Shuffle::Byte, Shuffle::Bit]
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                Error::unsupported(format!("shuffle {name:?}: choose none, byte or bit"))
            })
    }

    /// The pipeline it stands for: empty, `[shuffle]` or `[bitshuffle]`.
    pub fn filters(self) -> Vec<Filter> {
        match self {
            Shuffle::None => Vec::new(),
            Shuffle::Byte => vec![Filter::Shuffle],
            Shuffle::Bit => vec![Filter::BitShuffle],
        }
    }

    /// The shorthand of a pipeline, if it is one (none, or one shuffle).
    pub fn of_filters(filters: &[Filter]) -> Option<Shuffle> {
        match filters {
            [] => Some(Shuffle::None),
            [Filter::Shuffle] => Some(Shuffle::Byte),
            [Filter::BitShuffle] => Some(Shuffle::Bit),
            _ => None,
        }
    }
}

/// "0 none, 1 lz4, ..." for an error message.
fn known_ids(rows: impl Iterator<Item = (u32, &'static str)>) -> String {
    rows.map(|(id, name)| format!("{id} {name}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "none, lz4 and zstd".
fn names(rows: impl Iterator<Item = &'static str>) -> String {
    let v: Vec<&str> = rows.collect();
    match v.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => v.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_row_round_trips_by_id_and_name() {
        for row in CODECS {
            assert_eq!(Codec::from_id(row.id).unwrap(), row.codec);
            assert_eq!(Codec::parse(row.name).unwrap(), row.codec);
            assert_eq!(row.codec.info(), row);
            assert_eq!(
                row.codec.check_level(row.default_level).unwrap(),
                row.default_level
            );
        }
        let e = Codec::from_id(99).unwrap_err().to_string();
        assert!(e.contains("99") && e.contains("3 pco"), "{e}");
        let e = Codec::parse("lz4-whole").unwrap_err().to_string();
        assert!(e.contains("whole-section"), "{e}");
    }

    #[test]
    fn levels_are_checked_against_the_table() {
        assert!(Codec::Zstd.check_level(22).is_ok());
        let e = Codec::Zstd.check_level(23).unwrap_err().to_string();
        assert!(e.contains("-7 ..= 22"), "{e}");
        let e = Codec::Lz4.check_level(1).unwrap_err().to_string();
        assert!(e.contains("no levels"), "{e}");
        assert!(Codec::None.check_level(0).is_ok());
    }

    #[test]
    fn every_filter_row_round_trips_by_id_and_name() {
        for row in FILTERS {
            let f = match row.param {
                None => Filter::parse(row.name).unwrap(),
                Some(_) => Filter::parse(&format!("{}:3", row.name)).unwrap(),
            };
            if row.param_optional {
                let plain = Filter::parse(row.name).unwrap();
                assert_eq!(Filter::from_id(row.id, 0).unwrap(), plain);
                assert_eq!(plain.param(), 0);
            }
            assert_eq!(f.id(), row.id);
            assert_eq!(Filter::from_id(f.id(), f.param()).unwrap(), f);
            assert_eq!(Filter::parse(&f.to_string()).unwrap(), f);
        }
        let e = Filter::from_id(77, 0).unwrap_err().to_string();
        assert!(e.contains("77") && e.contains("1 shuffle"), "{e}");
        assert!(Filter::from_id(1, 5).is_err());
        let e = Filter::parse("nope").unwrap_err().to_string();
        assert!(e.contains("shuffle"), "{e}");
    }

    #[test]
    fn the_shuffle_shorthand_is_a_pipeline() {
        for s in [Shuffle::None, Shuffle::Byte, Shuffle::Bit] {
            assert_eq!(Shuffle::of_filters(&s.filters()), Some(s));
            assert_eq!(Shuffle::from_id(s.id()).unwrap(), s);
            assert_eq!(Shuffle::parse(s.name()).unwrap(), s);
        }
    }
}
