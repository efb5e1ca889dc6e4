//! `ra compress` / `ra decompress`: set or clear flag bit 1 (the data as one raw LZ4 block),
//! in place or to `-o OUT`, always through a temporary file. The byte order and the trailing
//! bytes are kept; a trailer block is placed again for where the data now ends (or, compressed,
//! marked as a copy whose place is not the data end: `at` 0, as the spare copy of a record file).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use rawarray_serde::atomic::AtomicFile;
use rawarray_serde::{DynArray, WriteOptions};

use crate::fail::{At, Result};
use crate::report;
use crate::source::RaSource;

/// Writes `input` to `output` (or over itself) with its data compressed or not, and says
/// what it did: a file already in the asked state is left alone in place (a note, exit 0); a
/// compression that makes the file larger is kept (the flag is what was asked for, and
/// `ra decompress` undoes it exactly) and noted.
pub fn run(input: &Path, output: Option<&Path>, compress: bool) -> Result<()> {
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
    let info = src.trailer_info();
    // One LZ4 block is made and undone in memory; the library reads and writes it. Only the
    // header and the data are read: trailing bytes are copied (streamed) after them.
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
    {
        let mut w = BufWriter::new(out.file());
        array.write_to_with(&mut w, &opts).at(output)?;
        w.flush().at(output)?;
    }
    drop(array);
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
