//! The chunked section's config: the first bytes of the data section, in one of two versions
//! (doc/chunked.md sections 5.1 and 6.1).
//!
//! Version 2 (`RACHUNK2`): codec, level, a pipeline of filters, n-d block shape, optional
//! statistics fields, and 64 segment slots that carry their own CRC. Version 1 (`RACHUNK1`):
//! one filter, byte-run blocks, bare segment slots. Both decode into one [`Config`], which
//! every reader and writer uses; the version decides only the bytes.
//!
//! ```
//! use rawarray_serde::codec::{Blocks, Codec, Config, Filter};
//! use rawarray_serde::{ElType, Flags, Header};
//! let mut h = Header::new(ElType::Float, 4, vec![10, 10]).unwrap();
//! let c = Config {
//!     version: 2,
//!     codec: Codec::Zstd,
//!     level: 3,
//!     filters: vec![Filter::Shuffle],
//!     blocks: Blocks::Shape(vec![10, 5]),
//!     chunk: vec![10, 5],
//!     s0: 2,
//!     segments: Config::first_segment(2, 2, 1, 0),
//!     stats: None,
//!     split: false,
//!     stream_crcs: false,
//! };
//! let bytes = c.encode();
//! assert_eq!(bytes.len() as u64, c.encoded_len());
//! h.flags = Flags::CHUNKED;
//! h.size = bytes.len() as u64 + 2 * 32;
//! assert_eq!(Config::decode(&h, &bytes).unwrap(), c);
//! ```

use super::stats::StatField;
use super::table::{Codec, Filter, Shuffle};
use crate::error::Result;
use crate::header::{le_u64, Header};

/// Version 1's magic.
pub const CONFIG_MAGIC: &[u8; 8] = b"RACHUNK1";

/// Version 2's magic.
pub const CONFIG_MAGIC_V2: &[u8; 8] = b"RACHUNK2";

/// The layout version writers use unless told otherwise.
pub const DEFAULT_VERSION: u32 = 2;

/// Number of index segment slots.
pub const SEGMENTS: usize = 64;

/// The largest block a version 1 config may ask for (or one element, if larger).
pub const MAX_BLOCK_BYTES: u64 = 1 << 30;

/// The largest block of a version 2 config (or one element, if larger): a reader allocates
/// one block at a time, so this bounds what decoding any read allocates.
pub const MAX_BLOCK_BYTES_V2: u64 = 1 << 24;

/// The most filters a version 2 pipeline holds.
pub const MAX_FILTERS: usize = 8;

pub use super::stats::MAX_STAT_FIELDS;

/// Features bit 0: index entries carry statistics.
pub const FEATURE_STATS: u32 = 1;

/// Features bit 1: blocks are compressed as byte streams ([`split`](super::split)).
pub const FEATURE_SPLIT: u32 = 2;

/// Features bit 2: each byte stream of a block carries its own CRC-32 (only with bit 1), so a
/// reader of some fields reads and checks only their streams ([`split`](super::split)).
pub const FEATURE_STREAM_CRCS: u32 = 4;

/// Bytes of a version 2 segment slot: offset u64, crc u32, reserved u32.
const SLOT_V2: usize = 16;

/// How a chunk is cut in blocks that decode alone.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Blocks {
    /// Version 1: runs of this many raw bytes of the chunk (a multiple of elbyte).
    Bytes(u64),
    /// Version 2: n-d blocks of this shape (one entry per dim, each 1 ..= the chunk's).
    Shape(Vec<u64>),
}

/// The decoded chunking config (see the module docs for its bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The layout version: 1 (`RACHUNK1`) or 2 (`RACHUNK2`).
    pub version: u32,
    /// The codec of each block.
    pub codec: Codec,
    /// The codec's level (0 for codecs without levels; version 1 keeps any value).
    pub level: i32,
    /// The filters, in the order a writer applies them (version 1: at most one shuffle).
    pub filters: Vec<Filter>,
    /// How chunks are cut in blocks.
    pub blocks: Blocks,
    /// The chunk shape, one entry per dim, each at least 1.
    pub chunk: Vec<u64>,
    /// Entries of index segment 0; segment `g >= 1` holds `s0 * 2^(g-1)`.
    pub s0: u64,
    /// Offsets of the index segments in the data section, 0 where not allocated.
    pub segments: [u64; SEGMENTS],
    /// Version 2's statistics fields (features bit 0), `None` without statistics.
    pub stats: Option<Vec<StatField>>,
    /// Version 2: each block's codec payload is `elbyte` byte streams, each compressed alone
    /// (features bit 1, [`split`](super::split)).
    pub split: bool,
    /// Version 2, with `split`: each byte stream carries its own CRC-32 (features bit 2,
    /// [`split`](super::split)).
    pub stream_crcs: bool,
}

