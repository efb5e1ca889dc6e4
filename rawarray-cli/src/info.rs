//! `ra info`: the header of each file in words, or as one JSON object per file.

use rawarray_serde::section::Storage;
use std::io::Write;
use std::path::{Path, PathBuf};

use rawarray_serde::numpy::dtype_or_reason as numpy_dtype_or_reason;
use rawarray_serde::Header;
use serde::Serialize;

use crate::fail::{Failure, Result};
use crate::source::RaSource;
use crate::trailer::TrailerInfo;

/// The `--json` object: the header's fields as the format names them, then what follows.
#[derive(Serialize)]
struct InfoJson<'a> {
    file: String,
    flags: u64,
    eltype: u64,
    elbyte: u64,
    size: u64,
    ndims: usize,
    /// In the file's order: the first varies fastest.
    dims: &'a [u64],
    /// numpy's shape of the array: `dims` reversed.
    numpy_shape: Vec<u64>,
    big_endian: bool,
    /// True for any compressed data section: one LZ4 block (flag bit 1) or chunked (bit 2).
    compressed: bool,
    /// `zstd`, `lz4` or `none` (chunked), `lz4-whole` (flag bit 1), `null` for plain data.
    codec: Option<&'static str>,
    /// The chunk shape in the order of `dims`, `null` unless chunked.
    chunks: Option<&'a [u64]>,
    /// The chunk shape in numpy's order (`chunks` reversed), `null` unless chunked.
    numpy_chunks: Option<Vec<u64>>,
    /// The filter before the codec (`byte`, `bit`, `none`), `null` unless chunked.
    shuffle: Option<&'static str>,
    /// The codec's level as stored, `null` unless chunked.
    level: Option<i32>,
    /// Whether blocks are byte streams (config features bit 1), `null` unless chunked.
    split: Option<bool>,
    /// Whether each byte stream carries its own CRC-32 (config features bit 2), `null` unless
    /// chunked.
    stream_crcs: Option<bool>,
    /// Plain data bytes over stored data bytes, `null` for plain data.
    ratio: Option<f64>,
    /// numpy's dtype of the element (for records, the structured dtype of their schema, as
    /// Python source), `null` where numpy has none.
    dtype: Option<String>,
    /// `float32`, `complex64`, `user(80 bytes)`.
    r#type: String,
    header_bytes: usize,
    trailer_bytes: u64,
    /// The trailer block: `{"version", "params", "schema", "numpy_descr"}` and the keys of a
    /// later version it holds, `null` if none.
    trailer: Option<&'a rawarray_serde::Trailer>,
    /// Why trailing bytes that look like a trailer block cannot be read, `null` if not so.
    trailer_error: Option<&'a str>,
    /// Why the trailer's record schema does not describe the elements (shown as bytes then),
    /// `null` if it does or there is none.
    schema_error: Option<String>,
    /// Bytes between the data and the trailer block: uncommitted records and free space of a
    /// writer that is writing or was killed; 0 for a finished file.
    uncommitted_bytes: u64,
    /// Data bytes the header claims that the file does not hold (a file cut short); 0 if none.
    missing_bytes: u64,
    /// Blocks an `ArrayWriter` began and never committed (its writer was killed, or is still
    /// writing), each a list of `[start, end]` per dim; empty if none.
    uncommitted_blocks: Vec<Vec<[u64; 2]>>,
    /// Why the file's block journal cannot be read, `null` if it can or there is none.
    journal_error: Option<&'a str>,
}

/// `--stats` (and `--per-chunk`): what of the per-chunk statistics `ra info` prints.
#[derive(Clone, Copy, Debug)]
pub struct Stats {
    /// Each written chunk's statistics too, not only the whole file's.
    pub per_chunk: bool,
}

