//! `ra reshape FILE DIM...`: new dims over the same elements. The data and trailing bytes are
//! copied as they are (compressed or not), behind the new header, through a temporary file.

use std::io::Write;
use std::path::Path;

use rawarray_serde::{AtomicFile, Header};

use crate::fail::{At, Failure, Result};
use crate::npy::copy_exact;
use crate::progress::Progress;
use crate::source::RaSource;

/// Rewrites `input` (or writes `output`) with `dims`, whose product must be the element count.
pub fn run(input: &Path, dims: &[u64], output: Option<&Path>) -> Result<()> {
    let mut src = RaSource::open(input)?;
    let old = src.header.clone();
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
    let output = output.unwrap_or(input);
    let rest = old.size + src.trailer_len();
    let progress = Progress::bytes(rest, "reshape");
    let mut out = AtomicFile::create(output).at(output)?;
    out.file().write_all(&new.encode()).at(output)?;
    let (file, _) = src.data_file()?;
    copy_exact(file, input, out.file(), output, rest, &progress)?;
    out.commit().at(output)
}
