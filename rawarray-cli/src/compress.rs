//! `ra compress` / `ra decompress`: set or clear flag bit 1 (the data as one raw LZ4 block),
//! in place or to `-o OUT`, always through a temporary file. The byte order and the trailing
//! bytes are kept; a trailer block is placed again for where the data now ends (or, compressed,
//! marked as a copy whose place is not the data end: `at` 0, as the spare copy of a record file).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use rawarray_serde::atomic::AtomicFile;
use rawarray_serde::header::LZ4_MAX_INPUT;
use rawarray_serde::{DynArray, Flags, WriteOptions};

use crate::fail::{At, Failure, Result};
use crate::report;
use crate::source::{RaSource, CHUNK};

/// How `ra compress` packs a data section (`--codec`). Each codec says its own limits, which
/// are checked from the header before any data is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Codec {
    /// The whole data section as one raw LZ4 block (flag bit 1), as the C reference writes it:
    /// at most 2,113,929,216 plain bytes.
    #[default]
    Lz4Whole,
}

impl Codec {
    /// An error naming the file unless this codec can pack a data section of `plain` bytes.
    fn check_fits(self, input: &Path, plain: u64) -> Result<()> {
        match self {
            Codec::Lz4Whole if plain > LZ4_MAX_INPUT => Err(Failure::file(
                input,
                format!(
                    "{plain} data bytes do not fit one LZ4 block (--codec lz4-whole holds at \
                     most {LZ4_MAX_INPUT} bytes); nothing was read or written"
                ),
            )),
            Codec::Lz4Whole => Ok(()),
        }
    }
}

/// Writes `input` to `output` (or over itself) with its data compressed by `codec`, or
/// decompressed (`None`), and says what it did: a file already in the asked state is left
/// alone in place (a note, exit 0); a compression that makes the file larger is kept (the flag
/// is what was asked for, and `ra decompress` undoes it exactly) and noted.
pub fn run(input: &Path, output: Option<&Path>, codec: Option<Codec>) -> Result<()> {
    let compress = codec.is_some();
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
    if stored.is_compressed() == compress && output == input {
        report::note(format_args!("{}: {state}; left as it is", input.display()));
        return Ok(());
    }
    if let Some(codec) = codec {
        codec.check_fits(input, stored.data_len())?;
    }
    let info = src.trailer_info();
    let data_end = if !compress && stored.is_compressed() {
        decompress_streamed(&mut src, out.file(), output)?
    } else {
        // One LZ4 block is made in memory (the block format needs all of its input at once),
        // the library reading and writing it, its allocations fallible. Only the header and
        // the data are read: trailing bytes are copied (streamed) after them.
        let file = File::open(input).at(input)?;
        let section = BufReader::new(file).take(src.data_end());
        let array = DynArray::read_from(section).at(input)?;
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
    if stored.is_compressed() == compress {
        report::note(format_args!(
            "{}: {state}; copied as it is{target}",
            input.display()
        ));
    } else {
        report::done(format_args!(
            "{}{target}: {verb}, {} -> {}",
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