/// Prints every file's header (and, asked for, its statistics); a file that cannot be read is
/// reported on stderr and the others are still printed.
pub fn run(files: &[PathBuf], json: bool, stats: Option<Stats>, out: &mut dyn Write) -> Result<()> {
    let mut failed = 0;
    for (i, path) in files.iter().enumerate() {
        let shown = crate::source::input(path).and_then(|p| {
            crate::source::by_holds(
                &p,
                out,
                |out| array_info(path, &p, i, json, stats, out),
                |out| match crate::ragged::info(&p, json, i == 0, out) {
                    Ok(()) => Ok(0),
                    Err(e) => {
                        eprintln!("ra: {e}");
                        Ok(1)
                    }
                },
            )
        });
        match shown {
            Ok(n) => failed += n,
            Err(e @ Failure::File { .. }) => {
                eprintln!("ra: {e}");
                failed += 1;
            }
            Err(e) => return Err(e),
        }
    }
    out.flush().map_err(Failure::stdout)?;
    if failed > 0 {
        return Err(Failure::Checks(String::new()));
    }
    Ok(())
}

/// `ra info` of the n-d array at `p` (named `path` on the command line, the `i`th file): its
/// lines printed, and how many failures they report (a file cut short, a torn block).
fn array_info(
    path: &Path,
    p: &Path,
    i: usize,
    json: bool,
    stats: Option<Stats>,
    out: &mut dyn Write,
) -> Result<usize> {
    let d = describe(p)?;
    let mut failed = 0;
    let kept = match stats {
        Some(_) if d.chunking.as_ref().is_some_and(std::result::Result::is_ok) => {
            crate::stats::of(p)?
        }
        _ => None,
    };
    let text = match (json, stats) {
        (false, None) => text_block(path, &d, i > 0),
        (true, None) => json_line(path, &d),
        (false, Some(s)) => {
            let extra = match &kept {
                Some(k) => crate::stats::text_lines(k, s.per_chunk),
                None => "  statistics: none (not chunked, layout version 1, or \
                             written with --no-stats)\n"
                    .into(),
            };
            text_block(path, &d, i > 0) + &extra
        }
        (true, Some(s)) => {
            let mut v: serde_json::Value =
                serde_json::from_str(&json_line(path, &d)).expect("ra's own JSON");
            v["stats"] = kept.as_ref().map_or(serde_json::Value::Null, |k| {
                crate::stats::json(k, s.per_chunk)
            });
            format!("{v}\n")
        }
    };
    out.write_all(text.as_bytes()).map_err(Failure::stdout)?;
    // A file cut short or with a torn block is described, and still a failure.
    if let Some(cut) = d.cut_error {
        eprintln!("ra: {cut}");
        failed += 1;
    }
    if let Some(problem) = d.journal.problem(path) {
        eprintln!("ra: {problem}");
        failed += 1;
    }
    Ok(failed)
}

/// What `ra info` shows of one file.
struct Described {
    header: Header,
    trailer: TrailerInfo,
    /// Data bytes the header claims and the file does not hold (a file cut short).
    missing: u64,
    /// The error a file cut short is, for stderr.
    cut_error: Option<Failure>,
    /// What the file's block journal says.
    journal: Journal,
    /// A chunked section's config, or why it cannot be read (the file then fails).
    chunking: Option<std::result::Result<Chunking, String>>,
}

/// What `ra info` shows of a chunked section, from its validated config and index.
struct Chunking {
    config: rawarray_serde::codec::Config,
    /// Chunks per dim.
    counts: Vec<u64>,
    /// Chunks written (the others read as zeros).
    written: u64,
}

impl Chunking {
    /// The config and index of the chunked `src`, read and validated by the codec layer.
    fn of(src: &RaSource) -> std::result::Result<Chunking, String> {
        let section = src.section().map_err(|f| match f {
            Failure::File { message, .. } => message,
            other => other.to_string(),
        })?;
        let layout = section.chunk_map().ok_or("not chunked")?;
        Ok(Chunking {
            config: layout.config().clone(),
            counts: layout.grid().counts().to_vec(),
            written: layout
                .index()
                .entries()
                .iter()
                .filter(|e| !e.is_empty())
                .count() as u64,
        })
    }
}

