//! `ra compress` / `ra decompress`: write the data section chunked (flag bit 2: n-d chunks,
//! a shuffle filter and a codec, through the library's codec layer) or as one raw LZ4 block
//! (flag bit 1, `--codec lz4-whole`), or plain again, in place or to `-o OUT`, always through a
//! temporary file. The byte order and the trailing bytes are kept; a trailer block is placed
//! again for where the data now ends (or, LZ4 whole, marked as a copy whose place is not the
//! data end: `at` 0, as the spare copy of a record file).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::Path;

use rawarray_serde::atomic::AtomicFile;
use rawarray_serde::codec;
use rawarray_serde::header::LZ4_MAX_INPUT;
use rawarray_serde::{DynArray, Flags, Header, WriteOptions};

use crate::fail::{At, Failure, Result};
use crate::report;
use crate::source::RaSource;

/// How `ra compress` packs a data section (`--codec`): a codec of the library's table
/// ([`codec::table::CODECS`], chunked) or whole-section LZ4 ([`codec::table::LZ4_WHOLE`]).
/// Each says its own limits, which are checked from the header before any data is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// The chunked layout, each block through this codec.
    Chunked(codec::Codec),
    /// The whole data section as one raw LZ4 block (flag bit 1), as the C reference and Julia
    /// read it: at most 2,113,929,216 plain bytes; no chunks, no random access.
    Lz4Whole,
}

impl Default for Codec {
    fn default() -> Codec {
        Codec::Chunked(codec::Codec::default())
    }
}

/// `--codec`'s parser: the names and help lines come from the library's tables, so a codec
/// added there is offered here with no change.
#[derive(Clone, Copy, Debug)]
pub struct CodecParser;

impl clap::builder::TypedValueParser for CodecParser {
    type Value = Codec;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<Codec, clap::Error> {
        let text = value.to_string_lossy();
        if text.eq_ignore_ascii_case(codec::table::LZ4_WHOLE) {
            return Ok(Codec::Lz4Whole);
        }
        codec::Codec::parse(&text).map(Codec::Chunked).map_err(|_| {
            let arg = arg.map_or_else(|| "--codec".into(), ToString::to_string);
            let names: Vec<String> = self
                .possible_values()
                .into_iter()
                .flatten()
                .map(|v| v.get_name().to_string())
                .collect();
            clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!(
                    "invalid value '{text}' for '{arg}'\n  [possible values: {}]\n",
                    names.join(", ")
                ),
            )
            .with_cmd(cmd)
        })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let chunked = codec::table::CODECS
            .iter()
            .map(|c| clap::builder::PossibleValue::new(c.name).help(c.help));
        let whole = codec::table::STORAGES
            .iter()
            .filter(|s| s.name == codec::table::LZ4_WHOLE)
            .map(|s| clap::builder::PossibleValue::new(s.name).help(s.help));
        Some(Box::new(chunked.chain(whole)))
    }
}

/// `--filter`'s parser: `NAME` or `NAME:PARAM` of the library's filter table.
fn parse_filter(text: &str) -> std::result::Result<codec::Filter, String> {
    codec::Filter::parse(text).map_err(|e| e.to_string())
}

/// `--shuffle`'s parser: `byte`, `bit` or `none`, the one-filter shorthand.
fn parse_shuffle(text: &str) -> std::result::Result<codec::Shuffle, String> {
    codec::Shuffle::parse(text).map_err(|e| e.to_string())
}

/// The filters in the words of `--help`: every row of the library's table.
fn filter_help() -> String {
    let rows: Vec<String> = codec::table::FILTERS
        .iter()
        .map(|f| match f.param {
            Some(p) if f.param_optional => {
                format!("{}[:{}] ({})", f.name, p.to_uppercase(), f.help)
            }
            Some(p) => format!("{}:{} ({})", f.name, p.to_uppercase(), f.help),
            None => format!("{} ({})", f.name, f.help),
        })
        .collect();
    format!(
        "A filter before the codec, in order; repeat it or separate by commas for a pipeline \
         (--filter shuffle,bytedelta). Filters: {}. Default: shuffle",
        rows.join("; ")
    )
}

