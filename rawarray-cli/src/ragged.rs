//! Ragged files (flag bit 3) in `ra info`, `ra cat`, `ra slice`, `ra convert` and
//! `ra compress`: rows of different lengths, read through the library's `DynRagged`.

use std::io::Write;
use std::path::Path;

use rawarray_serde::atomic::AtomicFile;
use rawarray_serde::layout::Layout;
use rawarray_serde::ragged::DynRagged;
use rawarray_serde::WriteOptions;
use serde::Serialize;

use crate::compress::{Packing, PackingArgs};
use crate::fail::{At, Failure, Result};
use crate::report;
use crate::value::{layout_text, Decoder};

/// The `ra info --json` object of a ragged file.
#[derive(Serialize)]
struct InfoJson<'a> {
    file: String,
    ragged: bool,
    eltype: u64,
    elbyte: u64,
    r#type: String,
    value_dims: &'a [u64],
    rows: u64,
    values: u64,
    longest_row: u64,
    text: bool,
    offsets_slots: u64,
    /// Whether the values are a chunked (compressed) section, and its bytes.
    chunked: bool,
    values_stored_bytes: u64,
    trailer: Option<&'a rawarray_serde::Trailer>,
}

/// `ra info` of one ragged file: rows, values, the longest row.
pub fn info(path: &Path, json: bool, first: bool, out: &mut dyn Write) -> Result<()> {
    let r = DynRagged::open(path).at(path)?;
    let h = r.header();
    let longest = r.longest_row().at(path)?;
    let label = rawarray_serde::eltype::type_label(h.eltype, h.elbyte);
    let stored = h
        .values_section_header()
        .map_or(h.values_len(), |vh| vh.size);
    let text = if json {
        let j = InfoJson {
            file: crate::names::shown(path).into_owned(),
            ragged: true,
            eltype: h.eltype.code(),
            elbyte: h.elbyte,
            r#type: label,
            value_dims: &h.value_dims,
            rows: h.rows,
            values: h.values,
            longest_row: longest,
            text: r.is_text(),
            offsets_slots: h.slots(),
            chunked: h.chunked,
            values_stored_bytes: stored,
            trailer: r.trailer(),
        };
        format!("{}\n", serde_json::to_string(&j).expect("plain JSON"))
    } else {
        let what = if r.is_text() {
            "text (UTF-8)".to_string()
        } else {
            label
        };
        format!(
            "{}{}\n  ragged array of {what}{}\n  rows: {}\n  values: {}\n  longest row: {longest}\n",
            if first { "" } else { "\n" },
            crate::names::shown(path),
            if h.value_dims.is_empty() {
                String::new()
            } else {
                format!(", each value of dims {:?}", h.value_dims)
            },
            h.rows,
            if h.chunked {
                format!("{} (compressed: a chunked section of {stored} bytes)", h.values)
            } else {
                h.values.to_string()
            },
        )
    };
    out.write_all(text.as_bytes()).map_err(Failure::stdout)
}

/// How one row's values are written as text.
struct RowText {
    r: DynRagged,
    schema: Option<Layout>,
    decoder: Decoder,
}

impl RowText {
    fn open(path: &Path) -> Result<RowText> {
        let r = DynRagged::open(path).at(path)?;
        let h = r.header();
        let decoder = Decoder::new(h.eltype, h.elbyte);
        let schema = r.trailer().and_then(|t| t.schema.clone());
        Ok(RowText { r, schema, decoder })
    }

    /// Row `k`'s values, separated by `sep`, or its text; `json` writes JSON values. Text is
    /// escaped ([`push_escaped`]) so that a row stays one line, except for CSV (`csv`), which
    /// quotes it instead.
    fn push(
        &self,
        k: u64,
        sep: &str,
        json: bool,
        csv: bool,
        line: &mut String,
    ) -> rawarray_serde::Result<()> {
        if self.r.is_text() {
            let s = &*self.r.row_str(k)?;
            if json {
                line.push_str(&serde_json::to_string(s).expect("a string"));
            } else if csv {
                line.push_str(s);
            } else {
                push_escaped(s, line);
            }
            return Ok(());
        }
        let bytes = self.r.row_bytes(k)?;
        let vb = self.r.header().value_bytes() as usize;
        let elbyte = self.r.header().elbyte as usize;
        if json {
            line.push('[');
        }
        for (i, value) in bytes.chunks_exact(vb.max(1)).enumerate() {
            if i > 0 {
                line.push_str(sep);
            }
            match &self.schema {
                Some(layout) if layout.size() == vb as u64 => {
                    layout_text(layout, value, false, json, line);
                }
                _ => {
                    for (j, e) in value.chunks_exact(elbyte).enumerate() {
                        if j > 0 {
                            line.push_str(sep);
                        }
                        if json {
                            self.decoder.decode(e).json(line);
                        } else {
                            self.decoder.decode(e).text(line);
                        }
                    }
                }
            }
        }
        if json {
            line.push(']');
        }
        Ok(())
    }
}