/// Plain bytes over stored bytes of a compressed section.
fn ratio(h: &Header) -> Option<f64> {
    Storage::of(h)
        .is_coded()
        .then(|| h.data_len() as f64 / h.size.max(1) as f64)
}

/// What an `ArrayWriter`'s journal says of a file: the blocks never committed, or why it
/// cannot be read.
#[derive(Default)]
pub struct Journal {
    /// Blocks begun and never committed.
    pub blocks: Vec<Vec<std::ops::Range<u64>>>,
    /// Why the journal cannot be read.
    pub error: Option<String>,
}

impl Journal {
    /// The journal of the `.ra` file at `path` (none for standard input).
    pub fn of(path: &Path) -> Journal {
        if crate::source::is_stdio(path) {
            return Journal::default();
        }
        match rawarray_serde::ArrayWriter::uncommitted_blocks(path) {
            Ok(blocks) => Journal {
                blocks,
                error: None,
            },
            // A header the library's block writers do not write (a ragged file, flag bit 3)
            // has no journal.
            Err(e)
                if matches!(
                    e.kind(),
                    rawarray_serde::ErrorKind::UnknownFlags { .. }
                        | rawarray_serde::ErrorKind::RaggedFile
                ) =>
            {
                Journal::default()
            }
            Err(e) => Journal {
                blocks: Vec::new(),
                error: Some(e.to_string()),
            },
        }
    }

    /// The problem, one line naming `path`, if there is one.
    pub fn problem(&self, path: &Path) -> Option<Failure> {
        if let Some(e) = &self.error {
            return Some(Failure::file(path, e));
        }
        (!self.blocks.is_empty()).then(|| {
            let e = rawarray_serde::Error::new(rawarray_serde::ErrorKind::Uncommitted {
                path: path.to_path_buf(),
                blocks: self.blocks.clone(),
            });
            Failure::file(path, e)
        })
    }
}

fn describe(path: &Path) -> Result<Described> {
    let src = match RaSource::open(path) {
        Ok(src) => src,
        Err(e) => {
            // Not a .ra file at all (no magic): say what it looks like, where that is known.
            if let Some(what) = crate::sniff::looks_like(path) {
                return Err(Failure::file(path, format!("not a .ra file: {what}")));
            }
            // A valid header whose data is cut short: show the header and what is missing.
            if let Some((header, held)) = cut_short(path) {
                return Ok(Described {
                    missing: header.size - held,
                    header,
                    trailer: TrailerInfo::default(),
                    cut_error: Some(e),
                    journal: Journal::default(),
                    chunking: None,
                });
            }
            return Err(e);
        }
    };
    let trailer = src.trailer_info();
    let chunking = src.storage().has_chunk_index().then(|| Chunking::of(&src));
    let cut_error = match &chunking {
        Some(Err(why)) => Some(Failure::file(path, why)),
        _ => None,
    };
    Ok(Described {
        header: src.header,
        trailer,
        missing: 0,
        cut_error,
        journal: Journal::of(path),
        chunking,
    })
}

/// The header of a regular file whose data section is shorter than the header says, and the
/// data bytes it holds.
fn cut_short(path: &Path) -> Option<(Header, u64)> {
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut file = std::fs::File::open(path).ok()?;
    let header = Header::read_from_any(&mut std::io::BufReader::new(&mut file)).ok()?;
    let held = file
        .metadata()
        .ok()?
        .len()
        .checked_sub(header.encoded_len() as u64)?;
    (held < header.size).then_some((header, held))
}

/// What is missing from a file cut short, and for a record file (its last dim counts records)
/// the command that keeps the complete records.
fn missing_text(path: &Path, h: &Header, missing: u64) -> String {
    let mut s = format!(
        "{missing} of {} data bytes (the file was cut short)",
        h.size
    );
    let record_bytes = h.dims.split_last().and_then(|(_, lead)| {
        lead.iter()
            .try_fold(h.elbyte, |a, &d| a.checked_mul(d))
            .filter(|&b| b > 0)
    });
    if let (Some(bytes), false) = (record_bytes, Storage::of(h).is_coded()) {
        let held = h.size - missing;
        let claimed = h.dims.last().copied().unwrap_or(0);
        s.push_str(&format!(
            "; it holds {} complete records of the last dim's {claimed}: `ra recover --force {}` \
             keeps them",
            held / bytes,
            path.display()
        ));
    }
    s
}

