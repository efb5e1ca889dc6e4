//! `ra compress` / `ra decompress`: set or clear flag bit 1 (the data as one raw LZ4 block),
//! in place or to `-o OUT`, always through a temporary file. The byte order and the trailing
//! bytes are kept; a trailer block is placed again for where the data now ends (or, compressed,
//! marked as a copy whose place is not the data end: `at` 0, as the spare copy of a record file).

use std::path::Path;

use rawarray_serde::{DynArray, WriteOptions};

use crate::fail::{At, Result};
use crate::source::RaSource;
use crate::trailer::replace_for;

/// Writes `input` to `output` (or over itself) with its data compressed or not.
pub fn run(input: &Path, output: Option<&Path>, compress: bool) -> Result<()> {
    let stored = RaSource::open(input)?.header;
    let output = output.unwrap_or(input);
    if stored.is_compressed() == compress && output == input {
        return Ok(());
    }
    // One LZ4 block is made and undone in memory; the library reads and writes it.
    let mut array = DynArray::read_file(input).at(input)?;
    let data_end = if compress {
        0
    } else {
        (array.header().encoded_len() + array.data().len()) as u64
    };
    let trailing = replace_for(array.trailer_bytes().to_vec(), data_end);
    array.set_trailer_bytes(trailing);
    let opts = WriteOptions::new()
        .compress(compress)
        .big_endian(stored.is_big_endian());
    array.write_file_with(output, &opts).at(output)
}
