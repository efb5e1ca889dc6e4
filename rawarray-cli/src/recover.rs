//! `ra recover FILE`: the record and ragged writers' crash repair ([`rawarray_serde::recover`]),
//! in place.

use std::io::Write;
use std::path::Path;

use rawarray_serde::section::Holds;
use rawarray_serde::{recover_with, RecoverOptions};

use crate::fail::{At, Failure, Result};

/// Repairs `path` and says what changed; `force` extends a file without a record trailer.
pub fn run(path: &Path, force: bool, out: &mut dyn Write) -> Result<()> {
    // Chunked arrays written in blocks and ragged files are repaired by the one `recover_with`.
    let r = recover_with(path, &RecoverOptions::new().force(force)).at(path)?;
    // A ragged file's records are its rows.
    let unit = match r.holds {
        Holds::Rows => "row",
        _ => "record",
    };
    let records = |n: u64| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    // "unchanged" only when nothing was: a torn flush cut off, or index entries cleared, is a
    // change even when the record count stays.
    let change = if r.records_after != r.records_before {
        format!(
            "{} -> {}",
            records(r.records_before),
            records(r.records_after)
        )
    } else if r.changed() {
        format!("{} (as many as before)", records(r.records_after))
    } else {
        format!("{} (unchanged)", records(r.records_after))
    };
    let mut line = format!(
        "{}: {change}; {}; {} bytes removed",
        path.display(),
        if r.trailer {
            "trailer kept"
        } else {
            "no trailer"
        },
        r.bytes_removed
    );
    if !r.dropped_chunks.is_empty() {
        line.push_str(&format!(
            "; dropped {} {} (index entries a writer wrote and never committed: they now read \
             as never written)",
            if r.dropped_chunks.len() == 1 {
                "chunk"
            } else {
                "chunks"
            },
            list(&r.dropped_chunks)
        ));
    }
    if !r.dropped_segments.is_empty() {
        line.push_str(&format!(
            "; cleared index segment {} {} (allocated past the committed data by such a writer)",
            if r.dropped_segments.len() == 1 {
                "slot"
            } else {
                "slots"
            },
            list(&r.dropped_segments)
        ));
    }
    writeln!(out, "{line}").map_err(Failure::stdout)
}

/// `1, 5, 9`, or the first 20 and how many more: a line stays a line.
fn list<T: std::fmt::Display>(items: &[T]) -> String {
    const SHOWN: usize = 20;
    let mut s = items
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        s.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    s
}