/// `--codec`, `--level`, `--filter`, `--shuffle`, `--chunks`, `--blocks`, `--layout-version`,
/// `--no-stats`, `--split`/`--no-split`, `--stream-crcs`/`--no-stream-crcs` and `--threads`: how a
/// data section is packed, as `ra compress` and `ra slice`
/// take them. One definition for both: `ra compress` gives `--codec` and the filters its
/// defaults (zstd, byte shuffle), `ra slice` takes what it is not given from its input.
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct PackingArgs {
    /// How the data section is packed.
    #[arg(long, value_parser = CodecParser)]
    pub codec: Option<Codec>,
    /// The codec's level (zstd and huffman: -7 to 22, 3 unless given; pco: 0 to 12, 8 unless
    /// given).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub level: Option<i32>,
    /// The filter pipeline, in order (see --help).
    #[arg(long = "filter", value_name = "NAME[:PARAM]", value_delimiter = ',',
          value_parser = parse_filter, long_help = filter_help(), conflicts_with = "shuffle")]
    pub filters: Vec<codec::Filter>,
    /// The one-filter shorthand: byte, bit or none (--filter shuffle, --filter bitshuffle, no
    /// filter).
    #[arg(long, value_name = "byte|bit|none", value_parser = parse_shuffle)]
    pub shuffle: Option<codec::Shuffle>,
    /// The chunk shape, one size per dim, as ra info lists dims (64,64,64).
    #[arg(long, value_name = "N,N,...", value_delimiter = ',')]
    pub chunks: Option<Vec<u64>>,
    /// The n-d block shape inside each chunk, one size per dim as for --chunks (a read of a
    /// box decodes only the blocks it crosses); default: from the element size and cache.
    #[arg(long, value_name = "N,N,...", value_delimiter = ',')]
    pub blocks: Option<Vec<u64>>,
    /// The chunked layout version to write: 2 (default) or 1 (RACHUNK1, for readers of
    /// rawarray 0.1: one shuffle, no statistics, no index checksums).
    #[arg(long, value_name = "1|2")]
    pub layout_version: Option<u32>,
    /// Write no per-chunk statistics (min, max, NaN count), which queries use to skip chunks.
    #[arg(long)]
    pub no_stats: bool,
    /// Compress each block as byte streams, a frame per byte plane (lz4, zstd, huffman; the
    /// default for zstd after a byte shuffle of 2- to 16-byte elements, with 128 KiB blocks,
    /// and for huffman, with 1 MiB blocks).
    #[arg(long, conflicts_with = "no_split")]
    pub split: bool,
    /// Compress each block as one stream (for readers older than byte streams).
    #[arg(long)]
    pub no_split: bool,
    /// Give each byte stream its own CRC-32 (doc/chunked.md 5.3), so that a read of some
    /// fields reads and checks only their streams (the default for records split in byte
    /// streams; only with byte streams).
    #[arg(long, conflicts_with = "no_stream_crcs")]
    pub stream_crcs: bool,
    /// Byte streams without their own CRCs (for readers older than them; the default for
    /// arrays).
    #[arg(long)]
    pub no_stream_crcs: bool,
    /// Threads compressing chunks (0: all cores).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: usize,
}

impl PackingArgs {
    /// What was asked, codec and filters defaulting as `ra compress`'s (zstd, byte shuffle).
    pub fn or_defaults(&self) -> Packing {
        Packing {
            codec: self.codec.unwrap_or_default(),
            level: self.level,
            filters: self.filters(),
            chunks: self.chunks.clone(),
            blocks: self.blocks.clone(),
            layout_version: self.layout_version,
            statistics: self.no_stats.then_some(false),
            split: self.split_setting(),
            stream_crcs: self.stream_crcs_setting(),
            threads: self.threads,
        }
    }

    /// `--split` or `--no-split`, `None` if neither.
    pub fn split_setting(&self) -> Option<bool> {
        on_or_off(self.split, self.no_split)
    }

    /// `--stream-crcs` or `--no-stream-crcs`, `None` if neither.
    pub fn stream_crcs_setting(&self) -> Option<bool> {
        on_or_off(self.stream_crcs, self.no_stream_crcs)
    }

    /// The filters asked for, by `--filter` or its `--shuffle` shorthand; `None` if neither.
    pub fn filters(&self) -> Option<Vec<codec::Filter>> {
        if !self.filters.is_empty() {
            return Some(self.filters.clone());
        }
        self.shuffle.map(codec::Shuffle::filters)
    }

