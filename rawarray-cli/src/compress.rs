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
use rawarray_serde::codec::{self, ChunkOptions};
use rawarray_serde::header::LZ4_MAX_INPUT;
use rawarray_serde::{DynArray, Flags, Header, WriteOptions};

use crate::fail::{At, Failure, Result};
use crate::report;
use crate::source::{RaSource, CHUNK};

/// How `ra compress` packs a data section (`--codec`). Each codec says its own limits, which
/// are checked from the header before any data is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Codec {
    /// Chunked, each block a zstd frame (`--level`, default 3).
    #[default]
    Zstd,
    /// Chunked, each block a raw LZ4 block.
    Lz4,
    /// Chunked, blocks stored as they are (the shuffle and chunk index still apply).
    None,
    /// The whole data section as one raw LZ4 block (flag bit 1), as the C reference and Julia
    /// read it: at most 2,113,929,216 plain bytes; no chunks, no random access.
    Lz4Whole,
}

/// The filter each block goes through before its codec (`--shuffle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Shuffle {
    /// Byte shuffle by the element size (a record is shuffled as a whole).
    #[default]
    Byte,
    /// Bit shuffle by the element size.
    Bit,
    /// No filter.
    None,
}

/// `--codec`, `--level`, `--shuffle`, `--chunks` and `--threads`: how a data section is
/// packed, as `ra compress` and `ra slice` take them. One definition for both: `ra compress`
/// gives `--codec` and `--shuffle` its defaults (zstd, byte), `ra slice` takes what it is not
/// given from its input.
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct PackingArgs {
    /// How the data section is packed.
    #[arg(long, value_enum)]
    pub codec: Option<Codec>,
    /// The codec's level (zstd: 1 to 22, negative for faster; 3 unless given).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub level: Option<i32>,
    /// The filter before the codec.
    #[arg(long, value_enum)]
    pub shuffle: Option<Shuffle>,
    /// The chunk shape, one size per dim, as ra info lists dims (64,64,64).
    #[arg(long, value_name = "N,N,...", value_delimiter = ',')]
    pub chunks: Option<Vec<u64>>,
    /// Threads compressing chunks (0: all cores).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: usize,
}

impl PackingArgs {
    /// What was asked, codec and filter defaulting as `ra compress`'s (zstd, byte shuffle).
    pub fn or_defaults(&self) -> Packing {
        Packing {
            codec: self.codec.unwrap_or_default(),
            level: self.level,
            shuffle: self.shuffle.unwrap_or_default(),
            chunks: self.chunks.clone(),
            threads: self.threads,
        }
    }

    /// Whether any of `--level`, `--shuffle` or `--chunks` was given: settings of the chunked
    /// layout.
    pub fn has_chunk_settings(&self) -> bool {
        self.level.is_some() || self.shuffle.is_some() || self.chunks.is_some()
    }
}

/// The chunked settings in words, as every command's stderr line and `ra info` say them:
/// `zstd level 3, byte shuffle` (a level only for the codec that has one).
pub(crate) fn describe_options(o: &ChunkOptions) -> String {
    let level = match o.get_codec() {
        codec::Codec::Zstd => format!(" level {}", o.get_level()),
        _ => String::new(),
    };
    format!(
        "{}{level}, {} shuffle",
        o.get_codec().name(),
        o.get_shuffle().name()
    )
}

/// What `ra compress` was asked for: the codec and, for the chunked ones, its settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Packing {
    /// The codec.
    pub codec: Codec,
    /// The codec's level (zstd), if given.
    pub level: Option<i32>,
    /// The filter.
    pub shuffle: Shuffle,
    /// The chunk shape in the header's dim order (as `ra info` lists dims), if given.
    pub chunks: Option<Vec<u64>>,
    /// Threads compressing chunks (0: all cores).
    pub threads: usize,
}

impl Packing {
    /// The library's chunk options, `None` for the LZ4 whole block.
    pub(crate) fn chunk_options(&self) -> Option<ChunkOptions> {
        let codec = match self.codec {
            Codec::Zstd => codec::Codec::Zstd,
            Codec::Lz4 => codec::Codec::Lz4,
            Codec::None => codec::Codec::None,
            Codec::Lz4Whole => return None,
        };
        let shuffle = match self.shuffle {
            Shuffle::Byte => codec::Shuffle::Byte,
            Shuffle::Bit => codec::Shuffle::Bit,
            Shuffle::None => codec::Shuffle::None,
        };
        let mut o = ChunkOptions::new()
            .codec(codec)
            .shuffle(shuffle)
            .threads(self.threads);
        if let Some(l) = self.level {
            o = o.level(l);
        }
        if let Some(c) = &self.chunks {
            o = o.chunks(c.clone());
        }
        Some(o)
    }