impl Config {
    /// Bytes of a config of `version` for `ndims` dims, `filters` filters and `stats`
    /// statistics fields.
    pub fn len_for(version: u32, ndims: usize, filters: usize, stats: usize) -> u64 {
        if version == 1 {
            (56 + 8 * ndims + 8 * SEGMENTS) as u64
        } else {
            (48 + 16 * ndims + 8 * filters + 16 * stats + 8 + SLOT_V2 * SEGMENTS) as u64
        }
    }

    /// Bytes of a version 1 config for `ndims` dims.
    pub fn encoded_len_v1(ndims: usize) -> usize {
        Config::len_for(1, ndims, 0, 0) as usize
    }

    /// Bytes of this config.
    pub fn encoded_len(&self) -> u64 {
        Config::len_for(
            self.version,
            self.chunk.len(),
            self.filters.len(),
            self.stats.as_ref().map_or(0, Vec::len),
        )
    }

    /// A segment table with only segment 0, placed right after a config of these sizes.
    pub fn first_segment(
        version: u32,
        ndims: usize,
        filters: usize,
        stats: usize,
    ) -> [u64; SEGMENTS] {
        let mut t = [0u64; SEGMENTS];
        t[0] = Config::len_for(version, ndims, filters, stats);
        t
    }

    /// Bytes of one index entry: 24 in version 1; 32 and the statistics in version 2.
    pub fn entry_len(&self) -> u64 {
        if self.version == 1 {
            24
        } else {
            32 + self
                .stats
                .as_ref()
                .map_or(0, |f| f.iter().map(StatField::record_len).sum())
        }
    }

    /// The version 1 one-filter shorthand of this config's pipeline, if it is one.
    pub fn shuffle(&self) -> Option<Shuffle> {
        Shuffle::of_filters(&self.filters)
    }

    /// Offset in the data section of segment slot `g`: a writer updates one slot in place.
    pub fn segment_slot_offset(&self, g: usize) -> u64 {
        let slot = if self.version == 1 { 8 } else { SLOT_V2 };
        self.encoded_len() - (slot * (SEGMENTS - g)) as u64
    }

    /// The bytes of segment slot `g` holding `offset` (0: not allocated).
    pub fn segment_slot(&self, g: usize, offset: u64) -> Vec<u8> {
        if self.version == 1 {
            return offset.to_le_bytes().to_vec();
        }
        let mut b = vec![0u8; SLOT_V2];
        if offset != 0 {
            b[..8].copy_from_slice(&offset.to_le_bytes());
            b[8..12].copy_from_slice(&slot_crc(g, offset).to_le_bytes());
        }
        b
    }