    /// Whether any setting of the chunked layout was given (all but `--codec`, `--threads`).
    pub fn has_chunk_settings(&self) -> bool {
        self.level.is_some()
            || self.filters().is_some()
            || self.chunks.is_some()
            || self.blocks.is_some()
            || self.layout_version.is_some()
            || self.no_stats
            || self.split_setting().is_some()
            || self.stream_crcs_setting().is_some()
    }
}

/// A pair of flags `--X`/`--no-X` (clap refuses both at once) as a setting: `None` if neither.
fn on_or_off(on: bool, off: bool) -> Option<bool> {
    (on || off).then_some(on)
}

/// The chunked settings in words, as every command's stderr line says them:
/// `zstd level 3, filters [shuffle, bytedelta]` (a level only for codecs that have one).
pub(crate) fn describe_options(o: &WriteOptions) -> String {
    let c = o.get_codec();
    let level = match c.levels() {
        Some(_) => format!(" level {}", o.get_level()),
        None => String::new(),
    };
    let filters: Vec<String> = o.get_filters().iter().map(ToString::to_string).collect();
    let mut s = format!("{}{level}, filters [{}]", c.name(), filters.join(", "));
    if let Some(b) = o.get_blocks() {
        s += &format!(", blocks {b:?}");
    }
    match o.get_split() {
        Some(true) => s += ", byte streams",
        Some(false) => s += ", one stream a block",
        None => {}
    }
    if o.get_version() != 2 {
        s += &format!(", RACHUNK{}", o.get_version());
    }
    s
}

/// What `ra compress` was asked for: the codec and, for the chunked ones, its settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Packing {
    /// The codec.
    pub codec: Codec,
    /// The codec's level, if given.
    pub level: Option<i32>,
    /// The filters in order, if given (`None`: the library's default, byte shuffle).
    pub filters: Option<Vec<codec::Filter>>,
    /// The chunk shape in the header's dim order (as `ra info` lists dims), if given.
    pub chunks: Option<Vec<u64>>,
    /// The block shape in the header's dim order, if given.
    pub blocks: Option<Vec<u64>>,
    /// The layout version, if given.
    pub layout_version: Option<u32>,
    /// Whether per-chunk statistics are written (`None`: the library's default, on where the
    /// layout version holds them).
    pub statistics: Option<bool>,
    /// Whether blocks are compressed as byte streams (`None`: the library's default).
    pub split: Option<bool>,
    /// Whether each byte stream carries its own CRC-32 (`None`: the library's default; kept
    /// from an input only with its byte streams).
    pub stream_crcs: Option<bool>,
    /// Threads compressing chunks (0: all cores).
    pub threads: usize,
}

impl Packing {
    /// The library's write options of a chunked codec, `None` for the LZ4 whole block.
    pub(crate) fn chunk_options(&self) -> Option<WriteOptions> {
        let Codec::Chunked(c) = self.codec else {
            return None;
        };
        let mut o = WriteOptions::new().codec(c).threads(self.threads);
        if let Some(on) = self.statistics {
            o = o.statistics(on);
        }
        if let Some(on) = self.split {
            o = o.split(on);
        }
        if let Some(on) = self.stream_crcs {
            o = o.stream_crcs(on);
        }
        if let Some(f) = &self.filters {
            o = o.filters(f.clone());
        }
        if let Some(l) = self.level {
            o = o.level(l);
        }
        if let Some(c) = &self.chunks {
            o = o.chunks(c.clone());
        }
        if let Some(b) = &self.blocks {
            o = o.blocks(b.clone());
        }
        if let Some(v) = self.layout_version {
            o = o.layout_version(v);
        }
        Some(o)
    }