/// Text as `ra cat` prints it, one line whatever it holds: a backslash as `\\`, newline, carriage
/// return and tab as `\n`, `\r`, `\t`, and any other control character as `\u{..}` (its code
/// point in hex), as Rust writes them; everything else as it is.
fn push_escaped(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
}

/// `ra cat` of a ragged file: `[k]<TAB>values` lines (the text of a text row), or with `json`
/// `{"row":k,"value":[...]}`; at most `head` rows.
pub fn cat(path: &Path, head: Option<u64>, json: bool, out: &mut dyn Write) -> Result<()> {
    let t = RowText::open(path)?;
    let rows = head.map_or(t.r.rows(), |h| h.min(t.r.rows()));
    let mut line = String::new();
    for k in 0..rows {
        line.clear();
        if json {
            line.push_str(&format!("{{\"row\":{k},\"value\":"));
        } else {
            line.push_str(&format!("[{k}]\t"));
        }
        t.push(k, if json { "," } else { ", " }, json, false, &mut line)
            .at(path)?;
        line.push_str(if json { "}\n" } else { "\n" });
        out.write_all(line.as_bytes()).map_err(Failure::stdout)?;
    }
    out.flush().map_err(Failure::stdout)
}

/// `ra slice` of a ragged file: one range of rows, `start:stop` (numpy's, step 1). Its values
/// are stored as the input's are (chunked with the same codec, level and filter, or plain),
/// unless `packing` says otherwise; text rows are checked to be UTF-8 first.
pub fn slice(
    input: &Path,
    output: &Path,
    ranges: &str,
    packing: &PackingArgs,
    stdout: &mut dyn Write,
) -> Result<()> {
    let r = DynRagged::open(input).at(input)?;
    let n = r.rows() as i64;
    let specs = crate::slice::parse(ranges).map_err(|m| Failure::usage("slice", m))?;
    let clip = |i: Option<i64>, default: i64| -> i64 {
        let i = i.unwrap_or(default);
        (if i < 0 { i + n } else { i }).clamp(0, n)
    };
    let rows = match specs[..] {
        [crate::slice::Spec::Slice {
            start,
            stop,
            step: None | Some(1),
        }] => {
            let (a, b) = (clip(start, 0), clip(stop, n));
            a as u64..b.max(a) as u64
        }
        [crate::slice::Spec::Index(i)] if (-n..n).contains(&i) => {
            let i = clip(Some(i), 0) as u64;
            i..i + 1
        }
        _ => {
            return Err(Failure::usage(
                "slice",
                format!(
                    "'{ranges}': a ragged file of {n} rows takes one range of rows, start:stop \
                     (step 1), or one row index"
                ),
            ))
        }
    };
    check_text(input, &r, rows.clone())?;
    let opts = values_options(input, &r, rows.clone(), packing)?;
    let mut bytes = Vec::new();
    r.write_rows_with(rows.clone(), &mut bytes, opts.as_ref())
        .at(input)?;
    let how = match &opts {
        Some(o) => format!("values chunked ({})", crate::compress::describe_options(o)),
        None => "values plain".into(),
    };
    if crate::source::is_stdio(output) {
        stdout.write_all(&bytes).map_err(Failure::stdout)?;
        stdout.flush().map_err(Failure::stdout)?;
    } else {
        rawarray_serde::atomic::write_atomic(output, |w| w.write_all(&bytes)).at(output)?;
    }
    report::done(format_args!(
        "{} -> {}: rows {}..{}, {how}",
        crate::names::shown(input),
        if crate::source::is_stdio(output) {
            "<stdout>".into()
        } else {
            output.display().to_string()
        },
        rows.start,
        rows.end
    ));
    Ok(())
}

/// The values' packing of a slice of `rows` of `r`: the input's (its values' chunked section,
/// if any) unless `packing` says otherwise; `None` is plain. One LZ4 block does not apply to a
/// ragged file.
fn values_options(
    input: &Path,
    r: &DynRagged,
    rows: std::ops::Range<u64>,
    packing: &PackingArgs,
) -> Result<Option<WriteOptions>> {
    let h = r.header();
    let own = match h.values_section_header() {
        Some(vh) => {
            let file = std::fs::File::open(input).at(input)?;
            let section =
                rawarray_serde::section::Section::open_at(&vh, &file, h.values_at()).at(input)?;
            let Some(map) = section.chunk_map() else {
                return Err(Failure::file(input, "its values section is not chunked"));
            };
            let cfg = map.config().clone();
            // The values the slice keeps: the chunk of the last (values) dim at most that.
            let offsets = r.offsets_bytes().at(input)?;
            let at = |k: u64| {
                let i = 8 * k as usize;
                offsets
                    .get(i..i + 8)
                    .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            };
            let values = at(rows.end).saturating_sub(at(rows.start)).max(1);
            let mut chunks = cfg.chunk.clone();
            if let Some(last) = chunks.last_mut() {
                *last = (*last).min(values);
            }
            let blocks = match &cfg.blocks {
                rawarray_serde::codec::Blocks::Shape(b) => {
                    Some(b.iter().zip(&chunks).map(|(&b, &c)| b.min(c)).collect())
                }
                rawarray_serde::codec::Blocks::Bytes(_) => None,
            };
            Some(crate::slice::packing_of_config(&cfg, chunks, blocks))
        }
        None => None,
    };
    match crate::slice::merged(packing, own)? {
        None => Ok(None),
        Some(p) => p
            .chunk_options()
            .map(Some)
            .ok_or_else(|| lz4_whole_refused(input)),
    }
}