    /// The config's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len() as usize);
        let put64 = |out: &mut Vec<u8>, w: u64| out.extend_from_slice(&w.to_le_bytes());
        let put32 = |out: &mut Vec<u8>, w: u32| out.extend_from_slice(&w.to_le_bytes());
        if self.version == 1 {
            out.extend_from_slice(CONFIG_MAGIC);
            put32(&mut out, self.shuffle().unwrap_or_default().id());
            put32(&mut out, self.codec.id());
            out.extend_from_slice(&self.level.to_le_bytes());
            put32(&mut out, 0);
            let bb = match &self.blocks {
                Blocks::Bytes(b) => *b,
                Blocks::Shape(_) => 0,
            };
            for w in [bb, self.s0, self.chunk.len() as u64]
                .into_iter()
                .chain(self.chunk.iter().copied())
            {
                put64(&mut out, w);
            }
        } else {
            out.extend_from_slice(CONFIG_MAGIC_V2);
            put32(&mut out, self.codec.id());
            out.extend_from_slice(&self.level.to_le_bytes());
            put32(&mut out, self.filters.len() as u32);
            put32(
                &mut out,
                (FEATURE_STATS * u32::from(self.stats.is_some()))
                    | (FEATURE_SPLIT * u32::from(self.split))
                    | (FEATURE_STREAM_CRCS * u32::from(self.stream_crcs)),
            );
            put64(&mut out, self.s0);
            put64(&mut out, self.chunk.len() as u64);
            for &c in &self.chunk {
                put64(&mut out, c);
            }
            match &self.blocks {
                Blocks::Shape(b) => b.iter().for_each(|&w| put64(&mut out, w)),
                Blocks::Bytes(_) => self.chunk.iter().for_each(|_| put64(&mut out, 0)),
            }
            for f in &self.filters {
                put32(&mut out, f.id());
                put32(&mut out, f.param());
            }
            let fields = self.stats.as_deref().unwrap_or(&[]);
            put32(&mut out, fields.len() as u32);
            put32(&mut out, 0);
            for f in fields {
                out.extend_from_slice(&f.encode());
            }
        }
        let crc = crc32fast::hash(&out);
        put32(&mut out, crc);
        put32(&mut out, 0);
        for (g, &s) in self.segments.iter().enumerate() {
            out.extend_from_slice(&self.segment_slot(g, s));
        }
        out
    }

    /// The config's length for `header`, read from the first bytes of the section (`head`,
    /// at least [`Config::probe_len`] bytes or the whole section): what a reader fetches
    /// before [`Config::decode`].
    pub fn length_in(header: &Header, head: &[u8]) -> Result<u64> {
        let n = header.dims.len();
        let magic = head.get(..8).ok_or_else(|| {
            bad(
                "config",
                "at least 8 bytes (its magic)",
                format!("{}", head.len()),
            )
        })?;
        if magic == CONFIG_MAGIC {
            return Ok(Config::len_for(1, n, 0, 0));
        }
        if magic != CONFIG_MAGIC_V2 {
            return Err(bad_magic(magic));
        }
        let f = head
            .get(16..20)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
        let fixed = 40 + 16 * n;
        let s = head
            .get(fixed + 8 * f.unwrap_or(0) as usize..)
            .and_then(|b| b.get(..4))
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
        match (f, s) {
            (Some(f), Some(s)) if f as usize <= MAX_FILTERS && s as usize <= MAX_STAT_FIELDS => {
                Ok(Config::len_for(2, n, f as usize, s as usize))
            }
            (Some(f), _) if f as usize > MAX_FILTERS => {
                Err(bad("config filters", format!("at most {MAX_FILTERS}"), f))
            }
            (_, Some(s)) => Err(bad(
                "config statistics fields",
                format!("at most {MAX_STAT_FIELDS}"),
                s,
            )),
            _ => Err(bad(
                "config",
                format!(
                    "its counts within the first {} bytes",
                    fixed + 8 * MAX_FILTERS + 4
                ),
                head.len(),
            )),
        }
    }

    /// Bytes a reader reads first to learn a config's length ([`Config::length_in`]) for
    /// `ndims` dims: all of a version 1 config and of a version 2 config's fixed part and
    /// filters.
    pub fn probe_len(ndims: usize) -> u64 {
        (Config::len_for(1, ndims, 0, 0)).max((48 + 16 * ndims + 8 * MAX_FILTERS) as u64)
    }

    /// Decodes and validates the config at the start of `bytes` for a chunked `header`.
    ///
    /// Checks, each an error naming the field: the header's size holds the config, the magic,
    /// ndims, the CRC, known filter and codec ids and their parameters, reserved words 0, chunk
    /// dims >= 1, the block shape (version 2: each 1 ..= the chunk's, at most
    /// [`MAX_BLOCK_BYTES_V2`] bytes or one element; version 1: a positive multiple of elbyte,
    /// at most [`MAX_BLOCK_BYTES`] or one element), the statistics fields, each segment slot's
    /// CRC (version 2), and segment 0 placed right after the config.
    pub fn decode(header: &Header, bytes: &[u8]) -> Result<Config> {
        let len = Config::length_in(header, bytes)?;
        if header.size < len {
            return Err(bad(
                "size",
                format!("at least {len} bytes (the config)"),
                header.size,
            ));
        }
        let Some(b) = bytes.get(..len as usize) else {
            return Err(bad("config", format!("{len} bytes"), bytes.len()));
        };
        if &b[..8] == CONFIG_MAGIC {
            decode_v1(header, b)
        } else {
            decode_v2(header, b)
        }
    }
}

/// CRC-32 of a version 2 slot: its offset's 8 bytes, then the slot number as a `u64`.
fn slot_crc(g: usize, offset: u64) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&offset.to_le_bytes());
    h.update(&(g as u64).to_le_bytes());
    h.finalize()
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}