    /// An error naming the file unless this packing suits a data section of `dims` x
    /// `elbyte`: the LZ4 block's limit, or the chunk shape and level (checked by the codec
    /// layer's own config), before any data is read.
    pub(crate) fn check_fits(&self, input: &Path, header: &Header) -> Result<()> {
        let plain = header.data_len();
        if self.codec == Codec::Lz4Whole {
            if self.chunks.is_some()
                || self.level.is_some()
                || self.filters.is_some()
                || self.blocks.is_some()
                || self.layout_version.is_some()
                || self.split.is_some()
                || self.stream_crcs.is_some()
            {
                return Err(Failure::usage(
                    "compress",
                    "--codec lz4-whole is one LZ4 block: it takes no --chunks, --blocks, --level, \
                     --filter, --shuffle, --layout-version, --split, --no-split, --stream-crcs or \
                     --no-stream-crcs",
                ));
            }
            if plain > LZ4_MAX_INPUT {
                return Err(Failure::file(
                    input,
                    format!(
                        "{plain} data bytes do not fit one LZ4 block (--codec lz4-whole holds at \
                         most {LZ4_MAX_INPUT} bytes); nothing was read or written"
                    ),
                ));
            }
            return Ok(());
        }
        for (flag, shape) in [("--chunks", &self.chunks), ("--blocks", &self.blocks)] {
            if let Some(c) = shape {
                if c.len() != header.dims.len() {
                    return Err(Failure::file(
                        input,
                        format!(
                            "{flag} has {} sizes for {} dims {:?}: give one per dim, in the \
                             order ra info lists them",
                            c.len(),
                            header.dims.len(),
                            header.dims
                        ),
                    ));
                }
            }
        }
        if let Some(o) = self.chunk_options() {
            o.chunk_config(header, None).at(input)?;
        }
        Ok(())
    }
}

/// Writes `input` to `output` (or over itself) with its data packed as `packing` says, or
/// plain (`None`), and says what it did: a file already in the asked state is left alone in
/// place (a note, exit 0), except a chunked file asked to be chunked, which is re-encoded with
/// the settings given; a compression that makes the file larger is kept (the flag is what was
/// asked for, and `ra decompress` undoes it exactly) and noted.
pub fn run(input: &Path, output: Option<&Path>, packing: Option<&Packing>) -> Result<()> {
    let compress = packing.is_some();
    let chunk_opts = packing.and_then(Packing::chunk_options);
    let output = output.unwrap_or(input);
    let (verb, state) = if compress {
        ("compressed", "already compressed")
    } else {
        ("decompressed", "not compressed")
    };
    // The destination is locked first: in place, a writer appending to the file is refused
    // before anything is read, and none can start until the new file has replaced it.
    let mut out = AtomicFile::create(output).at(output)?;
    let mut src = RaSource::open(input)?;
    let stored = src.header.clone();
    let packed = src.is_packed();
    // Already as asked: plain to plain, LZ4 whole to LZ4 whole. A chunked target always
    // re-encodes, since its settings may differ from the file's.
    let as_asked = match &chunk_opts {
        Some(o) => o.stores_as(src.storage()),
        None => WriteOptions::new()
            .compress(compress)
            .stores_as(src.storage()),
    };
    if as_asked && output == input {
        report::note(format_args!("{}: {state}; left as it is", input.display()));
        return Ok(());
    }
    if let Some(p) = packing {
        p.check_fits(input, &stored)?;
    }
    let mut info = src.trailer_info();
    // Rounded now (a lossy filter): the trailer says so, a new one if the file had none. An
    // earlier mark is kept by every rewrite, lossless ones included (it is in the trailer).
    if let Some(o) = &chunk_opts {
        if o.get_filters().iter().any(|f| f.is_lossy()) {
            if info.trailer.is_none() && info.bytes > 0 {
                return Err(Failure::file(
                    input,
                    "a lossy filter needs a trailer to say the data were rounded, and the bytes \
                     after the data are not one (another program's): nothing was written",
                ));
            }
            info.trailer
                .get_or_insert_with(|| {
                    rawarray_serde::Trailer::new(serde_json::Value::Null).expect("null")
                })
                .mark_lossy(&o.get_filters());
        }
    }
    let data_end = if let Some(opts) = &chunk_opts {
        let schema = info.trailer.as_ref().and_then(|t| t.schema.clone());
        encode_chunked(&mut src, opts, schema.as_ref(), out.file(), output)?
    } else if !compress && packed {
        decode_streamed(&mut src, out.file(), output)?
    } else {
        // One LZ4 block is made in memory (the block format needs all of its input at once),
        // the library reading and writing it, its allocations fallible. Only the header and
        // the data are read: trailing bytes are copied (streamed) after them. A chunked input
        // is decoded through the codec layer first.
        let array = if src.storage().has_chunk_index() {
            let h = src.plain_header();
            let data = src.read_all()?;
            DynArray::new(h.eltype, h.elbyte, h.dims, data).at(input)?
        } else {
            // The file the header was read from, from its start: never the path again.
            let mut file = src.file();
            file.rewind().at(input)?;
            let section = BufReader::new(file).take(src.data_end());
            DynArray::read_from(section).at(input)?
        };
        let data_end = if compress {
            0
        } else {
            (array.header().encoded_len() + array.data().len()) as u64
        };
        let opts = WriteOptions::new()
            .compress(compress)
            .big_endian(stored.is_big_endian());
        let mut w = BufWriter::new(out.file());
        array.write_to_with(&mut w, &opts).at(output)?;
        w.flush().at(output)?;
        data_end
    };
    src.copy_trailing(&info, data_end, out.file(), output)?;
    let new_len = out.file().metadata().at(output)?.len();
    out.commit().at(output)?;
    let target = if output == input {
        String::new()
    } else {
        format!(" -> {}", output.display())
    };
    if as_asked {
        report::note(format_args!(
            "{}: {state}; copied as it is{target}",
            input.display()
        ));
    } else {
        let how = match &chunk_opts {
            Some(o) => format!(" ({})", describe_options(o)),
            None => String::new(),
        };
        report::done(format_args!(
            "{}{target}: {verb}{how}, {} -> {}",
            crate::names::shown(input),
            report::bytes(src.file_len),
            report::bytes(new_len)
        ));
        if compress && new_len > src.file_len {
            report::note(format_args!(
                "{}: compression made the file larger ({} more bytes); kept as written \
                 (ra decompress undoes it)",
                output.display(),
                new_len - src.file_len
            ));
        }
    }
    Ok(())
}

