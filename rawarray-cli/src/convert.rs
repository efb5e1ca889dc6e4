//! `ra convert IN OUT`: the formats are told by the file extensions.

use std::path::Path;

use crate::fail::{Failure, Result};
use crate::{image, npy};

/// A format `convert` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Ra,
    Npy,
    Png,
    Csv,
}

fn format_of(path: &Path) -> Option<Format> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "ra" => Format::Ra,
        "npy" => Format::Npy,
        "png" => Format::Png,
        "csv" => Format::Csv,
        _ => return None,
    })
}

/// Converts `input` to `output`; `rgb` expands gray PNGs to RGB; a PNG may decode to at most
/// `max_image_bytes`.
pub fn run(input: &Path, output: &Path, rgb: bool, max_image_bytes: u64) -> Result<()> {
    let (Some(from), Some(to)) = (format_of(input), format_of(output)) else {
        return Err(Failure::usage(
            "convert",
            format!(
            "cannot tell the formats of '{}' -> '{}' by their extensions (.ra, .npy, .png, .csv)",
            input.display(),
            output.display()
        ),
        ));
    };
    if rgb && (from, to) != (Format::Png, Format::Ra) {
        return Err(Failure::usage(
            "convert",
            "--rgb applies to .png -> .ra only",
        ));
    }
    let converted = match (from, to) {
        (Format::Ra, Format::Npy) => npy::ra_to_npy(input, output),
        (Format::Npy, Format::Ra) => npy::npy_to_ra(input, output),
        (Format::Ra, Format::Png) => image::ra_to_png(input, output),
        (Format::Png, Format::Ra) => image::png_to_ra(input, output, rgb, max_image_bytes),
        (Format::Ra, Format::Csv) => crate::csv::ra_to_csv(input, output),
        (Format::Csv, Format::Ra) => crate::csv::csv_to_ra(input, output),
        _ => Err(Failure::usage(
            "convert",format!(
            "no conversion {from:?} -> {to:?}: supported are .ra <-> .npy, .ra <-> .png, .ra <-> .csv"
        ))),
    };
    converted?;
    let len = std::fs::metadata(output).map_or(0, |m| m.len());
    crate::report::done(format_args!(
        "{} -> {}: {}",
        input.display(),
        output.display(),
        crate::report::bytes(len)
    ));
    Ok(())
}
