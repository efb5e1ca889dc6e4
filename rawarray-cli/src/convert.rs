//! `ra convert IN OUT`: the formats are told by the file extensions, or `--from`/`--to`;
//! `-` is standard input or output.

use std::io::{IsTerminal, Write};
use std::path::Path;

use crate::fail::{At, Failure, Result};
use crate::source::{self, is_stdio};
use crate::{image, npy};

/// The table formats in the usage errors, when built in.
#[cfg(feature = "arrow")]
const TABLES: &str = "|parquet|arrow";
#[cfg(not(feature = "arrow"))]
const TABLES: &str = "";
#[cfg(feature = "arrow")]
const TABLE_EXTS: &str = ", .parquet, .arrow, .feather";
#[cfg(not(feature = "arrow"))]
const TABLE_EXTS: &str = "";
#[cfg(feature = "arrow")]
const TABLE_EXTS_PAIRS: &str = ", .ra <-> .parquet, .ra <-> .arrow/.feather";
#[cfg(not(feature = "arrow"))]
const TABLE_EXTS_PAIRS: &str = "";

use crate::formats::format_of;
pub use crate::formats::{Format, Request};

/// Converts `input` to `output` (either may be `-`); the formats are `--from`/`--to` or the
/// extensions. Standard output gets the converted bytes only once the whole conversion has
/// succeeded (it is written to a temporary file first): a failure writes nothing there.
pub fn run(req: &Request, out: &mut dyn Write) -> Result<()> {
    let (input, output) = (req.input, req.output);
    let which = |fixed: Option<Format>, path: &Path, side: &str, flag: &str| {
        fixed.or_else(|| format_of(path)).ok_or_else(|| {
            let name = if is_stdio(path) {
                format!("{side} (-) has no name to tell it by")
            } else {
                format!(
                    "cannot tell the format of '{}' by its extension",
                    path.display()
                )
            };
            Failure::usage(
                "convert",
                format!(
                    "{name}: give {flag} ra|npy|png|csv{TABLES} (or name the file .ra, .npy, .png, .csv{TABLE_EXTS})"
                ),
            )
        })
    };
    let to = which(req.to, output, "standard output", "--to")?;
    #[cfg(feature = "arrow")]
    if let Some(done) = crate::table::maybe_run(
        req,
        to,
        which(req.from, input, "standard input", "--from").ok(),
    )? {
        return Ok(done);
    }
    // Binary bytes on a terminal are noise that can upset it; CSV is text (as zstd and gzip
    // refuse to write compressed data to a terminal).
    if is_stdio(output) && to != Format::Csv && std::io::stdout().is_terminal() {
        return Err(Failure::usage(
            "convert",
            format!(
                "standard output is a terminal: {} is binary; redirect it (> file) or pipe it",
                to.ext()
            ),
        ));
    }
    // Standard input or a pipe without --from: its first bytes tell .ra, .npy and .png apart
    // (CSV has no signature); they are read before anything is copied.
    let sniffed = match req.from {
        None if source::is_stream(input) => source::sniff(input)?.map(|k| match k {
            source::Kind::Ra => Format::Ra,
            source::Kind::Npy => Format::Npy,
            source::Kind::Png => Format::Png,
            source::Kind::Csv => Format::Csv,
        }),
        _ => None,
    };
    let from = which(req.from.or(sniffed), input, "standard input", "--from")?;
    let kind = match from {
        Format::Ra => source::Kind::Ra,
        Format::Npy => source::Kind::Npy,
        Format::Png => source::Kind::Png,
        Format::Csv => source::Kind::Csv,
        #[cfg(feature = "arrow")]
        Format::Parquet | Format::Arrow => unreachable!("table::maybe_run converts them"),
    };
    if req.storage()?.is_some() {
        return Err(Failure::usage(
            "convert",
            format!(
                "--codec and the other packing options apply to .parquet/.arrow -> .ra: compress \
                 a .ra converted from .{} with `ra compress`",
                from.ext()
            ),
        ));
    }
    if req.rgb && (from, to) != (Format::Png, Format::Ra) {
        return Err(Failure::usage(
            "convert",
            "--rgb applies to .png -> .ra only",
        ));
    }
    let source = source::input_as(input, kind)?;
    // Standard output: the conversion writes an unlinked temporary file (nothing is left
    // behind however ra ends), which is copied once it has succeeded.
    let spool = is_stdio(output);
    let target = if spool {
        crate::output::make_spool().at(Path::new("<stdout>"))?
    } else {
        output.to_path_buf()
    };
    let (input_path, output_path) = (source.as_path(), target.as_path());
    let rows = |_: &mut dyn Write| match to {
        Format::Npy => Err(crate::ragged::refuse_npy(input)),
        Format::Csv => crate::ragged::to_csv(input_path, output_path),
        _ => Err(Failure::file(
            input,
            format!(
                "a ragged array has no .{} form: convert it to .csv",
                to.ext()
            ),
        )),
    };
    let unsupported = || {
        Err(Failure::usage(
            "convert",
            format!(
                "no conversion {from:?} -> {to:?}: supported are .ra <-> .npy, .ra <-> .png, .ra <-> .csv{TABLE_EXTS_PAIRS}"
            ),
        ))
    };
    let array = |_: &mut dyn Write| match to {
        Format::Npy => npy::ra_to_npy(input_path, output_path),
        Format::Png => image::ra_to_png(input_path, output_path),
        Format::Csv => crate::csv::ra_to_csv(input_path, output_path),
        _ => unsupported(),
    };
    let converted = match (from, to) {
        (Format::Ra, _) => source::by_holds(input_path, out, array, rows),
        (Format::Npy, Format::Ra) => npy::npy_to_ra(input_path, output_path),
        (Format::Png, Format::Ra) => {
            image::png_to_ra(input_path, output_path, req.rgb, req.max_image_bytes)
        }
        (Format::Csv, Format::Ra) => crate::csv::csv_to_ra(input_path, output_path),
        _ => unsupported(),
    };
    // Errors about the temporary output name standard output.
    converted.map_err(|e| match e {
        Failure::File { path, message } if spool && Path::new(&path) == target => Failure::File {
            path: "<stdout>".into(),
            message,
        },
        e => e,
    })?;
    let len = match crate::output::take_spool().at(Path::new("<stdout>"))? {
        Some(mut file) => {
            let n = std::io::copy(&mut file, out).map_err(Failure::stdout)?;
            out.flush().map_err(Failure::stdout)?;
            n
        }
        None => std::fs::metadata(output).map_or(0, |m| m.len()),
    };
    let name = |p: &Path, std: &'static str| {
        if is_stdio(p) {
            std.to_string()
        } else {
            p.display().to_string()
        }
    };
    crate::report::done(format_args!(
        "{} -> {}: {}",
        name(input, "<stdin>"),
        name(output, "<stdout>"),
        crate::report::bytes(len)
    ));
    Ok(())
}