    /// An error naming the file unless this packing suits a data section of `dims` x
    /// `elbyte`: the LZ4 block's limit, or the chunk shape and level (checked by the codec
    /// layer's own config), before any data is read.
    pub(crate) fn check_fits(&self, input: &Path, header: &Header) -> Result<()> {
        let plain = header.data_len();
        if self.codec == Codec::Lz4Whole {
            if self.chunks.is_some() || self.level.is_some() || self.shuffle != Shuffle::Byte {
                return Err(Failure::usage(
                    "compress",
                    "--codec lz4-whole is one LZ4 block: it takes no --chunks, --level or --shuffle",
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
        if let Some(c) = &self.chunks {
            if c.len() != header.dims.len() {
                return Err(Failure::file(
                    input,
                    format!(
                        "--chunks has {} sizes for {} dims {:?}: give one per dim, in the order \
                         ra info lists them",
                        c.len(),
                        header.dims.len(),
                        header.dims
                    ),
                ));
            }
        }
        if let Some(o) = self.chunk_options() {
            o.config(&header.dims, header.elbyte, 0).at(input)?;
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
        Some(_) => false,
        None if compress => stored.is_compressed(),
        None => !packed,
    };
    if as_asked && output == input {
        report::note(format_args!("{}: {state}; left as it is", input.display()));
        return Ok(());
    }
    if let Some(p) = packing {
        p.check_fits(input, &stored)?;
    }
    let info = src.trailer_info();
    let data_end = if let Some(opts) = &chunk_opts {
        encode_chunked(&mut src, opts, out.file(), output)?
    } else if !compress && packed {
        if stored.flags.is_chunked() {
            decode_chunked(&mut src, out.file(), output)?
        } else {
            decompress_streamed(&mut src, out.file(), output)?
        }
    } else {
        // One LZ4 block is made in memory (the block format needs all of its input at once),
        // the library reading and writing it, its allocations fallible. Only the header and
        // the data are read: trailing bytes are copied (streamed) after them. A chunked input
        // is decoded through the codec layer first.
        let array = if stored.flags.is_chunked() {
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
            crate::source::shown(input),
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
/// `src` is packed, in the file's byte order) is encoded whole, chunks on `opts`' threads.
/// Returns where the data section ends.
fn encode_chunked(
    src: &mut RaSource,
    opts: &ChunkOptions,
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
    let (header, section) = codec::encode(&plain, &data, opts).at(&input)?;
    drop(data);
    let mut w = BufWriter::new(out);
    w.write_all(&header.encode()).at(output)?;
    w.write_all(&section).at(output)?;
    w.flush().at(output)?;
    Ok(header.encoded_len() as u64 + header.size)
}

/// Writes the header and the decoded data of the chunked `src` to `out`, a slab of chunks at
/// a time, in the file's byte order. Returns where the data section ends.
fn decode_chunked(src: &mut RaSource, out: &mut File, output: &Path) -> Result<u64> {
    let mut header = src.header.clone();
    header.flags = header.flags.with(Flags::CHUNKED, false);
    header.size = header.data_len();
    let mut w = BufWriter::new(out);
    w.write_all(&header.encode()).at(output)?;
    src.for_each_stored_chunk(&crate::progress::Progress::hidden(), |c| {
        w.write_all(c).at(output)
    })?;
    w.flush().at(output)?;
    Ok(header.encoded_len() as u64 + header.size)
}

/// Writes the header and the decoded data section of the compressed `src` to `out`, decoded as
/// a stream: the memory held is the decoder's window and one chunk, whatever the data's size
/// (the block and its decoded copy are never held together). The byte order is kept. Returns
/// where the data section ends.
fn decompress_streamed(src: &mut RaSource, out: &mut File, output: &Path) -> Result<u64> {
    let mut header = src.header.clone();
    header.flags = header.flags.with(Flags::COMPRESSED, false);
    header.size = header.data_len();
    let mut w = BufWriter::new(out);
    w.write_all(&header.encode()).at(output)?;
    let input = src.path().to_path_buf();
    let elbyte = usize::try_from(header.elbyte).unwrap_or(usize::MAX);
    let (file, size) = src.data_file()?;
    let block = BufReader::with_capacity(1 << 16, file.take(size));
    let decoded = crate::lz4::decode(block, header.size, header.size, elbyte, CHUNK, |chunk| {
        w.write_all(chunk).at(output)
    });
    match decoded {
        Ok(()) => {}
        Err(crate::lz4::Stop::Callback(e)) => return Err(e),
        Err(crate::lz4::Stop::Decode(e)) => return Err(Failure::file(&input, e)),
    }
    w.flush().at(output)?;
    Ok(header.encoded_len() as u64 + header.size)
}