fn lz4_whole_refused(input: &Path) -> Failure {
    Failure::file(
        input,
        "a ragged file's values are compressed in chunks (the offsets stay plain for O(1) \
         rows): --codec lz4-whole does not apply; use zstd, lz4 or none",
    )
}

/// Refuses, naming the row, a row of a text file that is not UTF-8: every writer of text
/// (`ra slice`, `ra compress`) checks the rows it copies, as readers check them. The values
/// are read once (a chunked section decoded once), not row by row.
fn check_text(input: &Path, r: &DynRagged, rows: std::ops::Range<u64>) -> Result<()> {
    if !r.is_text() || rows.is_empty() {
        return Ok(());
    }
    // Every offset is checked by the library before these are handed out.
    let offsets = r.offsets_bytes().at(input)?;
    let values = r.values_bytes().at(input)?;
    let at = |k: u64| {
        let i = 8 * k as usize;
        u64::from_le_bytes(offsets[i..i + 8].try_into().expect("8 bytes")) as usize
    };
    for k in rows {
        if let Err(e) = std::str::from_utf8(&values[at(k)..at(k + 1)]) {
            return Err(Failure::file(
                input,
                format!(
                    "row {k} is not UTF-8 text ({e}), yet the file marks its rows as text; \
                     nothing was written"
                ),
            ));
        }
    }
    Ok(())
}

/// `ra compress` / `ra decompress` of a ragged file: its values through the codec layer (a
/// chunked section after the plain offsets, doc/format.md section 10.2) or plain again, in
/// place or to `output`, through a temporary file. The chunk shape (`--chunks`) is that of
/// the values, `[value dims..., values]`.
pub fn compress(input: &Path, output: Option<&Path>, packing: Option<&Packing>) -> Result<()> {
    let opts = match packing {
        Some(p) => Some(p.chunk_options().ok_or_else(|| lz4_whole_refused(input))?),
        None => None,
    };
    let output = output.unwrap_or(input);
    // The destination is locked first: in place, a writer appending rows is refused before
    // anything is read.
    let mut out = AtomicFile::create(output).at(output)?;
    let r = DynRagged::open(input).at(input)?;
    if opts.is_none() && !r.header().chunked && output == input {
        report::note(format_args!(
            "{}: not compressed; left as it is",
            input.display()
        ));
        return Ok(());
    }
    check_text(input, &r, 0..r.rows())?;
    let before = std::fs::metadata(input).at(input)?.len();
    let mut w = std::io::BufWriter::new(out.file());
    r.write_rows_with(0..r.rows(), &mut w, opts.as_ref())
        .at(input)?;
    w.flush().at(output)?;
    drop(w);
    let after = out.file().metadata().at(output)?.len();
    out.commit().at(output)?;
    let target = if output == input {
        String::new()
    } else {
        format!(" -> {}", output.display())
    };
    let how = match &opts {
        Some(o) => format!("compressed ({})", crate::compress::describe_options(o)),
        None => "decompressed".into(),
    };
    report::done(format_args!(
        "{}{target}: {how}, {} -> {}",
        input.display(),
        report::bytes(before),
        report::bytes(after)
    ));
    Ok(())
}

/// `ra convert` of a ragged file to `.npy`: refused, naming what to do instead.
pub fn refuse_npy(input: &Path) -> Failure {
    Failure::file(
        input,
        "a ragged array (rows of different lengths) has no .npy form: numpy has no ragged type. \
         Convert it to .csv (one row per line), or keep rows as .ra with `ra slice`",
    )
}

/// `ra convert` of a ragged file to CSV: one row per line, values separated by commas; a text
/// row is one field, quoted as CSV quotes.
pub fn to_csv(input: &Path, output: &Path) -> Result<()> {
    let t = RowText::open(input)?;
    if !t.r.is_text()
        && t.schema
            .as_ref()
            .is_some_and(|l| !matches!(l, Layout::Scalar { .. }))
    {
        return Err(Failure::file(input, "rows of records have no CSV form"));
    }
    let mut inner = None;
    let written = rawarray_serde::atomic::write_atomic(output, |w| {
        let mut w = std::io::BufWriter::new(w);
        let mut line = String::new();
        for k in 0..t.r.rows() {
            line.clear();
            if let Err(e) = t.push(k, ",", false, true, &mut line) {
                inner = Some(Failure::file(input, e));
                return Err(std::io::Error::other("row"));
            }
            if t.r.is_text() && line.contains(['"', ',', '\n', '\r']) {
                line = format!("\"{}\"", line.replace('"', "\"\""));
            }
            line.push('\n');
            w.write_all(line.as_bytes())?;
        }
        w.flush()
    });
    match (written, inner) {
        (_, Some(f)) => Err(f),
        (r, None) => r.at(output),
    }
}
