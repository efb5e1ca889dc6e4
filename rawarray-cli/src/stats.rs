//! `ra info --stats`: the per-chunk statistics of a chunked file (minimum, maximum and NaN
//! count of every scalar field, doc/chunked.md section 5.4), for the whole file and, with
//! `--per-chunk`, for each chunk. They come from the index alone: no data is read.

use std::path::Path;

use rawarray_serde::codec::stats::{FieldStats, Value};
use rawarray_serde::query::FileStats;
use serde_json::json;

use crate::fail::Result;
use crate::source::RaSource;

/// The statistics of the file at `path`, `None` when it keeps none (not chunked, layout
/// version 1, or written with `--no-stats`).
pub fn of(path: &Path) -> Result<Option<FileStats>> {
    let src = RaSource::open(path)?;
    let section = src.section()?;
    let Some(map) = section.chunk_map() else {
        return Ok(None);
    };
    let schema = src.trailer_info().trailer.and_then(|t| t.schema);
    Ok(FileStats::of(map, schema.as_ref()))
}

/// A value in words: integers as they are, floats as their shortest decimal.
fn text(v: &Value) -> String {
    v.to_string()
}

/// A value in JSON: a number where JSON holds it exactly, else a string (128-bit integers
/// past 2^53 stay exact as strings; infinities as "inf"/"-inf", as `ra cat --json` writes them).
fn json_value(v: &Value) -> serde_json::Value {
    match *v {
        Value::Int(i) if i.unsigned_abs() < 1 << 53 => json!(i as i64),
        Value::Uint(u) if u < 1 << 53 => json!(u as u64),
        Value::Float(f) if f.is_finite() => json!(f),
        _ => json!(v.to_string()),
    }
}

fn field_json(name: &str, s: Option<FieldStats>) -> serde_json::Value {
    match s {
        None => json!({ "name": name, "known": false }),
        Some(s) => json!({
            "name": name,
            "min": s.min_max.as_ref().map(|(lo, _)| json_value(lo)),
            "max": s.min_max.as_ref().map(|(_, hi)| json_value(hi)),
            "nan": s.nan,
        }),
    }
}

/// The `stats` object of `ra info --json --stats`: `fields` (whole file, one object per
/// field: `name`, `min`, `max`, `nan`; `known: false` when a written chunk has no readable
/// statistics) and, per chunk, `chunks` (written chunks only: `chunk`, `fields`).
pub fn json(stats: &FileStats, per_chunk: bool) -> serde_json::Value {
    let names = stats.names();
    let fields: Vec<_> = (0..names.len())
        .map(|k| field_json(&names[k], stats.whole(k)))
        .collect();
    let mut out = json!({ "fields": fields, "damaged_chunks": stats.missing() });
    if per_chunk {
        let chunks: Vec<_> = (0..stats.chunk_count())
            .filter_map(|n| {
                let per: Vec<_> = (0..names.len())
                    .map(|k| stats.chunk(n, k).map(|s| field_json(&names[k], Some(s))))
                    .collect::<Option<_>>()?;
                Some(json!({ "chunk": n, "fields": per }))
            })
            .collect();
        out["chunks"] = json!(chunks);
    }
    out
}

fn field_text(s: Option<FieldStats>) -> String {
    match s {
        None => "unknown (a written chunk's statistics are missing or damaged)".into(),
        Some(FieldStats { nan, min_max }) => {
            let range = match min_max {
                Some((lo, hi)) => format!("min {}, max {}", text(&lo), text(&hi)),
                None => "no ordered values".into(),
            };
            format!("{range}, {nan} NaN")
        }
    }
}

/// The lines `ra info --stats` prints after a file's header block.
pub fn text_lines(stats: &FileStats, per_chunk: bool) -> String {
    let names = stats.names();
    let width = names.iter().map(String::len).max().unwrap_or(0);
    let mut s = String::from("  statistics (from the index; no data read):\n");
    for (k, name) in names.iter().enumerate() {
        s += &format!("    {name:width$}  {}\n", field_text(stats.whole(k)));
    }
    if per_chunk {
        for n in 0..stats.chunk_count() {
            for (k, name) in names.iter().enumerate() {
                if let Some(c) = stats.chunk(n, k) {
                    s += &format!("    chunk {n} {name:width$}  {}\n", field_text(Some(c)));
                }
            }
        }
    }
    s
}