/// Writes `src` chunked with `opts` through the codec layer: the plain data (decoded first if
/// `src` is packed, in the file's byte order) is encoded whole, chunks on `opts`' threads;
/// `schema` (a record file's) says which fields statistics are kept for. Returns where the
/// data section ends.
fn encode_chunked(
    src: &mut RaSource,
    opts: &WriteOptions,
    schema: Option<&rawarray_serde::Layout>,
    out: &mut File,
    output: &Path,
) -> Result<u64> {
    let input = src.path().to_path_buf();
    let mut plain = src.header.clone();
    plain.flags = plain
        .flags
        .with(Flags::COMPRESSED, false)
        .with(Flags::CHUNKED, false);
    plain.size = plain.data_len();
    let mut data = Vec::new();
    let len = usize::try_from(plain.size).unwrap_or(usize::MAX);
    data.try_reserve_exact(len).map_err(|_| {
        Failure::file(
            &input,
            format!("{} data bytes do not fit in memory", plain.size),
        )
    })?;
    src.for_each_stored_chunk(&crate::progress::Progress::hidden(), |c| {
        data.extend_from_slice(c);
        Ok(())
    })?;
    let (header, section) = codec::encode_with(&plain, &data, opts, schema).at(&input)?;
    drop(data);
    let mut w = BufWriter::new(out);
    w.write_all(&header.encode()).at(output)?;
    w.write_all(&section).at(output)?;
    w.flush().at(output)?;
    Ok(header.encoded_len() as u64 + header.size)
}

/// Writes the header and the decoded data of the packed (chunked or whole-LZ4) `src` to
/// `out`, in the file's byte order, a piece at a time through the library's section reader:
/// the memory held is a slab of chunks or the LZ4 decoder's window, whatever the data's size.
/// Returns where the data section ends.
fn decode_streamed(src: &mut RaSource, out: &mut File, output: &Path) -> Result<u64> {
    let mut header = src.header.clone();
    header.flags = header
        .flags
        .with(Flags::COMPRESSED, false)
        .with(Flags::CHUNKED, false);
    header.size = header.data_len();
    let mut w = BufWriter::new(out);
    w.write_all(&header.encode()).at(output)?;
    src.for_each_stored_chunk(&crate::progress::Progress::hidden(), |c| {
        w.write_all(c).at(output)
    })?;
    w.flush().at(output)?;
    Ok(header.encoded_len() as u64 + header.size)
}
