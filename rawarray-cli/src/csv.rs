//! `.ra` -> `.csv`: a 1-D array is one value per line; a 2-D array with dims `[d0, d1]` is
//! numpy's `(d1, d0)`: `d1` lines of `d0` comma-separated values (what `numpy.savetxt` of the
//! array read through the dims rule writes, up to number formatting). Complex values are
//! `a+bj`, as Python writes them and `numpy.loadtxt(dtype=complex)` reads them.

use std::path::Path;

use rawarray_serde::write_atomic;

use crate::fail::{At, Failure, Result};
use crate::progress::Progress;
use crate::source::RaSource;
use crate::value::Decoder;

/// Writes the CSV through a temporary file; nothing is left at `output` on failure.
pub fn ra_to_csv(input: &Path, output: &Path) -> Result<()> {
    let mut src = RaSource::open(input)?;
    let header = src.plain_header();
    let per_line = match header.dims[..] {
        [_] => 1,
        [d0, _] => d0.max(1),
        _ => {
            return Err(Failure::file(
                input,
                format!(
                    "dims {:?}: CSV holds 1-D and 2-D arrays (`ra reshape` first)",
                    header.dims
                ),
            ))
        }
    };
    let decoder = Decoder::new(header.eltype, header.elbyte);
    if !decoder.is_numeric() {
        return Err(Failure::file(
            input,
            format!("{} elements have no CSV form", header.type_label()),
        ));
    }
    let progress = Progress::bytes(header.data_len(), "convert");
    let elbyte = decoder.elbyte();
    // Failures inside the closure already name their file (input or output): keep them.
    let mut inner = None;
    let written = write_atomic(output, |w| {
        let mut column = 0u64;
        let mut text = String::new();
        let res = src.for_each_chunk(None, &progress, |chunk| {
            text.clear();
            for b in chunk.chunks_exact(elbyte) {
                decoder.decode(b).text_with_unit(&mut text, 'j');
                column += 1;
                if column == per_line {
                    text.push('\n');
                    column = 0;
                } else {
                    text.push(',');
                }
            }
            w.write_all(text.as_bytes()).at(output)
        });
        match res {
            Ok(()) => Ok(()),
            Err(e) => {
                inner = Some(e);
                Err(std::io::Error::other("conversion failed"))
            }
        }
    });
    match (inner, written) {
        (Some(e), _) => Err(e),
        (None, w) => w.at(output),
    }
}
