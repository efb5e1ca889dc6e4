//! `ra convert` between `.ra` and the table formats, Parquet and Arrow IPC (`.arrow`,
//! `.feather`), through rawarray-arrow: records stream in batches of `--batch-rows` rows (a
//! Parquet row group each), so memory stays bounded by one batch whatever the file's size.

use std::path::Path;

use rawarray_arrow::{ConvertOptions, ParquetCompression};

use crate::fail::{Failure, Result};
use crate::formats::{Format, Request};
use crate::progress::Progress;
use crate::source::is_stdio;

/// Runs the conversion if either side is a table format; `None` when neither is. `from` is
/// the input's format when `--from` or its name tells it.
pub fn maybe_run(req: &Request, to: Format, from: Option<Format>) -> Result<Option<()>> {
    let is_table = |f: Option<Format>| matches!(f, Some(Format::Parquet | Format::Arrow));
    if !is_table(Some(to)) && !is_table(from) {
        return Ok(None);
    }
    let (input, output) = (req.input, req.output);
    if is_stdio(input) || is_stdio(output) || crate::source::is_pipe(input) {
        return Err(Failure::usage(
            "convert",
            "Parquet and Arrow files are read and written by name, not through standard \
             input or output (a Parquet reader starts at the end of the file)",
        ));
    }
    let Some(from) = from else {
        return Err(Failure::usage(
            "convert",
            format!(
                "cannot tell the format of '{}' by its extension: give --from",
                input.display()
            ),
        ));
    };
    let storage = req.storage()?;
    if storage.is_some() && to != Format::Ra {
        return Err(Failure::usage(
            "convert",
            "--codec and the other packing options apply to .parquet/.arrow -> .ra",
        ));
    }
    let opts = ConvertOptions::new()
        .storage(storage.unwrap_or_default())
        .batch_rows(req.batch_rows)
        .compression(if req.zstd {
            ParquetCompression::Zstd(3)
        } else {
            ParquetCompression::Snappy
        });
    if req.zstd && to != Format::Parquet {
        return Err(Failure::usage(
            "convert",
            "--zstd applies to .parquet output only",
        ));
    }
    // The bar is made on the first batch, when the total is known.
    let mut bar: Option<(Progress, u64)> = None;
    let progress = |done: u64, total: u64| {
        let (p, shown) = bar.get_or_insert_with(|| (Progress::bytes(total, "convert"), 0));
        p.inc(done - *shown);
        *shown = done;
    };
    let converted = match (from, to) {
        (Format::Ra, Format::Parquet) => {
            rawarray_arrow::ra_to_parquet(input, output, &opts, progress)
        }
        (Format::Ra, Format::Arrow) => rawarray_arrow::ra_to_ipc(input, output, &opts, progress),
        (Format::Parquet, Format::Ra) => {
            rawarray_arrow::parquet_to_ra(input, output, &opts, progress)
        }
        (Format::Arrow, Format::Ra) => rawarray_arrow::ipc_to_ra(input, output, &opts, progress),
        _ => {
            return Err(Failure::usage(
                "convert",
                format!(
                    "no conversion {from:?} -> {to:?}: Parquet and Arrow convert to and from .ra"
                ),
            ))
        }
    };
    converted.map_err(|e| failure(e, input, output))?;
    let len = std::fs::metadata(output).map_or(0, |m| m.len());
    crate::report::done(format_args!(
        "{} -> {}: {}",
        input.display(),
        output.display(),
        crate::report::bytes(len)
    ));
    Ok(Some(()))
}

/// The error as one line naming the file it is about: the one the library named, else the
/// input (a column refused, a malformed file), except for failures to write.
fn failure(e: rawarray_arrow::Error, input: &Path, output: &Path) -> Failure {
    use rawarray_arrow::Error;
    match e {
        Error::InFile { path, source } => Failure::file(&path, source),
        Error::Ra(e) => match e.path() {
            Some(p) => Failure::file(p, e.kind()),
            None => Failure::file(input, e),
        },
        Error::Io(e) => Failure::file(output, e),
        e => Failure::file(input, e),
    }
}