/// numpy's dtype of one element: the one a valid schema describes (records; a marked scalar:
/// `'|b1'`, `'<M8[us]'`), else the header's (Python source, as `np.dtype` takes it).
fn numpy_dtype(h: &Header, t: &TrailerInfo) -> Option<String> {
    t.element_schema(h)
        .map(|s| s.plain_schema().unwrap_or_else(|| s.clone()).numpy_descr())
        .or_else(|| h.numpy_dtype().map(str::to_string))
}

fn json_line(path: &Path, d: &Described) -> String {
    let (h, t) = (&d.header, &d.trailer);
    let chunked = d.chunking.as_ref().and_then(|c| c.as_ref().ok());
    let j = InfoJson {
        file: path.display().to_string(),
        flags: h.flags.bits(),
        eltype: h.eltype.code(),
        elbyte: h.elbyte,
        size: h.size,
        ndims: h.dims.len(),
        dims: &h.dims,
        numpy_shape: reversed(&h.dims),
        big_endian: h.is_big_endian(),
        compressed: Storage::of(h).is_coded(),
        codec: match &chunked {
            Some(c) => Some(c.config.codec.name()),
            None => Storage::of(h).header_codec(),
        },
        chunks: chunked.map(|c| &c.config.chunk[..]),
        numpy_chunks: chunked.map(|c| reversed(&c.config.chunk)),
        shuffle: chunked.map(|c| c.config.shuffle().map_or("pipeline", |s| s.name())),
        level: chunked.map(|c| c.config.level),
        split: chunked.map(|c| c.config.split),
        stream_crcs: chunked.map(|c| c.config.stream_crcs),
        ratio: ratio(h),
        dtype: numpy_dtype(h, t),
        r#type: h.type_label(),
        header_bytes: h.encoded_len(),
        trailer_bytes: t.bytes,
        trailer: t.trailer.as_ref(),
        trailer_error: t.damaged.as_deref(),
        schema_error: t.schema_problem(h),
        uncommitted_bytes: t.uncommitted(),
        missing_bytes: d.missing,
        uncommitted_blocks: d
            .journal
            .blocks
            .iter()
            .map(|b| b.iter().map(|r| [r.start, r.end]).collect())
            .collect(),
        journal_error: d.journal.error.as_deref(),
    };
    serde_json::to_string(&j).expect("plain data serializes") + "\n"
}

/// A list in the other order: the file's dims as numpy's shape (and back).
fn reversed(dims: &[u64]) -> Vec<u64> {
    dims.iter().rev().copied().collect()
}

/// `[80, 96, 16] (numpy (16, 96, 80))`: a list of sizes in the file's order, and in numpy's.
fn both_orders(dims: &[u64], numpy: &str) -> String {
    format!(
        "{dims:?} ({numpy} {})",
        rawarray_serde::numpy::shape(&reversed(dims))
    )
}

