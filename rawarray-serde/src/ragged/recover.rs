//! Repairing a ragged file whose last flush was cut short, and the helpers a writer that
//! reopens a file shares with it.

use super::header::{check_offsets, read_header, RaggedHeader};
use super::writer::{check_header_len, clear_free_slots};
use std::fs::File;

use crate::codec::ChunkWriter;

use crate::error::{Error, ErrorKind, Result};
use crate::fileio::{read_exact_at, write_all_at};
use crate::header::le_u64;
use crate::records::{settle, spare_and_limit, Recovery};
use crate::trailer::{block_len, locate, probe_forward, Block, Probe};

/// [`recover`](crate::recover) of a ragged file whose exclusive lock `file` holds: extends
/// the header over the rows of a flush whose header write was lost, found through the offsets
/// it wrote into the free slots and the forward trailer block it wrote after their values,
/// then leaves the file as [`RaggedWriter::finish`] would.
///
/// A flush writes its rows' offsets into the slots after `offsets[n]`, then their values and
/// a forward block (whose `at` is its own offset) after the data end, then the header. So the
/// rows `n .. n + k` are complete when slots `n + 1 ..= n + k` do not decrease from `m`, slot
/// `n + k` is some `m + j > m`, and a valid forward block starts `j` values after the data
/// end. The largest such `k` is taken, with the empty rows that end the flush (slots equal to
/// slot `n + k`); [`RaggedWriter::open`] zeroes the free slots, so a stale slot equal to
/// `m + j` cannot follow. A flush of empty rows only is not found (its block is where the
/// committed one was): those rows are lost, as any uncommitted row may be.
pub(crate) fn recover_locked(file: &File) -> Result<Recovery> {
    let mut header = read_header(file)?;
    check_header_len(&header)?;
    let file_len = file.metadata()?.len();
    let end = header.data_end();
    if file_len < end {
        return Err(ErrorKind::Truncated {
            expected: header.size,
            found: file_len.saturating_sub(header.encoded_len()),
        }
        .into());
    }
    // The committed rows must be sound before rows are taken back after them: offsets that
    // are not (a damaged file, not a torn flush) are the error readers give, and nothing is
    // written. Reading them costs what the file holds (`rows + 1 <= slots`, checked above).
    let mut offsets = vec![0u8; 8 * (header.rows as usize + 1)];
    read_exact_at(file, &mut offsets, header.offsets_at())?;
    let offsets: Vec<u64> = offsets.chunks_exact(8).map(le_u64).collect();
    check_offsets(&offsets, header.values)?;
    let before = header.rows;
    let mut recovery = Recovery::untouched(before);
    recovery.holds = crate::section::Holds::Rows;
    let (spare, limit) = spare_and_limit(file, end, file_len);
    if header.chunked {
        // As for a chunked record file: the rows of a flush whose header write was lost are
        // not taken back (their values' entries are not committed); what the writer left past
        // the committed size is cleared, and reported by chunk.
        let vh = header.chunked_values_header()?;
        let reclaimed = ChunkWriter::open_in(file, vh, header.values_at())?
            .reclaimed()
            .clone();
        clear_free_slots(file, &header)?;
        recovery.dropped_chunks = reclaimed.chunks;
        recovery.dropped_segments = reclaimed.segments;
        return settle_trailer(file, end, file_len, spare.map(|b| b.start), recovery);
    }
    if let Some((k, block)) = scan_free_slots(file, &header, limit)? {
        let values = header.values + (block.start - end) / header.value_bytes();
        header.size += block.start - end;
        header.values = values;
        header.rows += k;
        header.validate()?;
        write_all_at(file, &header.encode(), 0)?;
        file.sync_data()?;
        if file_len > block.end() {
            file.set_len(block.end())?;
            file.sync_data()?;
        }
        recovery.records_after = header.rows;
        recovery.bytes_removed = file_len - block.end();
        return Ok(recovery);
    }
    settle_trailer(file, end, file_len, spare.map(|b| b.start), recovery)
}

/// Leaves the file as `header | data | trailer` when no rows were taken back: the trailer
/// written back at the data end `end` and what follows it cut (the last flush was torn).
fn settle_trailer(
    file: &File,
    end: u64,
    file_len: u64,
    spare: Option<u64>,
    mut recovery: Recovery,
) -> Result<Recovery> {
    match locate(file, end, file_len) {
        Probe::Valid(found) => {
            // The last flush was torn: keep the trailer, drop what follows the data.
            let json = found.trailer.to_json();
            settle(file, end, &json, file_len, spare, true)?;
            recovery.bytes_removed = file_len.saturating_sub(end + block_len(json.len()) as u64);
            Ok(recovery)
        }
        Probe::Damaged(why) => Err(ErrorKind::Trailer(format!(
            "{why}; without a trailer copy, complete rows cannot be told from torn ones"
        ))
        .into()),
        Probe::Absent if file_len == end => {
            recovery.trailer = false;
            Ok(recovery)
        }
        Probe::Absent => Err(Error::unsupported(format!(
            "{} bytes follow the data but no trailer block: a RaggedWriter always leaves one, \
             so rows cannot be told from other bytes",
            file_len - end
        ))),
    }
}

/// The rows of an uncommitted flush (see [`recover_locked`]): how many, and the forward block
/// after their values. Reads the free slots a window at a time and stops at the first slot
/// that decreases or points past `limit`.
pub(super) fn scan_free_slots(
    file: &File,
    h: &RaggedHeader,
    limit: u64,
) -> Result<Option<(u64, Block)>> {
    const WINDOW: u64 = 4096;
    let vb = h.value_bytes();
    if vb == 0 {
        // Values of no bytes put every row's block at the data end, where the committed one is.
        return Ok(None);
    }
    let end = h.data_end();
    let free = h.slots() - h.rows - 1;
    let first = h.offsets_at() + 8 * (h.rows + 1);
    let mut prev = h.values;
    let mut found: Option<(u64, Block)> = None;
    let mut buf = Vec::new();
    let mut k = 0u64;
    'scan: while k < free {
        let n = (free - k).min(WINDOW);
        buf.resize(8 * n as usize, 0);
        read_exact_at(file, &mut buf, first + 8 * k)?;
        for slot in buf.chunks_exact(8).map(le_u64) {
            let at = (slot - h.values.min(slot))
                .checked_mul(vb)
                .and_then(|b| b.checked_add(end));
            match (slot < prev, at) {
                (true, _) | (_, None) => break 'scan,
                (_, Some(at)) if at > limit => break 'scan,
                _ => {}
            }
            let at = at.expect("checked above");
            k += 1;
            match &found {
                // The empty rows that end the flush.
                Some((_, b)) if slot == prev && b.start == at => found = Some((k, b.clone())),
                _ if slot > h.values && slot != prev => {
                    if let Probe::Valid(b) = probe_forward(file, at, limit) {
                        if b.is_forward() {
                            found = Some((k, b));
                        }
                    }
                }
                _ => {}
            }
            prev = slot;
        }
    }
    Ok(found)
}
