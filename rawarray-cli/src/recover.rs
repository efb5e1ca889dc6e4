//! `ra recover FILE`: the record and ragged writers' crash repair ([`rawarray_serde::recover`]),
//! in place.

use std::io::Write;
use std::path::Path;

use rawarray_serde::{recover_with, RecoverOptions};

use crate::fail::{At, Failure, Result};

/// Repairs `path` and says what changed; `force` extends a file without a record trailer.
pub fn run(path: &Path, force: bool, out: &mut dyn Write) -> Result<()> {
    // Read before the repair: a ragged file's records are its rows.
    let ragged = crate::ragged::is_ragged(path);
    let unit = if ragged { "row" } else { "record" };
    // Chunked arrays written in blocks and ragged files are repaired by the one `recover_with`.
    let r = recover_with(path, &RecoverOptions::new().force(force)).at(path)?;
    let records = |n: u64| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    let change = if r.records_after == r.records_before {
        format!("{} (unchanged)", records(r.records_after))
    } else {
        format!(
            "{} -> {}",
            records(r.records_before),
            records(r.records_after)
        )
    };
    writeln!(
        out,
        "{}: {change}; {}; {} bytes removed",
        path.display(),
        if r.trailer {
            "trailer kept"
        } else {
            "no trailer"
        },
        r.bytes_removed
    )
    .map_err(Failure::stdout)
}