fn bad_magic(magic: &[u8]) -> crate::Error {
    bad(
        "config magic",
        "RACHUNK1 or RACHUNK2",
        format!("{:?}", String::from_utf8_lossy(magic)),
    )
}

fn check_crc(b: &[u8], at: usize) -> Result<()> {
    let crc = crc32fast::hash(&b[..at]);
    if u32_at(b, at) != crc {
        return Err(bad(
            "config crc",
            format!("{crc:#010x}"),
            format!("{:#010x}", u32_at(b, at)),
        ));
    }
    if u32_at(b, at + 4) != 0 {
        return Err(bad("config reserved word", "0", u32_at(b, at + 4)));
    }
    Ok(())
}

fn check_ndims(b: &[u8], at: usize, n: usize) -> Result<()> {
    if le_u64(&b[at..at + 8]) != n as u64 {
        return Err(bad(
            "config ndims",
            format!("{n} (the header's)"),
            le_u64(&b[at..at + 8]),
        ));
    }
    Ok(())
}

/// Segment 0 must start right after the config (`len` bytes).
fn check_first_segment(segments: &[u64; SEGMENTS], len: u64) -> Result<()> {
    if segments[0] != len {
        return Err(bad(
            "index segment 0 offset",
            format!("{len} (right after the config)"),
            segments[0],
        ));
    }
    Ok(())
}

fn read_chunk(b: &[u8], at: usize, n: usize) -> Result<Vec<u64>> {
    let chunk: Vec<u64> = (0..n).map(|i| le_u64(&b[at + 8 * i..])).collect();
    if let Some(i) = chunk.iter().position(|&c| c == 0) {
        return Err(bad(
            &format!("config chunk shape, dim {i}"),
            "at least 1",
            0,
        ));
    }
    Ok(chunk)
}

fn decode_v1(header: &Header, b: &[u8]) -> Result<Config> {
    let n = header.dims.len();
    check_ndims(b, 40, n)?;
    check_crc(b, 48 + 8 * n)?;
    if u32_at(b, 20) != 0 {
        return Err(bad("config reserved word", "0", u32_at(b, 20)));
    }
    let shuffle = Shuffle::from_id(u32_at(b, 8))?;
    let codec = Codec::from_id(u32_at(b, 12))?;
    if codec.info().since_version > 1 {
        return Err(bad(
            "config codec",
            "a version 1 codec (none, lz4, zstd)",
            codec.name(),
        ));
    }
    let level = i32::from_le_bytes(b[16..20].try_into().expect("4 bytes"));
    let block_bytes = le_u64(&b[24..]);
    let elbyte = header.elbyte;
    if block_bytes == 0
        || !block_bytes.is_multiple_of(elbyte)
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
    let chunk = read_chunk(b, 48, n)?;
    let mut segments = [0u64; SEGMENTS];
    for (g, s) in segments.iter_mut().enumerate() {
        *s = le_u64(&b[56 + 8 * n + 8 * g..]);
    }
    check_first_segment(&segments, Config::len_for(1, n, 0, 0))?;
    Ok(Config {
        version: 1,
        codec,
        level,
        filters: shuffle.filters(),
        blocks: Blocks::Bytes(block_bytes),
        chunk,
        s0: le_u64(&b[32..]),
        segments,
        stats: None,
        split: false,
        stream_crcs: false,
    })
}