fn text_block(path: &Path, d: &Described, gap: bool) -> String {
    let (h, t) = (&d.header, &d.trailer);
    let elements = h.num_elements();
    let rows = [
        (
            "type",
            format!(
                "{} (eltype {}, {})",
                h.type_label(),
                h.eltype.code(),
                h.eltype.name()
            ),
        ),
        (
            "numpy dtype",
            numpy_dtype(h, t).unwrap_or_else(|| numpy_dtype_or_reason(h.eltype, h.elbyte)),
        ),
        ("elbyte", h.elbyte.to_string()),
        (
            "dims",
            format!(
                "{}, {elements} element{}",
                both_orders(&h.dims, "numpy shape"),
                if elements == 1 { "" } else { "s" },
            ),
        ),
        (
            "size",
            if let Some(r) = ratio(h) {
                format!(
                    "{} bytes stored, {} plain (ratio {r:.3})",
                    h.size,
                    h.data_len()
                )
            } else {
                format!("{} bytes", h.size)
            },
        ),
        (
            "byte order",
            if h.is_big_endian() {
                "big-endian"
            } else {
                "little-endian"
            }
            .to_string(),
        ),
        ("compression", compression_text(h, d.chunking.as_ref())),
        ("flags", h.flags.bits().to_string()),
        ("header", format!("{} bytes", h.encoded_len())),
        ("trailer", trailer_text(path, t, h)),
    ];
    let missing = (d.missing > 0).then(|| ("missing", missing_text(path, h, d.missing)));
    let torn = d.journal.problem(path).map(|p| match p {
        Failure::File { message, .. } => ("journal", message),
        other => ("journal", other.to_string()),
    });
    let mut s = String::new();
    if gap {
        s.push('\n');
    }
    s.push_str(&format!("{}\n", path.display()));
    for (k, v) in rows.into_iter().chain(missing).chain(torn) {
        s.push_str(&format!("  {:<12} {v}\n", format!("{k}:")));
    }
    s
}

/// The compression row: the LZ4 whole block, or a chunked section's codec, level, filter and
/// chunk grid.
fn compression_text(
    h: &Header,
    chunking: Option<&std::result::Result<Chunking, String>>,
) -> String {
    match chunking {
        Some(Ok(c)) => {
            let cfg = &c.config;
            let total: u64 = c.counts.iter().product();
            let level = match cfg.codec.levels() {
                Some(_) => format!(" level {}", cfg.level),
                None => String::new(),
            };
            let blocks = match &cfg.blocks {
                rawarray_serde::codec::Blocks::Bytes(b) => format!("blocks of {b} bytes"),
                rawarray_serde::codec::Blocks::Shape(b) => format!("blocks {b:?}"),
            };
            let filters: Vec<String> = cfg.filters.iter().map(ToString::to_string).collect();
            format!(
                "chunked (flag bit 2, RACHUNK{}): {}{level}, filters [{}]{}, chunks {}, grid {:?} = {total} \
                 chunk{} ({} written), {blocks}{}",
                cfg.version,
                cfg.codec.name(),
                filters.join(", "),
                match (cfg.split, cfg.stream_crcs) {
                    (true, true) => ", byte streams with CRCs",
                    (true, false) => ", byte streams",
                    _ => "",
                },
                both_orders(&cfg.chunk, "numpy"),
                c.counts,
                if total == 1 { "" } else { "s" },
                c.written,
                if cfg.stats.is_some() { ", statistics" } else { "" }
            )
        }
        Some(Err(why)) => format!("chunked (flag bit 2), unreadable: {why}"),
        None => Storage::of(h).flag_text().to_string(),
    }
}

fn trailer_text(path: &Path, t: &TrailerInfo, h: &Header) -> String {
    if t.bytes == 0 {
        return "none".into();
    }
    let mut s = format!("{} bytes", t.bytes);
    if let Some(why) = &t.damaged {
        s.push_str(&format!(", a damaged trailer block ({why})"));
    }
    if let Some(tr) = &t.trailer {
        s.push_str(&format!(", trailer block version {}", tr.version));
        if !tr.params.is_null() {
            s.push_str(&format!("; params: {}", tr.params));
        }
        if let Some(schema) = &tr.schema {
            s.push_str(&format!("; record schema: {}", schema.numpy_descr()));
        }
        if let Some(why) = t.schema_problem(h) {
            s.push_str(&format!(" ({why}: elements shown as bytes)"));
        }
        let loose = t.uncommitted();
        if loose > 0 {
            s.push_str(&format!(
                "; {loose} bytes after the data are not committed: records and free space of a \
                 writer that is still writing or was killed (if none is writing, `ra recover \
                 {}` keeps the records of a flush whose header update was lost)",
                path.display()
            ));
        }
    }
    s
}
