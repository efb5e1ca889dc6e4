//! Repairing a record file whose last flush was cut short: [`recover`](crate::recover)'s work for
//! record files, and the [`Recovery`] every repair reports.

use std::fs::File;
use std::path::Path;

use super::commit::{check_header_len, settle};
use crate::error::{Error, ErrorKind, Result};
use crate::fileio::{read_exact_at, write_all_at};
use crate::header::{checked_product, Header};
use crate::section::Storage;
use crate::trailer::{
    block_len, data_end, locate, probe_backward, probe_forward, Block, Probe, TRAILER_FRAME,
    TRAILER_TAG,
};

/// A record file cut short (copied in part, a full disk): its header claims more records than
/// the file holds. Forced, the header is cut back to the complete records and the partial last
/// one dropped (their bytes are gone with the trailer anyway); unforced, the error says what
/// forcing would keep.
fn salvage_truncated(
    file: &File,
    mut header: Header,
    file_len: u64,
    record_bytes: u64,
    force: bool,
    truncated: Error,
) -> Result<Recovery> {
    let start = header.encoded_len() as u64;
    let held = file_len.saturating_sub(start);
    let complete = held / record_bytes;
    let before = *header.dims.last().expect("the caller checked the dims");
    if !force {
        return Err(Error::unsupported(format!(
            "{truncated}: the file holds {complete} complete records of the {before} its header \
             claims (force it: RecoverOptions::force, ra recover --force keeps those)"
        )));
    }
    header.set_records(complete)?;
    write_all_at(file, &header.encode(), 0)?;
    file.set_len(start + header.size)?;
    file.sync_data()?;
    Ok(Recovery {
        records_before: before,
        records_after: complete,
        trailer: false,
        bytes_removed: held - header.size,
        dropped_chunks: Vec::new(),
        dropped_segments: Vec::new(),
        holds: crate::section::Holds::Array,
    })
}

/// What [`recover`](crate::recover) did. Made by the library only (`#[non_exhaustive]`), so
/// that it can say more without breaking its readers.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Recovery {
    /// Records the header described before.
    pub records_before: u64,
    /// Records it describes now.
    pub records_after: u64,
    /// Whether the file has a trailer (kept).
    pub trailer: bool,
    /// Bytes cut from the end of the file (free space, spare copy, torn records).
    pub bytes_removed: u64,
    /// Chunks of a chunked file whose index entries a writer that died before its commit
    /// had written (they pointed past the committed size): cleared, they read as never
    /// written. Empty for other files.
    pub dropped_chunks: Vec<u64>,
    /// Index segment slots of a chunked file allocated past the committed size by such a
    /// writer, cleared.
    pub dropped_segments: Vec<usize>,
    /// What the file holds: a record or block file's units are records, a ragged file's rows
    /// (what `ra recover` counts).
    pub holds: crate::section::Holds,
}

impl Recovery {
    /// Nothing done (yet) to a file of `records` records with a trailer.
    pub(crate) fn untouched(records: u64) -> Recovery {
        Recovery {
            records_before: records,
            records_after: records,
            trailer: true,
            bytes_removed: 0,
            dropped_chunks: Vec::new(),
            dropped_segments: Vec::new(),
            holds: crate::section::Holds::Array,
        }
    }

    /// Whether the repair changed the file: records taken back, bytes cut or index entries
    /// cleared.
    pub fn changed(&self) -> bool {
        self.records_after != self.records_before
            || self.bytes_removed > 0
            || !self.dropped_chunks.is_empty()
            || !self.dropped_segments.is_empty()
    }
}

