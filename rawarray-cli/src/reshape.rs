//! `ra reshape FILE DIM...`: new dims over the same elements. The data is copied as it is
//! (compressed or not) behind the new header, through a temporary file, then the trailing
//! bytes (a trailer block placed again for the new data end).

use std::io::Write;
use std::path::Path;

use rawarray_serde::atomic::AtomicFile;
use rawarray_serde::Header;

use crate::fail::{At, Failure, Result};
use crate::npy::copy_exact;
use crate::progress::Progress;
use crate::source::RaSource;

/// Rewrites `input` (or writes `output`) with `dims`, whose product must be the element count.
pub fn run(input: &Path, dims: &[u64], output: Option<&Path>) -> Result<()> {
    let output = output.unwrap_or(input);
    // Locked before reading (see `compress`): no writer appends to it while it is copied.
    let mut out = AtomicFile::create(output).at(output)?;
    let mut src = RaSource::open(input)?;
    let old = src.header.clone();
    if src.storage().has_chunk_index() {
        // The chunked section's config and index are laid out for the old dims: copied behind
        // new ones, they would describe chunks the data does not hold.
        return Err(Failure::file(
            input,
            "is chunked (flag bit 2): its chunks are laid out for its dims; `ra decompress` it \
             first, reshape, then `ra compress` again",
        ));
    }
    let count = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    if count != Some(old.num_elements()) {
        return Err(Failure::file(
            input,
            format!(
                "cannot reshape {:?} ({} elements) to {dims:?} ({} elements)",
                old.dims,
                old.num_elements(),
                count.map_or_else(|| "too many".to_string(), |c| c.to_string()),
            ),
        ));
    }
    let new = Header {
        dims: dims.to_vec(),
        ..old.clone()
    };
    new.validate().at(input)?;
    let info = src.trailer_info();
    let progress = Progress::bytes(old.size, "reshape");
    out.file().write_all(&new.encode()).at(output)?;
    let (file, size) = src.data_file()?;
    copy_exact(file, input, out.file(), output, size, &progress)?;
    src.copy_trailing(
        &info,
        new.encoded_len() as u64 + new.size,
        out.file(),
        output,
    )?;
    out.commit().at(output)?;
    let target = if output == input {
        String::new()
    } else {
        format!(" -> {}", output.display())
    };
    crate::report::done(format_args!(
        "{}{target}: dims {:?} -> {dims:?}",
        crate::names::shown(input),
        old.dims
    ));
    Ok(())
}