fn decode_v2(header: &Header, b: &[u8]) -> Result<Config> {
    let n = header.dims.len();
    let f = u32_at(b, 16) as usize;
    let fixed = 40 + 16 * n;
    let s = u32_at(b, fixed + 8 * f) as usize;
    let crc_at = 48 + 16 * n + 8 * f + 16 * s;
    check_ndims(b, 32, n)?;
    check_crc(b, crc_at)?;
    let codec = Codec::from_id(u32_at(b, 8))?;
    let level = i32::from_le_bytes(b[12..16].try_into().expect("4 bytes"));
    codec
        .check_level(level)
        .map_err(|e| bad("config level", e, level))?;
    codec
        .check_elements(header.eltype, header.elbyte)
        .map_err(|e| bad("config codec", e, codec.name()))?;
    let features = u32_at(b, 20);
    if features & !(FEATURE_STATS | FEATURE_SPLIT | FEATURE_STREAM_CRCS) != 0 {
        return Err(bad(
            "config features",
            "bits 0 (statistics), 1 (byte streams) and 2 (stream CRCs) or none",
            format!("{features:#x}"),
        ));
    }
    let split = features & FEATURE_SPLIT != 0;
    let stream_crcs = features & FEATURE_STREAM_CRCS != 0;
    if stream_crcs && !split {
        return Err(bad(
            "config features bit 2 (stream CRCs)",
            "bit 1 (byte streams) set with it",
            format!("{features:#x}"),
        ));
    }
    if split {
        check_split(codec, header.elbyte)
            .map_err(|e| bad("config features bit 1 (byte streams)", e, codec.name()))?;
    }
    if u32_at(b, fixed + 8 * f + 4) != 0 {
        return Err(bad(
            "config reserved word",
            "0",
            u32_at(b, fixed + 8 * f + 4),
        ));
    }
    let chunk = read_chunk(b, 40, n)?;
    let block: Vec<u64> = (0..n).map(|i| le_u64(&b[40 + 8 * n + 8 * i..])).collect();
    for (i, (&bl, &c)) in block.iter().zip(&chunk).enumerate() {
        if bl == 0 || bl > c {
            return Err(bad(
                &format!("config block shape, dim {i}"),
                format!("1 ..= the chunk's {c}"),
                bl,
            ));
        }
    }
    let elbyte = header.elbyte;
    let block_bytes = block
        .iter()
        .try_fold(elbyte, |acc, &w| acc.checked_mul(w))
        .unwrap_or(u64::MAX);
    if block_bytes > MAX_BLOCK_BYTES_V2.max(elbyte) {
        return Err(bad(
            "config block shape",
            format!("at most {} bytes (or one element)", MAX_BLOCK_BYTES_V2),
            format!("{block:?} of {elbyte}-byte elements"),
        ));
    }
    let mut filters = Vec::with_capacity(f);
    for k in 0..f {
        let at = fixed + 8 * k;
        let filter = Filter::from_id(u32_at(b, at), u32_at(b, at + 4))
            .map_err(|e| bad(&format!("config filter {k}"), "a known filter", e))?;
        filter
            .check_elements(header.eltype, header.elbyte)
            .map_err(|e| bad(&format!("config filter {k}"), e, filter))?;
        filters.push(filter);
    }
    let stats = if features & FEATURE_STATS != 0 {
        let at = fixed + 8 * f + 8;
        let fields = (0..s)
            .map(|k| StatField::decode(&b[at + 16 * k..at + 16 * k + 16], k, elbyte))
            .collect::<Result<Vec<_>>>()?;
        Some(fields)
    } else if s != 0 {
        return Err(bad(
            "config statistics fields",
            "0 (features bit 0 is clear)",
            s,
        ));
    } else {
        None
    };
    let mut segments = [0u64; SEGMENTS];
    let slots = crc_at + 8;
    for (g, slot) in segments.iter_mut().enumerate() {
        let at = slots + SLOT_V2 * g;
        let raw = &b[at..at + SLOT_V2];
        if raw.iter().all(|&x| x == 0) {
            continue;
        }
        let off = le_u64(raw);
        let crc = u32_at(raw, 8);
        if crc != slot_crc(g, off) || u32_at(raw, 12) != 0 {
            return Err(bad(
                &format!("index segment slot {g}"),
                format!(
                    "crc {:#010x} of its offset {off}, reserved 0",
                    slot_crc(g, off)
                ),
                format!("crc {crc:#010x}, reserved {}", u32_at(raw, 12)),
            ));
        }
        *slot = off;
    }
    check_first_segment(&segments, Config::len_for(2, n, f, s))?;
    Ok(Config {
        version: 2,
        codec,
        level,
        filters,
        blocks: Blocks::Shape(block),
        chunk,
        s0: le_u64(&b[24..]),
        segments,
        stats,
        split,
        stream_crcs,
    })
}

/// Whether blocks of `codec` over elements of `elbyte` bytes may be split in byte streams: an
/// error in words if not.
pub fn check_split(codec: super::Codec, elbyte: u64) -> std::result::Result<(), String> {
    if !codec.splits() {
        let can: Vec<&str> = super::Codec::all()
            .filter(|c| c.splits())
            .map(super::Codec::name)
            .collect();
        return Err(format!("a codec that splits ({})", can.join(", ")));
    }
    if elbyte > super::split::MAX_STREAMS {
        return Err(format!(
            "elements of at most {} bytes (these have {elbyte})",
            super::split::MAX_STREAMS
        ));
    }
    Ok(())
}

pub(crate) use crate::error::chunk_layout as bad;
