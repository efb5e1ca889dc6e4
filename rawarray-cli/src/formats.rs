//! What `ra convert` is asked: the formats it knows (told by a file's extension or
//! `--from`/`--to`) and the request the command line makes. Below `convert` and `table`,
//! which both take a request.

use std::path::Path;

use crate::fail::{Failure, Result};

/// A format `convert` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// RawArray.
    Ra,
    /// numpy's .npy.
    Npy,
    /// PNG image.
    Png,
    /// Comma-separated values.
    Csv,
    /// Apache Parquet (.parquet): records as a table, one column per field.
    #[cfg(feature = "arrow")]
    Parquet,
    /// Arrow IPC file (.arrow, .feather): records as a table, one column per field.
    #[cfg(feature = "arrow")]
    Arrow,
}

impl Format {
    pub(crate) fn ext(self) -> &'static str {
        match self {
            Format::Ra => "ra",
            Format::Npy => "npy",
            Format::Png => "png",
            Format::Csv => "csv",
            #[cfg(feature = "arrow")]
            Format::Parquet => "parquet",
            #[cfg(feature = "arrow")]
            Format::Arrow => "arrow",
        }
    }
}

pub(crate) fn format_of(path: &Path) -> Option<Format> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "ra" => Format::Ra,
        "npy" => Format::Npy,
        "png" => Format::Png,
        "csv" => Format::Csv,
        #[cfg(feature = "arrow")]
        "parquet" => Format::Parquet,
        #[cfg(feature = "arrow")]
        "arrow" | "feather" => Format::Arrow,
        _ => return None,
    })
}

/// What `ra convert` is asked.
pub struct Request<'a> {
    /// Input file, or `-` for standard input.
    pub input: &'a Path,
    /// Output file, or `-` for standard output.
    pub output: &'a Path,
    /// The input's format when its name does not say (`--from`).
    pub from: Option<Format>,
    /// The output's format when its name does not say (`--to`).
    pub to: Option<Format>,
    /// .png -> .ra: expand gray to RGB.
    pub rgb: bool,
    /// .png -> .ra: the most bytes the image may decode to.
    pub max_image_bytes: u64,
    /// .ra <-> .parquet/.arrow: rows per batch (and Parquet row group).
    #[cfg(feature = "arrow")]
    pub batch_rows: usize,
    /// .ra -> .parquet: zstd instead of snappy.
    #[cfg(feature = "arrow")]
    pub zstd: bool,
    /// .parquet/.arrow -> .ra: how the records are stored (`ra compress`'s options).
    pub packing: &'a crate::compress::PackingArgs,
}

impl Request<'_> {
    /// The storage the packing options ask for: `None` if none was given (a plain file).
    pub(crate) fn storage(&self) -> Result<Option<rawarray_serde::WriteOptions>> {
        let p = self.packing;
        if p.codec.is_none() && !p.has_chunk_settings() {
            return Ok(None);
        }
        p.or_defaults().chunk_options().map(Some).ok_or_else(|| {
            Failure::usage(
                "convert",
                "--codec lz4-whole: records are written chunked (one LZ4 block over the whole \
                 data section cannot be appended to); choose zstd, lz4, pco, huffman or none",
            )
        })
    }
}