/// Repairs the plain record file `path` (opened locked as `file`; neither ragged nor chunked):
/// [`recover_with`](crate::recover_with)'s work for record files. `force`:
/// [`RecoverOptions::force`](crate::RecoverOptions::force).
pub(crate) fn recover_records(path: &Path, file: &File, force: bool) -> Result<Recovery> {
    let mut header = Header::read_from(&mut &*file)?;
    // A file written in blocks (`ArrayWriter`) has no records to extend: a block its journal
    // says was never committed is reported, and nothing is changed.
    if let Some(blocks) = crate::journal::uncommitted(path, file, &header)? {
        if !blocks.is_empty() {
            return Err(ErrorKind::Uncommitted {
                path: path.to_path_buf(),
                blocks,
            }
            .into());
        }
    }
    let storage = Storage::of(&header);
    if !storage.grows_in_place() {
        return Err(Error::unsupported(format!(
            "the file's data are stored as {}, which is written once: it cannot have been \
             appended to",
            storage.name()
        )));
    }
    check_header_len(&header)?;
    let Some((&before, lead)) = header.dims.split_last() else {
        return Err(Error::unsupported(
            "the file is a scalar (no dims): it has no record count to extend",
        ));
    };
    let record_bytes = checked_product(header.elbyte, lead)
        .filter(|&b| b > 0)
        .ok_or_else(|| {
            Error::unsupported(format!(
                "records of dims {lead:?} x elbyte {} are empty or too large",
                header.elbyte
            ))
        })?;
    let file_len = file.metadata()?.len();
    if let Err(truncated) = header.check_input_len(file_len) {
        return salvage_truncated(file, header, file_len, record_bytes, force, truncated);
    }
    let end = data_end(&header);
    // A file this crate's writer left always has a valid block at its end or at its data end
    // (see `RecordWriter`): without one, refuse before scanning what may be gigabytes.
    if file_len > end && !force && matches!(locate(file, end, file_len), Probe::Absent) {
        return Err(foreign_trailing(
            file,
            path,
            end,
            file_len,
            "without a record trailer, records cannot be told from other data \
             (force it: RecoverOptions::force, ra recover --force)",
        ));
    }
    let (spare, limit) = spare_and_limit(file, end, file_len);
    let mut recovery = Recovery::untouched(before);
    if let Some((k, block)) = scan_forward(file, end, record_bytes, limit)? {
        if k > 0 {
            header.set_records(before + k)?;
            write_all_at(file, &header.encode(), 0)?;
            file.sync_data()?;
        }
        if file_len > block.end() {
            file.set_len(block.end())?;
            file.sync_data()?;
        }
        recovery.records_after = before + k;
        recovery.bytes_removed = file_len - block.end();
        return Ok(recovery);
    }
    match locate(file, end, file_len) {
        Probe::Valid(found) => {
            // The last flush was torn: keep the trailer, drop what follows the data.
            let json = found.trailer.to_json();
            settle(file, end, &json, file_len, spare.map(|b| b.start), true)?;
            let settled = end + block_len(json.len()) as u64;
            recovery.bytes_removed = file_len.saturating_sub(settled);
            Ok(recovery)
        }
        Probe::Damaged(why) => Err(ErrorKind::Trailer(format!(
            "{why}; without a trailer copy, complete records cannot be told from torn ones"
        ))
        .into()),
        Probe::Absent => {
            let k = (file_len - end) / record_bytes;
            if k > 0 {
                header.set_records(before + k)?;
                write_all_at(file, &header.encode(), 0)?;
                file.sync_data()?;
            }
            recovery.records_after = before + k;
            recovery.trailer = false;
            Ok(recovery)
        }
    }
}

/// The error for bytes after the data end that are no trailer block: how many, and what the
/// first of them look like.
pub(super) fn foreign_trailing(
    file: &File,
    path: &Path,
    end: u64,
    len: u64,
    advice: &'static str,
) -> Error {
    let mut head = vec![0u8; (len - end).min(32) as usize];
    let looks_like = match read_exact_at(file, &mut head, end) {
        Ok(()) => describe_bytes(&head, len - end),
        Err(e) => format!("unreadable: {e}"),
    };
    ErrorKind::ForeignTrailing {
        path: path.to_path_buf(),
        bytes: len - end,
        looks_like,
        advice,
    }
    .into()
}

/// The valid trailer block at the end of a file of `file_len` bytes whose data ends at `end`
/// (the spare copy a writer keeps ahead of its appends), and where a repair's scan past `end`
/// stops: at that block when it lies past `end`, else at the file's end.
pub(crate) fn spare_and_limit(file: &File, end: u64, file_len: u64) -> (Option<Block>, u64) {
    let spare = probe_backward(file, end, file_len).valid();
    let limit = spare
        .as_ref()
        .filter(|b| b.start > end)
        .map_or(file_len, |b| b.start);
    (spare, limit)
}

/// The first bytes of a run of `total`: quoted if printable text, zeros as such, hex otherwise.
fn describe_bytes(head: &[u8], total: u64) -> String {
    let more = if (head.len() as u64) < total {
        "..."
    } else {
        ""
    };
    let printable = |t: &str| {
        t.chars()
            .all(|c| !c.is_control() || c.is_ascii_whitespace())
    };
    match std::str::from_utf8(head) {
        _ if head.iter().all(|&b| b == 0) => format!("zeros{more}"),
        Ok(text) if printable(text) => format!("text {text:?}{more}"),
        _ => format!("bytes {}{more}", hex(head)),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The first forward block (its `at` its own offset) at `end + k * record_bytes`, lying
/// below `limit`: reads the region in windows, checking the tag at each record boundary.
fn scan_forward(
    file: &File,
    end: u64,
    record_bytes: u64,
    limit: u64,
) -> Result<Option<(u64, Block)>> {
    const WINDOW: u64 = 1 << 20;
    let smallest = 2 * TRAILER_FRAME as u64;
    let mut window = Vec::new();
    let mut window_start = 0u64;
    for k in 0u64.. {
        let Some(at) = k
            .checked_mul(record_bytes)
            .and_then(|o| o.checked_add(end))
            .filter(|&o| o.saturating_add(smallest) <= limit)
        else {
            break;
        };
        if at < window_start || at + 8 > window_start + window.len() as u64 {
            let n = if record_bytes >= WINDOW {
                8
            } else {
                WINDOW.min(limit - at)
            };
            window.resize(n as usize, 0);
            read_exact_at(file, &mut window, at)?;
            window_start = at;
        }
        let i = (at - window_start) as usize;
        if window[i..i + 8] == TRAILER_TAG {
            if let Probe::Valid(block) = probe_forward(file, at, limit) {
                if block.is_forward() {
                    return Ok(Some((k, block)));
                }
            }
        }
    }
    Ok(None)
}
